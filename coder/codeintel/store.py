"""The SQLite cache of the index: one database per repository under `$XDG_CACHE_HOME/coder/index/`.

A new process reuses what an earlier one parsed (files are keyed by path, size, mtime and content hash), so a
warm start costs a directory listing and a stat per file. The cache is only a cache: when it is corrupt it is
deleted and rebuilt, when its folder is read-only the index lives in memory, and the folder as a whole is
kept under a size bound by dropping the least recently used repositories.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

SCHEMA_VERSION = "7"
#: the whole cache folder is kept under this many bytes (least recently used repositories go first)
CACHE_LIMIT_BYTES = 1 << 30

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS files(
  id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, size INT, mtime_ns INT, hash TEXT,
  lang TEXT, status TEXT, has_errors INT DEFAULT 0, ghash TEXT DEFAULT '', shash TEXT DEFAULT '');
CREATE TABLE IF NOT EXISTS symbols(
  file_id INT NOT NULL, kind TEXT, name TEXT, short TEXT, line INT, end_line INT, signature TEXT,
  parent TEXT, col INT, occ INT);
CREATE INDEX IF NOT EXISTS symbols_short ON symbols(short);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file_id);
CREATE TABLE IF NOT EXISTS maps(key TEXT PRIMARY KEY, text TEXT, used INT);
-- the names each file mentions (see names.py), space-separated; rowid = files.id
CREATE TABLE IF NOT EXISTS names(rowid INTEGER PRIMARY KEY, words TEXT);
"""


#: the full-text index over `names` (see names.py), made on the first references query rather than during a
#: build (it would cost a cold build 5%): "which files mention `save`" is then an index lookup (case-folded: a
#: superset, the caller checks the exact name). Triggers keep it in step with `names` once it exists.
FULLTEXT = """
CREATE VIRTUAL TABLE IF NOT EXISTS names_fts USING fts5(words, content='names', content_rowid='rowid',
  detail=none, tokenize="unicode61 remove_diacritics 0 tokenchars '_$'");
INSERT INTO names_fts(names_fts) VALUES('rebuild');
CREATE TRIGGER IF NOT EXISTS names_ai AFTER INSERT ON names BEGIN
  INSERT INTO names_fts(rowid, words) VALUES (new.rowid, new.words); END;
CREATE TRIGGER IF NOT EXISTS names_ad AFTER DELETE ON names BEGIN
  INSERT INTO names_fts(names_fts, rowid, words) VALUES ('delete', old.rowid, old.words); END;
"""

#: secondary indexes, dropped during a big cold build and created once at its end (faster than incremental)
SECONDARY_INDEXES = ("symbols_short", "symbols_file")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coder" / "index"


def db_path_for(root: Path, cache_dir: Path | None = None) -> Path:
    key = hashlib.sha256(str(root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return (cache_dir or cache_root()) / f"{root.resolve().name[:40]}-{key}.sqlite"


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        try:
            os.unlink(f"{path}{suffix}")
        except OSError:
            pass


def enforce_cache_bound(folder: Path, keep: Path, limit: int = CACHE_LIMIT_BYTES) -> int:
    """Delete least recently used databases (never `keep`) until the folder is under `limit`; returns count."""
    try:
        dbs = [(p.stat().st_mtime, p) for p in folder.glob("*.sqlite")]
    except OSError:
        return 0
    sizes = {}
    for _, p in dbs:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            try:
                total += os.stat(f"{p}{suffix}").st_size
            except OSError:
                pass
        sizes[p] = total
    used = sum(sizes.values())
    removed = 0
    for _, p in sorted(dbs):
        if used <= limit:
            break
        if p == keep:
            continue
        _remove_db(p)
        used -= sizes[p]
        removed += 1
    return removed


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, timeout=10, isolation_level=None)
    conn.execute("PRAGMA busy_timeout=10000")
    if path != ":memory:":
        conn.execute("PRAGMA journal_mode=WAL")
    # a cache: losing the last writes in a power cut only costs a re-parse (corruption is caught on open)
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.executescript(SCHEMA)
    row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    if row is None:
        conn.execute("INSERT OR REPLACE INTO meta VALUES('schema', ?)", (SCHEMA_VERSION,))
    elif row[0] != SCHEMA_VERSION:
        raise sqlite3.DatabaseError(f"schema {row[0]} != {SCHEMA_VERSION}")
    # a cheap read of every table: a damaged header or page shows up here, not in the middle of a query
    conn.execute("SELECT count(*) FROM files").fetchone()
    return conn


def ensure_fulltext(conn: sqlite3.Connection) -> bool:
    """Make the full-text index of names if it is missing; False when this SQLite has no FTS5 (callers scan)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'names_fts'").fetchone():
        return True
    try:
        conn.executescript("BEGIN;" + FULLTEXT + "COMMIT;")
    except sqlite3.OperationalError:  # no FTS5 in this SQLite
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        return False
    return True


def open_db(root: Path, cache_dir: Path | None = None) -> tuple[sqlite3.Connection, Path | None, list[str]]:
    """Open (creating, or rebuilding when corrupt) the cache of `root`; returns (conn, path or None, notes)."""
    notes: list[str] = []
    path = db_path_for(root, cache_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise PermissionError(f"{path.parent} is not writable")
    except OSError as exc:
        notes.append(f"index cache not writable ({exc}); keeping the index in memory for this process")
        return _connect(":memory:"), None, notes
    for _attempt in range(2):
        try:
            conn = _connect(str(path))
            try:
                os.utime(path)  # recency for the size bound
            except OSError:
                pass
            enforce_cache_bound(path.parent, keep=path)
            return conn, path, notes
        except sqlite3.DatabaseError as exc:
            notes.append(f"index cache {path.name} was unusable ({exc}); rebuilt it")
            _remove_db(path)
        except OSError as exc:  # pragma: no cover - disk full and the like
            notes.append(f"index cache failed ({exc}); keeping the index in memory")
            break
    return _connect(":memory:"), None, notes


def reset_db(conn: sqlite3.Connection, path: Path | None) -> sqlite3.Connection:
    """Throw a broken database away and start empty (called when a query hits corruption)."""
    try:
        conn.close()
    except sqlite3.Error:
        pass
    if path is None:
        return _connect(":memory:")
    _remove_db(path)
    try:
        return _connect(str(path))
    except (sqlite3.DatabaseError, OSError):
        return _connect(":memory:")
