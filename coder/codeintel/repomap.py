"""The repo map: the files and definitions that matter most, ranked, inside a hard token budget.

Ranking (coder.codeintel.ranking): a personalized PageRank over the file graph where file A links to file B
when A mentions a name B defines, started from the files and names of the conversation.

Determinism matters more than elegance here: the map sits in the cached prompt prefix, so the same repository
state must give the same bytes in every process. Every iteration order below comes from an explicit sort or an
`ORDER BY`, never from a set or a hash seed, and scores are rounded before they are compared.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass

from coder.codeintel.ranking import Graph, rank_graph

#: conservative characters per token (real code tokenizes at ~3.5-4 chars per token for Claude and GPT models)
#: bump when the ranking or the rendering changes (cached maps are keyed by it)
MAP_VERSION = "8"
CHARS_PER_TOKEN = 3.0
#: a name defined in more files than this says nothing about which one is meant (`get`, `__init__`)
MAX_DEFINERS = 12
MAX_SIGNATURE = 110
#: kinds that are worth a line in the map
MAP_KINDS = ("class", "struct", "interface", "trait", "enum", "function", "method", "constructor", "type",
             "module", "namespace", "macro", "constant", "impl")

_FAMILY = {"typescript": "javascript", "tsx": "javascript", "cpp": "c"}
_MAP_KIND_SET = frozenset(MAP_KINDS)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


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
    return render(conn, rank(load_graph(conn), focus_files, focus_names), token_budget)


#: (path, lang, definitions hash, map-worthy definitions as (short, name, kind, occurrence), names it mentions)
FileNode = tuple[str, str, str, list[tuple[str, str, str, int]], str]


def load_graph(conn: sqlite3.Connection) -> Graph:
    """The graph of the indexed state, read back from SQLite."""
    files = conn.execute("SELECT id, path, lang, shash FROM files WHERE status = 'ok' ORDER BY path").fetchall()
    defs: dict[int, list[tuple[str, str, str, int]]] = {fid: [] for fid, *_rest in files}
    placeholders = ",".join("?" * len(MAP_KINDS))
    for fid, short, name, kind, occurrence in conn.execute(
            f"SELECT file_id, short, name, kind, occ FROM symbols WHERE kind IN ({placeholders}) "
            f"ORDER BY file_id, line, col, name", MAP_KINDS):
        where = defs.get(fid)
        if where is not None:
            where.append((short, name, kind, occurrence))
    words = dict(conn.execute("SELECT rowid, words FROM names"))
    return assemble_graph([(path, lang, shash, defs[fid], words.get(fid, "")) for fid, path, lang, shash in files])


class GraphBuilder:
    """The graph of a cold build, collected from the workers' results as they arrive, so the first map does not
    read back the 40k definitions just written. The same `assemble_graph` as `load_graph`: the same Graph."""

    #: beyond this many files the collected data would weigh more than reading it back costs
    MAX_FILES = 20_000

    def __init__(self) -> None:
        self.files: dict[str, FileNode] | None = {}

    def add_results(self, results: list[tuple]) -> None:
        """Parsed results as `build.parse_file` makes them (see build.Parsed)."""
        if self.files is None:
            return
        for res in results:
            if res[0] != "=" and res[5] == "ok":
                path, lang, symbols, names, shash = res[0], res[4], res[7], res[8], res[10]
                self.files[path] = (path, lang, shash, [(sym[2], sym[1], sym[0], sym[8]) for sym in symbols
                                                        if sym[0] in _MAP_KIND_SET], names)
        if len(self.files) > self.MAX_FILES:
            self.files = None

    def finish(self) -> Graph | None:
        files, self.files = self.files, None
        return assemble_graph([files[path] for path in sorted(files)]) if files is not None else None


def assemble_graph(files: list[FileNode]) -> Graph:
    """The Graph of `files` (in path order, each file's definitions in source order)."""
    symbols: list[tuple[int, str, str, str, int]] = []
    definers: dict[str, list[int]] = {}
    for i, (_path, _lang, _shash, defs, _words) in enumerate(files):
        symbols += [(i, short, name, kind, occurrence) for short, name, kind, occurrence in defs]
        for short in {d[0] for d in defs}:
            definers.setdefault(short, []).append(i)
    linkable = {name for name, where in definers.items() if len(where) <= MAX_DEFINERS}
    users: dict[str, list[int]] = {}
    for i, (*_rest, words) in enumerate(files):
        for name in linkable.intersection(words.split(" ")):
            users.setdefault(name, []).append(i)
    return Graph(paths=[f[0] for f in files], family=[_FAMILY.get(f[1], f[1]) for f in files], symbols=symbols,
                 definers=definers, users=users, defined=[f[2] for f in files])


def rank(graph: Graph, focus_files: list[str], focus_names: list[str]) -> Ranking:
    """Rank the graph's definitions for this conversation (see coder.codeintel.ranking)."""
    files, symbols = rank_graph(graph, focus_files, focus_names)
    return Ranking(files=files, symbols=symbols)


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
