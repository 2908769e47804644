"""The repo map: the files and definitions that matter most, ranked, inside a hard token budget.

Ranking: a personalized PageRank over the file graph where file A links to file B when A uses a name B
defines (weighted by how often, damped for names defined in many places, boosted for names the conversation
mentions). Personalization starts the random walk from the files and names of the conversation.

Determinism matters more than elegance here: the map sits in the cached prompt prefix, so the same repository
state must give the same bytes in every process. Every iteration order below comes from an explicit sort or an
`ORDER BY`, never from a set or a hash seed, and scores are rounded before they are compared.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass
from operator import mul, sub

#: conservative characters per token (real code tokenizes at ~3.5-4 chars per token for Claude and GPT models)
#: bump when the ranking or the rendering changes (cached maps are keyed by it)
MAP_VERSION = "7"
CHARS_PER_TOKEN = 3.0
DAMPING = 0.85
ITERATIONS = 30
#: a name defined in more files than this says nothing about which one is meant (`get`, `__init__`)
MAX_DEFINERS = 12
MAX_SIGNATURE = 110
#: ranked symbols kept per ranking: more than the biggest budget (8192 tokens) can show
MAX_RANKED = 3200
#: kinds that are worth a line in the map
MAP_KINDS = ("class", "struct", "interface", "trait", "enum", "function", "method", "constructor", "type",
             "module", "namespace", "macro", "constant", "impl")


#: containers (an `impl` block, a module) mostly appear as the parents of chosen methods, not on their own
_KIND_WEIGHT = {"impl": 0.1, "module": 0.3, "namespace": 0.3, "macro": 0.5, "constant": 0.5}
_FAMILY = {"typescript": "javascript", "tsx": "javascript", "cpp": "c"}


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _pagerank(n: int, edges: list[tuple[int, int, float]], personal: list[float]) -> list[float]:
    """Power iteration over in-edge lists; `sum(map(mul, ...))` keeps the inner loop in C."""
    out_weight = [0.0] * n
    for src, _dst, w in edges:
        out_weight[src] += w
    in_src: list[list[int]] = [[] for _ in range(n)]
    in_w: list[list[float]] = [[] for _ in range(n)]
    for src, dst, w in edges:
        in_src[dst].append(src)
        in_w[dst].append(w / out_weight[src])
    dangling_nodes = [i for i in range(n) if out_weight[i] == 0.0]
    total = sum(personal)
    p = [x / total for x in personal] if total > 0 else [1.0 / n] * n
    rank = list(p)
    for _ in range(ITERATIONS):
        get = rank.__getitem__
        dangling = sum(map(get, dangling_nodes))
        new = [(1 - DAMPING) * p[i] + DAMPING * (sum(map(mul, map(get, in_src[i]), in_w[i])) + dangling * p[i])
               for i in range(n)]
        delta = sum(map(abs, map(sub, new, rank)))
        rank = new
        if delta < n * 1e-6:  # the tolerance networkx uses (and Aider with it)
            break
    return rank


def _name_weight(name: str, definer_count: int, focus: set[str]) -> float:
    """How much a use of `name` says about a link: long compound names are specific, `x` or `get` are not."""
    weight = 1.0 / definer_count
    if name in focus:
        weight *= 10.0
    compound = "_" in name.strip("_") or (any(c.isupper() for c in name[1:]) and any(c.islower() for c in name))
    if compound and len(name) >= 8:
        weight *= 10.0
    if name.startswith("_") or len(name) < 3:
        weight *= 0.1
    if definer_count > 5:
        weight *= 0.1
    return weight


@dataclass
class Ranking:
    """The ranked symbols of one reference graph, independent of line numbers and of the token budget.

    Symbols are identified by (path, qualified name, kind, occurrence), not by line, so an edit that keeps the
    graph (a changed body, a moved function, a comment) keeps the ranking, and only the rendering is redone from
    the current lines: the map stays exact without recomputing PageRank, and stays stable in the prompt prefix."""

    files: dict[str, float]
    symbols: list[tuple[str, str, str, int]]

    def to_json(self) -> str:
        return json.dumps({"files": self.files, "symbols": self.symbols}, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Ranking:
        data = json.loads(text)
        return cls(files=data["files"], symbols=[tuple(s) for s in data["symbols"]])


def build_map(conn: sqlite3.Connection, token_budget: int, focus_files: list[str], focus_names: list[str]) -> str:
    """Rank and render in one go (the index caches both steps separately)."""
    return render(conn, rank(conn, focus_files, focus_names), token_budget)


def rank(conn: sqlite3.Connection, focus_files: list[str], focus_names: list[str]) -> Ranking:
    files = conn.execute("SELECT id, path, lang FROM files WHERE status = 'ok' ORDER BY path").fetchall()
    if not files:
        return Ranking({}, [])
    index_of = {fid: i for i, (fid, _path, _lang) in enumerate(files)}
    paths = [path for _fid, path, _lang in files]
    family = [_FAMILY.get(lang, lang) for _fid, _path, lang in files]
    n = len(files)

    definers: dict[str, list[int]] = {}
    symbols: list[tuple[int, str, str, str, int]] = []  # (file idx, short, name, kind, occurrence)
    seen: dict[tuple[int, str, str], int] = {}
    placeholders = ",".join("?" * len(MAP_KINDS))
    for fid, short, name, kind in conn.execute(
            f"SELECT s.file_id, s.short, s.name, s.kind FROM symbols s "
            f"JOIN files f ON f.id = s.file_id WHERE f.status = 'ok' AND s.kind IN ({placeholders}) "
            f"ORDER BY f.path, s.line, s.col, s.name", MAP_KINDS):
        i = index_of.get(fid)
        if i is None:
            continue
        occurrence = seen.get((i, name, kind), 0)
        seen[(i, name, kind)] = occurrence + 1
        symbols.append((i, short, name, kind, occurrence))
        lst = definers.setdefault(short, [])
        if not lst or lst[-1] != i:
            lst.append(i)

    focus = set(focus_names)
    # only names with few definers can link files; filter them in SQL so Python sees a fraction of the rows
    rows = conn.execute(
        "SELECT r.file_id, r.name FROM refs r JOIN files f ON f.id = r.file_id "
        "WHERE f.status = 'ok' AND r.name IN (SELECT short FROM symbols WHERE kind IN "
        f"({placeholders}) GROUP BY short HAVING count(DISTINCT file_id) <= ?) ORDER BY f.path, r.name",
        (*MAP_KINDS, MAX_DEFINERS)).fetchall()
    # group the uses by name (rows come in path order, so each name's users stay in path order); a name's weight
    # and targets are then looked up once, not once per use. Names are visited in sorted order, so every edge and
    # symbol score adds its terms in the same order as a row-by-row pass: the floats, and the map, are unchanged
    users: dict[str, list[int]] = {}
    for fid, name in rows:
        src = index_of.get(fid)
        if src is not None:
            users.setdefault(name, []).append(src)
    log_n = math.log(n + 1)
    linked: list[tuple[str, float, list[int], list[int]]] = []  # (name, weight, users, definers)
    for name in sorted(users):
        targets = definers.get(name)
        if not targets or len(targets) > MAX_DEFINERS:
            continue
        srcs = users[name]
        # presence, not counts: one more call of a name already used does not move the map;
        # document frequency: a name used everywhere (`django`, `value`) is noise
        idf = math.log((n + 1) / len(srcs)) / log_n
        weight = _name_weight(name, len(targets), focus) * idf
        linked.append((name, weight, srcs, targets))
    edge_w: dict[tuple[int, int], float] = {}
    for _name, weight, srcs, targets in linked:
        for src in srcs:
            fam = family[src]
            for dst in targets:
                if dst != src and family[dst] == fam:  # a JS `render` is not a Python `render`
                    edge_w[(src, dst)] = edge_w.get((src, dst), 0.0) + weight
    edges = [(s, d, w) for (s, d), w in sorted(edge_w.items())]

    focus_set = set(focus_files)
    focus_idx = {i for i, p in enumerate(paths) if p in focus_set}
    personal = [0.0] * n
    for i in sorted(focus_idx):
        personal[i] += 1.0
    for name in sorted(focus):
        for i in definers.get(name, []):
            personal[i] += 1.0
    if not any(personal):
        personal = [1.0] * n
    file_rank = _pagerank(n, edges, personal)

    out_weight = [0.0] * n
    for s, _d, w in edges:
        out_weight[s] += w
    sym_score: dict[tuple[int, str], float] = {}
    for name, weight, srcs, targets in linked:
        share = [(src, family[src], file_rank[src] * weight / out_weight[src] if out_weight[src] else 0.0)
                 for src in srcs]
        for dst in targets:
            fam, total, hit = family[dst], 0.0, False
            for src, src_fam, value in share:
                if src != dst and src_fam == fam:
                    total += value
                    hit = True
            if hit:
                sym_score[(dst, name)] = total
    ranked = []
    for i, short, name, kind, occurrence in symbols:
        depth_penalty = 1.0 / (1 + name.count("."))
        score = (sym_score.get((i, short), 0.0) + file_rank[i] * 0.05 * depth_penalty) * _KIND_WEIGHT.get(kind, 1.0)
        if short in focus:
            score *= 10.0
        if i in focus_idx:
            score += file_rank[i]
        ranked.append((-round(score, 12), paths[i], name, kind, occurrence))
    ranked.sort()
    top = ranked[:MAX_RANKED]
    position = {p: i for i, p in enumerate(paths)}
    shown = sorted({position[r[1]] for r in top})
    return Ranking(files={paths[i]: round(file_rank[i], 12) for i in shown},
                   symbols=[(path, name, kind, occurrence) for _score, path, name, kind, occurrence in top])


def render(conn: sqlite3.Connection, ranking: Ranking, token_budget: int) -> str:
    """The map text from a ranking and the CURRENT lines and signatures, within `token_budget`."""
    if token_budget <= 0 or not ranking.symbols:
        return ""
    # every symbol line costs at least 8 characters: no need to look at symbols that cannot fit
    cap = min(len(ranking.symbols), int(token_budget * CHARS_PER_TOKEN / 8) + 1)
    chosen = ranking.symbols[:cap]
    wanted_files = sorted({path for path, _n, _k, _o in chosen})
    current: dict[tuple[str, str, str, int], tuple[int, str]] = {}  # identity -> (line, signature)
    rows_by_file: dict[str, list[tuple[str, str, int, str]]] = {}
    placeholders = ",".join("?" * len(MAP_KINDS))
    for start in range(0, len(wanted_files), 500):
        chunk = wanted_files[start:start + 500]
        for path, name, kind, line, sig in conn.execute(
                f"SELECT f.path, s.name, s.kind, s.line, s.signature FROM symbols s JOIN files f ON f.id = s.file_id "
                f"WHERE f.path IN ({','.join('?' * len(chunk))}) AND s.kind IN ({placeholders}) "
                f"ORDER BY f.path, s.line, s.col, s.name", (*chunk, *MAP_KINDS)):
            rows_by_file.setdefault(path, []).append((name, kind, line, sig))
    parents: dict[tuple[str, str, str, int], tuple[str, str, str, int]] = {}
    for path, rows in rows_by_file.items():
        seen: dict[tuple[str, str], int] = {}
        by_qualified: dict[str, tuple[str, str, str, int]] = {}
        idents = []
        for name, kind, line, sig in rows:
            occurrence = seen.get((name, kind), 0)
            seen[(name, kind)] = occurrence + 1
            ident = (path, name, kind, occurrence)
            current[ident] = (line, sig)
            by_qualified[name] = ident
            idents.append(ident)
        for ident in idents:
            if "." in ident[1]:
                parent = by_qualified.get(ident[1].rsplit(".", 1)[0])
                if parent is not None and parent != ident:
                    parents[ident] = parent

    def text(count: int) -> str:
        by_file: dict[str, set[tuple[str, str, str, int]]] = {}
        for ident in chosen[:count]:
            if ident in current:
                by_file.setdefault(ident[0], set()).add(ident)
        parts = []
        for path in sorted(by_file, key=lambda p: (-ranking.files.get(p, 0.0), p)):
            parts.append(path + ":")
            wanted = by_file[path]
            for ident in list(wanted):  # show the enclosing class of a method, so `save` reads as `Model.save`
                parent = parents.get(ident)
                while parent is not None and parent not in wanted:
                    wanted.add(parent)
                    parent = parents.get(parent)
            for ident in sorted(wanted, key=lambda it: (current[it][0], it)):
                line, sig = current[ident]
                if len(sig) > MAX_SIGNATURE:
                    sig = sig[:MAX_SIGNATURE - 3] + "..."
                parts.append(f"{line:>6} {'  ' * ident[1].count('.')}{sig}")
        return "\n".join(parts) + "\n" if parts else ""

    lo, hi = 0, cap
    while lo < hi:  # the largest count whose rendering fits
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text(mid)) <= token_budget:
            lo = mid
        else:
            hi = mid - 1
    return text(lo)
