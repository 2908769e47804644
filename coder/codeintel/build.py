"""Bringing the cache up to date with the working tree: list, stat, parse what changed, write.

Cheap checks first: a file whose size and mtime match its row is not read at all; one whose content hash
matches is not parsed again (a `git checkout` back and forth touches mtimes, not contents). A cold build
parses in worker processes (tree-sitter holds the GIL while it parses, so threads would not help; see pool.py),
and writes each batch as it arrives so queries see a growing index rather than waiting for the end.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat as stat_mod
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.codeintel.files import MAX_FILE_BYTES, classify_content, fast_language, list_files
from coder.codeintel.names import file_names
from coder.codeintel.outline import extract
from coder.codeintel.pool import BATCH_FILES, ParsePool, looks_big
from coder.codeintel.store import SCHEMA, SECONDARY_INDEXES
from coder.fs.beneath import EscapeError, WorkspaceFS

#: files changed within this many seconds of indexing are re-hashed next time (same-tick edits keep the mtime)
RACY_SECONDS = 3.0
#: below this many files to parse, worker processes cost more than they save
PARALLEL_MIN_FILES = 150
#: a cold build of at least this many files drops the secondary indexes and builds them at the end
BULK_MIN_FILES = 500

#: (path, size, mtime_ns, hash, lang, status, has_errors, symbols, names, graph hash, definitions hash)
#: or ("=", path, size, mtime_ns)
Parsed = tuple


@dataclass
class RefreshStats:
    """What one refresh did (shown by `coder index --stats` and in tool notes)."""

    files: int = 0
    parsed: int = 0
    unchanged: int = 0
    removed: int = 0
    rehashed: int = 0  # of `unchanged`: re-read because size or mtime moved, same content hash
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    from_git: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.parsed or self.removed)


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def parse_file(fs: WorkspaceFS, rel: str, size: int, mtime_ns: int, old_hash: str | None) -> Parsed:
    """Read, classify and extract one file. Runs in worker processes: only plain data goes in and out.

    Read beneath the workspace handle `fs` (one openat2 per file where the kernel has it): a file the sandbox
    swapped for a symlink, or put under a symlinked folder, after the listing is "unreadable", never read
    from outside; a FIFO is opened non-blocking and refused (not a regular file), so it cannot hang a build."""
    lang = fast_language(rel) or ""
    if size > MAX_FILE_BYTES:
        return (rel, size, mtime_ns, "", lang, "huge", 0, [], "", "", "")
    try:
        data = fs.read_file(rel, MAX_FILE_BYTES + 1)[0]
    except (OSError, EscapeError):
        return (rel, size, mtime_ns, "", lang, "unreadable", 0, [], "", "", "")
    digest = _hash(data)
    if old_hash is not None and digest == old_hash:
        return ("=", rel, size, mtime_ns)
    reason = classify_content(rel, data[:16384], len(data))
    if reason is not None:
        return (rel, size, mtime_ns, digest, lang, reason, 0, [], "", "", "")
    try:
        tags = extract(rel, data, lang)
    except Exception as exc:  # noqa: BLE001 - one odd file must never stop a build
        return (rel, size, mtime_ns, digest, lang, f"parse failed: {type(exc).__name__}", 0, [], "", "", "")
    if tags is None:
        return (rel, size, mtime_ns, digest, lang, "no grammar", 0, [], "", "", "")
    seen: dict[tuple[str, str], int] = {}  # occurrence of a (name, kind) in the file: a symbol's identity
    symbols = []
    for s in tags.symbols:
        occurrence = seen.get((s.name, s.kind), 0)
        seen[(s.name, s.kind)] = occurrence + 1
        symbols.append((s.kind, s.name, s.short, s.line, s.end_line, s.signature, s.parent, s.column, occurrence))
    names = file_names(data, lang, [s.short for s in tags.symbols])
    # the file's part of the reference graph: what it defines (in order: `shash`) and which names it mentions
    # (`ghash` covers both). The repo map's ranking is cached by these, so an edit that keeps them (lines moved,
    # a changed number or operator) does not re-rank
    defined = "".join([lang, *(f"\0{kind}\1{name}\1{short}" for kind, name, short, *_rest in symbols)])
    shash = hashlib.blake2b(defined.encode("utf-8", "surrogatepass"), digest_size=16)
    ghash = hashlib.blake2b(names.encode("utf-8", "surrogatepass"), digest_size=16, key=shash.digest())
    return (rel, size, mtime_ns, digest, lang, "ok", int(tags.has_errors), symbols, names, ghash.hexdigest(),
            shash.hexdigest())


def parse_batch(root: str, items: list[tuple[str, int, int, str | None]]) -> list[Parsed]:
    try:
        fs = WorkspaceFS(root)
    except OSError:  # the workspace itself is gone
        return [(rel, size, mtime, "", fast_language(rel) or "", "unreadable", 0, [], "", "", "")
                for rel, size, mtime, _old in items]
    with fs:
        return [parse_file(fs, *item) for item in items]


def _batches(items: list, size: int) -> Iterator[list]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _parse_all(root: Path, todo: list[tuple[str, int, int, str | None]], workers: int,
               pool: ParsePool | None) -> Iterator[list[Parsed]]:
    if workers <= 1 or len(todo) < PARALLEL_MIN_FILES:
        for batch in _batches(todo, BATCH_FILES):
            yield parse_batch(str(root), batch)
        return
    if pool is None:
        pool = ParsePool(root, workers)
    try:
        yield from pool.run(todo, parse_batch)
    finally:
        pool.close()


def _write(conn: sqlite3.Connection, stored: dict[str, tuple[int, int, int, str]], results: list[Parsed],
           now_ns: int) -> tuple[int, int]:
    """Store one batch; returns (parsed, rehashed_unchanged)."""
    parsed = same = 0
    racy_ns = int(RACY_SECONDS * 1e9)
    conn.execute("BEGIN")
    try:
        for res in results:
            if res[0] == "=":
                _, rel, size, mtime = res
                if now_ns - mtime < racy_ns:
                    mtime = -1
                conn.execute("UPDATE files SET size=?, mtime_ns=? WHERE path=?", (size, mtime, rel))
                same += 1
                continue
            rel, size, mtime, digest, lang, status, has_err, symbols, names, ghash, shash = res
            if now_ns - mtime < racy_ns:
                mtime = -1
            old = stored.get(rel)
            if old is not None:
                fid = old[0]
                conn.execute("DELETE FROM symbols WHERE file_id=?", (fid,))
                conn.execute("DELETE FROM names WHERE rowid=?", (fid,))
                conn.execute("UPDATE files SET size=?, mtime_ns=?, hash=?, lang=?, status=?, has_errors=?, ghash=?, "
                             "shash=? WHERE id=?", (size, mtime, digest, lang, status, has_err, ghash, shash, fid))
            else:
                cur = conn.execute(
                    "INSERT INTO files(path, size, mtime_ns, hash, lang, status, has_errors, ghash, shash) "
                    "VALUES(?,?,?,?,?,?,?,?,?)", (rel, size, mtime, digest, lang, status, has_err, ghash, shash))
                fid = cur.lastrowid
                assert fid is not None  # an INSERT always has a row id
                stored[rel] = (fid, size, mtime, digest)  # a re-sent result (worker fallback) then updates
            if symbols:
                conn.executemany("INSERT INTO symbols VALUES(?,?,?,?,?,?,?,?,?,?)", [(fid, *s) for s in symbols])
            if names:
                conn.execute("INSERT INTO names(rowid, words) VALUES(?,?)", (fid, names))
            parsed += 1
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return parsed, same


def refresh(conn: sqlite3.Connection, root: Path, *, workers: int | None = None,
            only: list[str] | None = None, progress: Callable[[int, int], None] | None = None,
            lock: Any = None, observe: Callable[[list[Parsed]], None] | None = None) -> RefreshStats:
    """Make the cache match the working tree (or only the files `only`); returns what changed.

    `lock` (held around each database step, not the whole refresh) lets queries run between batches;
    `observe` sees every batch of results once it is written."""
    lock = lock if lock is not None else contextlib.nullcontext()
    workers = workers if workers is not None else max(1, min(os.cpu_count() or 1, 8))
    pool = None
    if only is None and workers > 1 and looks_big(root):
        with lock:
            empty = conn.execute("SELECT 1 FROM files LIMIT 1").fetchone() is None
        if empty:  # a cold build of a big checkout: start the workers now, they import while we list the files
            pool = ParsePool(root, workers)
    try:
        return _refresh(conn, root, workers, only, progress, lock, pool, observe)
    finally:
        if pool is not None:
            pool.close()


def _refresh(conn: sqlite3.Connection, root: Path, workers: int, only: list[str] | None,
             progress: Callable[[int, int], None] | None, lock: Any, pool: ParsePool | None,
             observe: Callable[[list[Parsed]], None] | None) -> RefreshStats:
    start = time.perf_counter()
    stats = RefreshStats()
    if only is None:
        listing = list_files(root)
        rels = listing.files
        stats.skipped, stats.notes, stats.from_git = dict(listing.skipped), list(listing.notes), listing.from_git
    else:
        rels = sorted({r for r in only if fast_language(r) is not None})
    with lock:
        if only is None:
            rows = conn.execute("SELECT path, id, size, mtime_ns, hash FROM files").fetchall()
        else:  # a query re-checking the few files it cites: do not load the whole table
            rows = [row for rel in rels for row in conn.execute(
                "SELECT path, id, size, mtime_ns, hash FROM files WHERE path = ?", (rel,))]
        stored = {row[0]: (row[1], row[2], row[3], row[4]) for row in rows}
    todo: list[tuple[str, int, int, str | None]] = []
    present: set[str] = set()
    with WorkspaceFS(root) as fs:  # stat beneath the workspace: a name under a symlinked folder is not there
        found = list(fs.lstats(rels))
    for rel, st in found:
        if st is None:
            stats.skipped["deleted"] = stats.skipped.get("deleted", 0) + 1
            continue
        if stat_mod.S_ISLNK(st.st_mode):
            stats.skipped["symlink"] = stats.skipped.get("symlink", 0) + 1
            continue
        if not stat_mod.S_ISREG(st.st_mode):
            stats.skipped["not a regular file"] = stats.skipped.get("not a regular file", 0) + 1
            continue
        present.add(rel)
        old = stored.get(rel)
        if old is not None and old[1] == st.st_size and old[2] == st.st_mtime_ns:
            stats.unchanged += 1
            continue
        todo.append((rel, st.st_size, st.st_mtime_ns, old[3] if old is not None and old[3] else None))
    gone = [rel for rel in (stored if only is None else rels) if rel in stored and rel not in present]
    if gone:
        with lock:
            conn.execute("BEGIN")
            for rel in gone:
                fid = stored[rel][0]
                conn.execute("DELETE FROM symbols WHERE file_id=?", (fid,))
                conn.execute("DELETE FROM names WHERE rowid=?", (fid,))
                conn.execute("DELETE FROM files WHERE id=?", (fid,))
            conn.execute("COMMIT")
        stats.removed = len(gone)
    now_ns = time.time_ns()
    bulk = not stored and len(todo) >= BULK_MIN_FILES
    if bulk:
        with lock:
            for name in SECONDARY_INDEXES:
                conn.execute(f"DROP INDEX IF EXISTS {name}")
    try:
        _run_parse(conn, root, todo, workers, pool, stored, now_ns, lock, stats, progress, observe)
    finally:
        if bulk:
            with lock:
                conn.executescript(SCHEMA)  # recreates the dropped indexes
    with lock:
        for status, count in conn.execute(
                "SELECT status, count(*) FROM files WHERE status != 'ok' GROUP BY status ORDER BY status"):
            stats.skipped[status] = stats.skipped.get(status, 0) + count
        if stats.changed:
            conn.execute("INSERT OR REPLACE INTO meta VALUES('generation', ?)", (str(time.time_ns()),))
    stats.files = len(present)
    stats.seconds = time.perf_counter() - start
    return stats


def _run_parse(conn: sqlite3.Connection, root: Path, todo: list, workers: int, pool: ParsePool | None,
               stored: dict, now_ns: int, lock: Any, stats: RefreshStats,
               progress: Callable[[int, int], None] | None, observe: Callable[[list[Parsed]], None] | None) -> None:
    done = 0
    for results in _parse_all(root, todo, workers, pool):
        with lock:
            parsed, same = _write(conn, stored, results, now_ns)
        if observe is not None:
            observe(results)
        stats.parsed += parsed
        stats.rehashed += same
        stats.unchanged += same  # read and hashed, but the same content: nothing to parse
        done += len(results)
        if progress is not None:
            progress(done, len(todo))
