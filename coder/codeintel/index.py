"""The code index of one repository: definitions, references, outlines and the repo map.

`CodeIndex.open(root)` is cheap (it opens the SQLite cache); `refresh()` brings the cache up to date. Queries
answer from the cache; before answering they re-check the files they are about to cite, so an edited file is
never reported with old line numbers, and the repo map always re-checks the whole tree first.
The object is safe to share between a background build thread and query threads (one lock around SQLite).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from coder.base.errors import UsageError
from coder.codeintel.build import RefreshStats, refresh
from coder.codeintel.names import match_expression, reference_lines
from coder.codeintel.outline import outline_source
from coder.codeintel.pool import looks_big
from coder.codeintel.ranking import warm_up
from coder.codeintel.repomap import MAP_VERSION, GraphBuilder, Ranking, load_graph, rank, render
from coder.codeintel.store import ensure_fulltext, open_db, reset_db
from coder.fs.beneath import EscapeError, WorkspaceFS


@dataclass
class Location:
    """One definition or reference hit; the JSON form of `coder find/outline --json` (plus extras)."""

    path: str
    line: int
    end_line: int
    kind: str
    name: str
    signature: str = ""
    score: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "end_line": self.end_line, "kind": self.kind,
                "name": self.name}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_SYMBOL_COLS = "f.path, s.line, s.end_line, s.kind, s.name, s.signature"


class CodeIndex:
    """Facade over the cache of one repository (see module docstring)."""

    def __init__(self, root: Path, conn: sqlite3.Connection, db_path: Path | None, notes: list[str]) -> None:
        self.root = root
        self.fs = WorkspaceFS(root)  # every read of a repository file goes beneath this handle
        self._conn = conn
        self._db_path = db_path
        self.notes = notes
        self._lock = threading.RLock()  # around every SQLite step
        self._refresh_lock = threading.Lock()  # one refresh at a time
        self.last_refresh: RefreshStats | None = None
        self.last_refresh_at = 0.0
        self.building = False
        self.progress: tuple[int, int] = (0, 0)
        self.last_map_reranked = False  # whether the last repo_map had to recompute its ranking (for tests)
        self.fulltext: bool | None = None  # whether the full-text index of names is usable (None: not tried yet)
        self._built_graph: tuple[str, GraphBuilder] | None = None  # (graph fingerprint, graph of the cold build)

    @classmethod
    def open(cls, root: Path, cache_dir: Path | None = None) -> CodeIndex:
        root = Path(root).resolve()
        if not root.is_dir():
            raise UsageError(f"{root} is not a directory")
        conn, path, notes = open_db(root, cache_dir)
        return cls(root, conn, path, notes)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        self.fs.close()

    # -- building -----------------------------------------------------------------------------------------
    def refresh(self, *, workers: int | None = None, progress: Callable[[int, int], None] | None = None,
                only: list[str] | None = None) -> RefreshStats:
        """Bring the cache up to date (all files, or only `only`). Corruption is repaired by a rebuild."""

        cold = only is None and self.last_refresh is None and not self._query("SELECT 1 FROM files LIMIT 1")
        builder = GraphBuilder() if cold else None  # the first map's graph, collected as the build goes
        prefetch = cold and looks_big(self.root)  # a cold build of a big checkout: a map usually follows

        def track(done: int, total: int) -> None:
            nonlocal prefetch
            if prefetch:  # the first batch is in and the workers are busy: import what the first map will want

                warm_up()
                prefetch = False
            self.progress = (done, total)
            if progress is not None:
                progress(done, total)

        with self._refresh_lock:
            self.building = only is None
            try:
                try:
                    stats = refresh(self._conn, self.root, workers=workers, only=only, progress=track,
                                    lock=self._lock, observe=builder.add_results if builder else None)
                except sqlite3.DatabaseError as exc:
                    builder = None
                    with self._lock:
                        self.notes.append(f"index cache was corrupt ({exc}); rebuilt it")
                        self._conn = reset_db(self._conn, self._db_path)
                    stats = refresh(self._conn, self.root, workers=workers, progress=track, lock=self._lock)
            finally:
                self.building = False
        if only is None:
            self.last_refresh, self.last_refresh_at = stats, time.monotonic()
        if builder is not None:
            self._built_graph = (self.graph_fingerprint(), builder)
        return stats

    def refresh_if_older(self, seconds: float) -> RefreshStats | None:
        if time.monotonic() - self.last_refresh_at >= seconds or self.last_refresh is None:
            return self.refresh()
        return None

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as exc:
                self.notes.append(f"index cache was corrupt ({exc}); rebuilt it")
                self._conn = reset_db(self._conn, self._db_path)
                refresh(self._conn, self.root)
                return self._conn.execute(sql, params).fetchall()

    def _recheck(self, paths: set[str]) -> bool:
        """Re-index the given files if they changed on disk since they were indexed; True if any did."""
        if not paths or self.building:
            return False  # during a cold build the builder will reach these files itself
        return self.refresh(only=sorted(paths)).changed

    # -- queries ------------------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        rows = self._query("SELECT status, lang, count(*) FROM files GROUP BY status, lang ORDER BY status, lang")
        by_lang: dict[str, int] = {}
        skipped: dict[str, int] = {}
        for status, lang, count in rows:
            if status == "ok":
                by_lang[lang] = by_lang.get(lang, 0) + count
            else:
                skipped[status] = skipped.get(status, 0) + count
        nsym = self._query("SELECT count(*) FROM symbols")[0][0]
        if self.last_refresh is not None:
            for reason, count in self.last_refresh.skipped.items():
                skipped.setdefault(reason, count)
        return {"root": str(self.root), "files": sum(by_lang.values()), "languages": by_lang, "symbols": nsym,
                "skipped": skipped, "cache": str(self._db_path or ":memory:"),
                "notes": list(self.notes)}

    def _definitions(self, name: str) -> list[Location]:
        parts = [p for p in name.replace("::", ".").replace("#", ".").split(".") if p]
        if not parts:
            return []
        short = parts[-1]
        if len(parts) == 1:
            rows = self._query(f"SELECT {_SYMBOL_COLS} FROM symbols s JOIN files f ON f.id = s.file_id "
                               "WHERE s.short = ? ORDER BY f.path, s.line", (short,))
        else:
            qual = ".".join(parts)
            rows = self._query(f"SELECT {_SYMBOL_COLS} FROM symbols s JOIN files f ON f.id = s.file_id "
                               "WHERE s.short = ? AND (s.name = ? OR s.name LIKE ? ESCAPE '\\') "
                               "ORDER BY f.path, s.line", (short, qual, "%." + _like_escape(qual)))
        return [Location(*r) for r in rows]

    def definitions(self, name: str, *, fuzzy: bool = True, limit: int = 50) -> list[Location]:
        """Exact (`save`), qualified (`Model.save`) or, when nothing matches exactly, fuzzy ranked candidates."""
        hits = self._definitions(name)
        if hits and self._recheck({h.path for h in hits}):
            hits = self._definitions(name)
        if hits or not fuzzy:
            return _rank_definitions(hits)[:limit]
        return self.fuzzy(name, limit=min(limit, 20))

    def fuzzy(self, name: str, limit: int = 20) -> list[Location]:
        parts = [p for p in name.replace("::", ".").split(".") if p]
        if not parts:
            return []
        short, qualifier = parts[-1], ".".join(parts[:-1]).lower()
        key = short.lower()
        rows = self._query(f"SELECT {_SYMBOL_COLS}, s.short FROM symbols s JOIN files f ON f.id = s.file_id "
                           "WHERE s.short LIKE ? ESCAPE '\\' LIMIT 2000", ("%" + _like_escape(key[:3]) + "%",))
        scored: list[Location] = []
        for *cols, s_short in rows:
            low = s_short.lower()
            ratio = difflib.SequenceMatcher(None, key, low).ratio()
            if key in low:
                ratio += 0.5
            if low.startswith(key):
                ratio += 0.25
            if qualifier and qualifier in cols[4].lower():
                ratio += 0.5
            if ratio >= 0.6:
                scored.append(Location(*cols, score=round(ratio, 4)))
        scored.sort(key=lambda loc: (-loc.score, len(loc.name), loc.path, loc.line))
        return scored[:limit]

    def references(self, name: str, *, limit: int = 500) -> list[Location]:
        """Uses of `name` (the last part of a qualified name) outside its definitions, by file and line.

        The index says which files mention the name; their lines come from parsing those files now (see
        names.py), in path order, until `limit` hits."""
        short = name.replace("::", ".").split(".")[-1]
        if self.fulltext is not False:
            with self._lock:
                self.fulltext = ensure_fulltext(self._conn)
        if self.fulltext:
            expression = match_expression(short)
            if expression is None:
                return []
            sql, param = ("SELECT f.path, f.lang FROM names_fts JOIN files f ON f.id = names_fts.rowid "
                          "WHERE names_fts MATCH ? AND f.status = 'ok' ORDER BY f.path"), expression
        else:
            sql, param = ("SELECT f.path, f.lang FROM names n JOIN files f ON f.id = n.rowid "
                          "WHERE instr(n.words, ?) AND f.status = 'ok' ORDER BY f.path"), short
        candidates = self._query(sql, (param,))
        if candidates and self._recheck({path for path, _lang in candidates}):
            candidates = self._query(sql, (param,))
        hits: list[Location] = []
        for path, lang in candidates:
            source = self.fs.read_if_file(path)
            if source is None:
                continue
            hits.extend(Location(path, line, line, "reference", short) for line in reference_lines(source, lang, short))
            if len(hits) >= limit:
                break
        return hits[:limit]

    def outline(self, path: str) -> list[Location]:
        """Definitions of one file (repo-relative or absolute path), re-parsed first if it changed."""
        rel = self.real_relpath(path)
        if self.fs.kind(rel) != "file":
            raise UsageError(f"no such file: {rel}")
        if self.building:  # do not wait for the cold build: parse this one file now

            try:
                data = self.fs.read_file(rel)[0]
            except (OSError, EscapeError) as exc:
                raise UsageError(f"cannot read {rel}: {exc}") from exc
            return [Location(rel, s.line, s.end_line, s.kind, s.name, s.signature) for s in outline_source(rel, data)]
        self.refresh(only=[rel])
        rows = self._query(f"SELECT {_SYMBOL_COLS} FROM symbols s JOIN files f ON f.id = s.file_id "
                           "WHERE f.path = ? ORDER BY s.line, s.col, s.name", (rel,))
        return [Location(*r) for r in rows]

    def relpath(self, path: str | Path) -> str:
        """Repository-relative POSIX path of `path` (absolute, relative to the cwd, or already relative), as
        named: `..` folded, symlinks not followed (see `real_relpath`)."""
        p = Path(path)
        if not p.is_absolute():
            if self._exists(os.path.normpath(p)) or not (Path.cwd() / p).exists():
                p = self.root / p
            else:
                p = Path.cwd() / p
        rel = os.path.relpath(os.path.normpath(p), self.root)
        if rel == ".." or rel.startswith("../") or os.path.isabs(rel):
            raise UsageError(f"{path} is outside the repository {self.root}")
        return Path(rel).as_posix()

    def _exists(self, rel: str) -> bool:
        try:
            return self.fs.kind(rel) is not None
        except EscapeError:  # `..` above the root, or under a symlinked folder
            return False

    def real_relpath(self, path: str | Path) -> str:
        """The file `path` really names beneath the workspace: symlinks that stay inside followed, UsageError
        for one that leaves (a planted `x.py -> ~/.ssh/id_rsa` is not read, whatever the model asks)."""
        rel = self.relpath(path)
        try:
            return self.fs.resolve_real(rel) or "."
        except EscapeError as exc:
            raise UsageError(f"{path} is outside the repository: {exc}") from None
        except OSError as exc:
            raise UsageError(f"{path}: {exc.strerror or exc}") from None

    def fingerprint(self) -> str:
        """A digest of the indexed state (paths and content hashes), independent of mtimes and processes."""
        digest = hashlib.sha256()
        for path, h, status in self._query("SELECT path, hash, status FROM files ORDER BY path"):
            digest.update(f"{path}\0{h}\0{status}\n".encode("utf-8", "surrogateescape"))
        return digest.hexdigest()

    def graph_fingerprint(self) -> str:
        """A digest of the reference graph only (what each file defines and uses), not of lines or bodies."""
        digest = hashlib.sha256()
        for path, ghash in self._query("SELECT path, ghash FROM files WHERE status = 'ok' ORDER BY path"):
            digest.update(f"{path}\0{ghash}\n".encode("utf-8", "surrogateescape"))
        return digest.hexdigest()

    def repo_map(self, token_budget: int = 1024, focus_files: list[str] | tuple[str, ...] = (),
                 focus_names: list[str] | tuple[str, ...] = (), *, refresh_first: bool = True) -> str:
        """The ranked map of the repository, never over `token_budget` (estimated conservatively).

        Two caches, both in SQLite so a new process reuses them: the text, keyed by the content of every file,
        and the ranking, keyed by the reference graph (so an edit that keeps the graph re-renders, never re-ranks)."""
        if refresh_first:
            self.refresh()
        focus_files = sorted({self.relpath(f) for f in focus_files})
        focus_names = sorted(set(focus_names))
        inputs = (focus_files, focus_names, MAP_VERSION)

        def key(kind: str, state: str, *extra: object) -> str:
            return kind + hashlib.sha256(repr((state, *extra, inputs)).encode()).hexdigest()

        text_key = key("map:", self.fingerprint(), int(token_budget))
        row = self._query("SELECT text FROM maps WHERE key = ?", (text_key,))
        if row:
            return row[0][0]
        # the ranking: looked up by the files' graph hashes (cheap), then by the graph itself (a new comment
        # changes a file's names but rarely the graph), and only computed when both miss
        state = self.graph_fingerprint()
        file_key = key("rank:", state)
        built, self._built_graph = self._built_graph, None  # used once, and only for the state it was made from
        with self._lock:
            row = self._conn.execute("SELECT text FROM maps WHERE key = ?", (file_key,)).fetchone()
            graph_key, graph = None, None
            if row is None:
                graph = built[1].finish() if built is not None and built[0] == state else None
                graph = graph or load_graph(self._conn)
                graph_key = key("graph:", graph.digest())
                row = self._conn.execute("SELECT text FROM maps WHERE key = ?", (graph_key,)).fetchone()
            if row:
                ranking = Ranking.from_json(row[0])
            else:
                assert graph is not None  # no stored ranking: the graph was loaded above
                ranking = rank(graph, focus_files, focus_names)
            text = render(self._conn, ranking, int(token_budget))
            self.last_map_reranked = row is None
            try:
                now = time.time_ns()
                for cache_key in (file_key, graph_key) if graph_key else ():
                    self._conn.execute("INSERT OR REPLACE INTO maps VALUES(?,?,?)", (cache_key, ranking.to_json(), now))
                self._conn.execute("INSERT OR REPLACE INTO maps VALUES(?,?,?)", (text_key, text, now))
                self._conn.execute("DELETE FROM maps WHERE key NOT IN "
                                   "(SELECT key FROM maps ORDER BY used DESC LIMIT 48)")
            except sqlite3.Error:
                pass
        return text


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_KIND_RANK = {"class": 0, "struct": 0, "interface": 0, "trait": 0, "enum": 0, "function": 1, "method": 1,
              "constructor": 1, "type": 2, "impl": 3, "module": 3, "namespace": 3, "macro": 2, "constant": 4,
              "variable": 5, "prototype": 6}


def _rank_definitions(hits: list[Location]) -> list[Location]:
    """Real definitions before prototypes and impl blocks; tests and examples after library code."""

    def key(loc: Location) -> tuple:
        testy = any(part in loc.path for part in ("test", "example", "docs/"))
        return (_KIND_RANK.get(loc.kind, 7), testy, loc.path, loc.line)

    return sorted(hits, key=key)
