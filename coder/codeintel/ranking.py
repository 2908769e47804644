"""The repo map's ranking: a personalized PageRank over the file graph, then a score per definition.

File A links to file B for every name A mentions and B defines (names defined in more than MAX_DEFINERS files
are left out by the graph). A link's weight says how specific the name is (`_name_weight`) times its inverse
document frequency; links between languages of different families do not count. The random walk starts from
the files and names of the conversation (or uniformly). A definition then scores by the rank its users pass
to it through its name, plus a little of its own file's rank.

Why numpy: a Django-sized graph has ~140k links and ~90k name uses, and the pure-Python loops over them cost
0.3 s of a cold map (and grow with the repository); as arrays they take a few milliseconds plus numpy's
import. Every sum runs in a fixed order (`bincount` adds in input order, the input sorted by name, user and
definer), so the same graph gives the same bytes in every process.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import sys
import threading
from dataclasses import dataclass

DAMPING = 0.85
ITERATIONS = 30
#: ranked symbols kept per ranking: more than the biggest budget (8192 tokens) can show
MAX_RANKED = 3200

#: containers (an `impl` block, a module) mostly appear as the parents of chosen methods, not on their own
_KIND_WEIGHT = {"impl": 0.1, "module": 0.3, "namespace": 0.3, "macro": 0.5, "constant": 0.5}


@dataclass
class Graph:
    """The reference graph the ranking is computed from: files, their map-worthy definitions, and per name the
    files that mention it (names with at most repomap.MAX_DEFINERS definers; others cannot link files)."""

    paths: list[str]
    family: list[str]
    symbols: list[tuple[int, str, str, str, int]]  # (file index, short, name, kind, occurrence)
    definers: dict[str, list[int]]
    users: dict[str, list[int]]
    defined: list[str]  # per file: the hash of its definitions (symbols in order)

    def digest(self) -> str:
        """Equal for equal graphs, whatever else changed in the files (a comment's words, a body, lines)."""
        files = "\0".join(f"{p}\1{f}\1{d}" for p, f, d in zip(self.paths, self.family, self.defined, strict=True))
        uses = repr([(name, self.users[name]) for name in sorted(self.users)])
        return hashlib.sha256(f"{files}\0{uses}".encode("utf-8", "surrogatepass")).hexdigest()


def warm_up() -> None:
    """Import numpy on a background thread. A cold build of a big checkout is followed by a map; the import
    (~60 ms) then overlaps the parse instead of delaying the first map."""
    if "numpy" not in sys.modules:
        threading.Thread(target=importlib.import_module, args=("numpy",), name="numpy-import", daemon=True).start()


def name_weight(name: str, definer_count: int, focus: set[str]) -> float:
    """How much a use of `name` says about a link: long compound names are specific, `x` or `get` are not."""
    weight = 1.0 / definer_count
    if name in focus:
        weight *= 10.0
    tail = name[1:]
    compound = "_" in name.strip("_") or (tail != tail.lower() and name != name.upper())  # snake_case, camelCase
    if compound and len(name) >= 8:
        weight *= 10.0
    if name.startswith("_") or len(name) < 3:
        weight *= 0.1
    if definer_count > 5:
        weight *= 0.1
    return weight


def pagerank(n: int, src, dst, weight, personal):  # noqa: ANN001, ANN201 - numpy arrays, typed loosely on purpose
    """Power iteration with dangling nodes sent back to the personalization (networkx's definition)."""
    # start-up time: numpy loads only when this runs
    import numpy as np

    out_weight = np.bincount(src, weights=weight, minlength=n)
    norm = weight / out_weight[src] if len(src) else weight
    dangling = out_weight == 0.0
    total = personal.sum()
    p = personal / total if total > 0 else np.full(n, 1.0 / n)
    rank = p.copy()
    for _ in range(ITERATIONS):
        spread = np.bincount(dst, weights=rank[src] * norm, minlength=n)
        new = (1 - DAMPING) * p + DAMPING * (spread + rank[dangling].sum() * p)
        delta = np.abs(new - rank).sum()
        rank = new
        if delta < n * 1e-6:  # the tolerance networkx uses (and Aider with it)
            break
    return rank, out_weight


def rank_graph(graph: Graph, focus_files: list[str], focus_names: list[str]) \
        -> tuple[dict[str, float], list[tuple[str, str, str, int]]]:
    """(rank of the files that have a ranked symbol, the top MAX_RANKED symbols as (path, name, kind, occurrence))."""
    # start-up time: numpy loads only when this runs
    import numpy as np

    paths, users, definers = graph.paths, graph.users, graph.definers
    n = len(paths)
    if not n:
        return {}, []
    focus = set(focus_names)
    family_ids: dict[str, int] = {}
    family = np.array([family_ids.setdefault(f, len(family_ids)) for f in graph.family], dtype=np.int64)

    names = sorted(users)
    name_id = {name: i for i, name in enumerate(names)}
    log_n = math.log(n + 1)
    # presence, not counts: one more call of a name already used does not move the map;
    # document frequency: a name mentioned everywhere (`django`, `value`) is noise
    name_w = np.array([name_weight(name, len(definers[name]), focus) * math.log((n + 1) / len(users[name])) / log_n
                       for name in names])
    use_count = np.array([len(users[name]) for name in names], dtype=np.int64)
    def_count = np.array([len(definers[name]) for name in names], dtype=np.int64)
    use_src = np.array([src for name in names for src in users[name]], dtype=np.int64)
    use_name = np.repeat(np.arange(len(names), dtype=np.int64), use_count)
    def_flat = np.array([dst for name in names for dst in definers[name]], dtype=np.int64)
    def_start = np.cumsum(def_count) - def_count

    # one row per (use, definer of the used name), in name, user, definer order
    per_use = def_count[use_name]
    link_src = np.repeat(use_src, per_use)
    link_name = np.repeat(use_name, per_use)
    offset = np.arange(per_use.sum(), dtype=np.int64) - np.repeat(np.cumsum(per_use) - per_use, per_use)
    link_dst = def_flat[np.repeat(def_start[use_name], per_use) + offset]
    keep = (link_src != link_dst) & (family[link_src] == family[link_dst])  # a JS `render` is not a Python one
    link_src, link_dst, link_name = link_src[keep], link_dst[keep], link_name[keep]
    link_w = name_w[link_name]

    edge_keys, edge_of_link = np.unique(link_src * n + link_dst, return_inverse=True)
    edge_w = np.bincount(edge_of_link, weights=link_w, minlength=len(edge_keys))
    personal = np.zeros(n)
    focus_set = set(focus_files)
    focus_idx = [i for i, p in enumerate(paths) if p in focus_set]
    personal[focus_idx] += 1.0
    for name in sorted(focus):
        for i in definers.get(name, []):
            personal[i] += 1.0
    if not personal.any():
        personal[:] = 1.0
    file_rank, out_weight = pagerank(n, edge_keys // n, edge_keys % n, edge_w, personal)

    # what each definition's name receives from the files that mention it
    passed = file_rank[link_src] * link_w / out_weight[link_src]  # a link's source has out-weight > 0
    score_keys, score_of_link = np.unique(link_dst * len(names) + link_name, return_inverse=True)
    received = np.bincount(score_of_link, weights=passed, minlength=len(score_keys))

    symbols = graph.symbols
    sym_file = np.array([s[0] for s in symbols], dtype=np.int64)
    sym_name = np.array([name_id.get(s[1], -1) for s in symbols], dtype=np.int64)
    base = np.zeros(len(symbols))
    if len(score_keys):
        wanted = sym_file * max(len(names), 1) + sym_name
        at = np.minimum(np.searchsorted(score_keys, wanted), len(score_keys) - 1)
        base = np.where((sym_name >= 0) & (score_keys[at] == wanted), received[at], 0.0)
    depth_penalty = np.array([1.0 / (1 + s[2].count(".")) for s in symbols])
    kind_w = np.array([_KIND_WEIGHT.get(s[3], 1.0) for s in symbols])
    score = (base + file_rank[sym_file] * 0.05 * depth_penalty) * kind_w
    score *= np.array([10.0 if s[1] in focus else 1.0 for s in symbols])
    in_focus = np.zeros(n, dtype=bool)
    in_focus[focus_idx] = True
    score += np.where(in_focus[sym_file], file_rank[sym_file], 0.0)
    score = np.round(score, 12)

    # the top MAX_RANKED by score, ties broken by path, name, kind, occurrence: sort only the candidates
    if len(symbols) > MAX_RANKED:
        cut = np.partition(score, len(symbols) - MAX_RANKED)[len(symbols) - MAX_RANKED]
        candidates = np.nonzero(score >= cut)[0].tolist()
    else:
        candidates = list(range(len(symbols)))
    scores = score.tolist()
    ranked = sorted((-scores[k], paths[symbols[k][0]], symbols[k][2], symbols[k][3], symbols[k][4]) for k in candidates)
    top = ranked[:MAX_RANKED]
    ranks = file_rank.tolist()
    position = {p: i for i, p in enumerate(paths)}
    shown = sorted({position[r[1]] for r in top})
    return ({paths[i]: round(ranks[i], 12) for i in shown},
            [(path, name, kind, occurrence) for _score, path, name, kind, occurrence in top])
