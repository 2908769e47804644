"""Sessions and their events in SQLite (stdlib).

WAL mode and one transaction per event: a process killed with SIGKILL loses at most the event in flight, and a
resumed session rebuilds its history from what is here. The database lives in the state dir
(`$CODER_STATE_DIR`, else `$XDG_STATE_HOME/coder`).

A session's status says "running" while a process has it open; a process killed with SIGKILL cannot say
otherwise, so the row also records which process that is (pid, and the host and start time of that process, so
a reused pid is not taken for it). A "running" row whose process is gone is read as "interrupted" (issue 24,
bug 12). A session opened and closed without a single message is deleted on close and never listed.

The store's own shape has a version (SQLite's `user_version`), raised by each step of `MIGRATIONS`, which a store
of an older coder goes through once, in order, when it is opened. Each event row keeps the version of its type's
shape it was written with (coder/base/event_versions.py; `VERSION_KEY`), and is read back through the schema
layer (`EventRow.event`): a session stored by an older coder resumes (tests/store holds sessions stored by
earlier versions), and an older coder still reads the rows of the types it knows.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from coder.base.errors import ConfigError, UsageError
from coder.base.event_versions import load_event
from coder.base.events import EVENT_TYPES, Event
from coder.base.schema import SchemaError

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    workspace TEXT NOT NULL,
    cwd TEXT NOT NULL,
    model TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'running',
    parent_id TEXT,
    pid INTEGER,
    pid_start TEXT
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,
    time REAL NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions(updated);
"""

#: the steps from one shape of the store to the next: step N takes a store of `user_version` N - 1 to N, each a
#: list of columns to add (table, column, declaration) when missing (a store made before versions may have them)
MIGRATIONS: tuple[tuple[tuple[str, str, str], ...], ...] = (
    # 1: which process has a session open (issue 24, bug 12)
    (("sessions", "pid", "INTEGER"), ("sessions", "pid_start", "TEXT")),
)
STORE_VERSION = len(MIGRATIONS)
#: the key of an event row's data that holds the version of its type's shape, written only when it is not 1: the
#: rows of every type still at version 1 are byte for byte what an older coder writes and reads
VERSION_KEY = "_version"


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the store at `path` to `STORE_VERSION`, each step once and in its own transaction."""
    current = db.execute("PRAGMA user_version").fetchone()[0]
    if current > STORE_VERSION:
        raise ConfigError(f"the session store {path} was written by a newer coder (store version {current}; this one "
                          f"reads up to {STORE_VERSION}). Upgrade coder, or point CODER_STATE_DIR elsewhere.")
    for version in range(current + 1, STORE_VERSION + 1):
        with db:
            db.execute("BEGIN IMMEDIATE")
            if db.execute("PRAGMA user_version").fetchone()[0] >= version:
                continue  # another process took this step meanwhile
            for table, column, declaration in MIGRATIONS[version - 1]:
                if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
            db.execute(f"PRAGMA user_version = {version}")


@dataclass
class SessionRow:
    id: str
    created: float
    updated: float
    workspace: str
    cwd: str
    model: str
    title: str
    status: str
    parent_id: str | None
    pid: int | None = None  # the process that has (or had) it open
    pid_start: str | None = None  # "host:start time" of that process (a reused pid is another process)


@dataclass
class EventRow:
    """One stored event: its place, its type, and its data as written (`raw`; `VERSION_KEY` in it says the version
    of its type's shape, 1 when absent). Read it through `event` (parsed) or `data` (the parsed event as a dict);
    `raw` only to copy it as is."""

    session_id: str
    seq: int
    time: float
    type: str
    raw: dict[str, Any]

    @property
    def known(self) -> bool:
        """Whether this coder knows the event's type (a newer coder's types are kept, and left out of a resume)."""
        return self.type in EVENT_TYPES

    @cached_property
    def event(self) -> Event:
        """The event, migrated to this coder's version of its type and parsed; SchemaError (one line naming the
        session, the event and the key) when it is damaged or unknown."""
        data = dict(self.raw)
        version = data.pop(VERSION_KEY, 1)
        return load_event(self.type, data, version if isinstance(version, int) else 1,
                          f"session {self.session_id} event {self.seq}")

    @property
    def data(self) -> dict[str, Any]:
        """The event's fields as parsed, for exports and transcripts; the data as written when its type is unknown or
        it does not parse (what reads it as a session, a resume, goes through `event`, which says what is wrong)."""
        try:
            data = self.event.to_dict() if self.known else self.raw
        except SchemaError:
            return self.raw
        return {k: v for k, v in data.items() if k != "type"}

    def to_dict(self) -> dict[str, Any]:
        return {**self.data, "type": self.type, "session_id": self.session_id, "seq": self.seq, "time": self.time}


def process_token(pid: int) -> str | None:
    """"host:start time" of process `pid` (the start time in clock ticks since boot, from /proc), None when
    there is no such process. Without /proc: "host:?" for a process that exists."""
    host = socket.gethostname()
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return f"{host}:{stat.rsplit(')', 1)[1].split()[19]}"
    except (OSError, IndexError):
        pass
    if Path("/proc/self/stat").exists():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except OSError:
        pass
    return f"{host}:?"


def _gone(row: SessionRow) -> bool:
    """True when a "running" session's process is known to be gone (same host, and it is dead or another one)."""
    if row.status != "running" or not row.pid or not row.pid_start:
        return False
    host = row.pid_start.split(":", 1)[0]
    if host != socket.gethostname():
        return False  # another machine's process (a shared home): nothing can be said
    now = process_token(row.pid)
    return now is None or (not now.endswith(":?") and now != row.pid_start)


USED = "EXISTS (SELECT 1 FROM events e WHERE e.session_id = s.id AND e.type = 'user_message')"


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _locked(method: _Method) -> _Method:
    """One call at a time on the store's connection (see `SessionStore`)."""

    @functools.wraps(method)
    def run(self: SessionStore, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return run  # type: ignore[return-value]


class SessionStore:
    """One connection, shared by the threads of a session: its own, the app's, and its background subagents'
    (issue 36), which write their events and the parent's at once; each call holds a lock, since two
    transactions on one connection must not interleave."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
            migrate(self._db, path)
        except (OSError, sqlite3.OperationalError) as exc:
            raise ConfigError(f"the session store {path} cannot be written ({exc}). Point CODER_STATE_DIR or "
                              "XDG_STATE_HOME at a writable folder.") from exc
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"the session store {path} is damaged ({exc}). Move it aside (your sessions are in "
                              "it) and coder starts a new one.") from exc

    @_locked
    def close(self) -> None:
        self._db.close()

    @_locked
    def create_session(self, session_id: str, workspace: str, cwd: str, model: str, title: str = "",
                       parent_id: str | None = None) -> None:
        now = time.time()
        self._db.execute(
            "INSERT INTO sessions (id, created, updated, workspace, cwd, model, title, parent_id, pid, pid_start)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, now, now, workspace, cwd, model, title[:200], parent_id, os.getpid(),
             process_token(os.getpid())),
        )

    @_locked
    def append(self, session_id: str, event: Event) -> int:
        """Persist one event, with the version of its type's shape, in its own transaction; its sequence number."""
        now = time.time()
        data = {k: v for k, v in event.to_dict().items() if k != "type"}
        if event.schema_version != 1:
            data[VERSION_KEY] = event.schema_version
        payload = json.dumps(data, ensure_ascii=False, default=str)
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            seq = self._db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            self._db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?)", (session_id, seq, now, event.type, payload))
            self._db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))
        return seq

    @_locked
    def set_status(self, session_id: str, status: str) -> None:
        """Set the status; "running" also records this process as the one that has the session open."""
        if status == "running":
            self._db.execute("UPDATE sessions SET status = ?, updated = ?, pid = ?, pid_start = ? WHERE id = ?",
                             (status, time.time(), os.getpid(), process_token(os.getpid()), session_id))
            return
        self._db.execute("UPDATE sessions SET status = ?, updated = ? WHERE id = ?", (status, time.time(), session_id))

    @_locked
    def discard_if_unused(self, session_id: str) -> bool:
        """Delete a session that never got a user message and has no child sessions (an app opened and closed
        without a word); True when it was deleted. A list of sessions is a list of conversations."""
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            used = self._db.execute(
                f"SELECT {USED} OR EXISTS (SELECT 1 FROM sessions c WHERE c.parent_id = s.id) FROM sessions s "
                "WHERE s.id = ?", (session_id,)).fetchone()
            if used is None or used[0]:
                return False
            self._db.execute("DELETE FROM events WHERE session_id = ?", (session_id,))
            self._db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return True

    @_locked
    def _rows(self, rows: list[tuple[Any, ...]]) -> list[SessionRow]:
        """Rows as SessionRow, a "running" one whose process is gone read (and stored) as "interrupted"."""
        out = [SessionRow(*row) for row in rows]
        for row in out:
            if _gone(row):
                row.status = "interrupted"
                self._db.execute("UPDATE sessions SET status = ? WHERE id = ? AND status = 'running'",
                                 (row.status, row.id))
        return out

    @_locked
    def set_title(self, session_id: str, title: str) -> None:
        self._db.execute("UPDATE sessions SET title = ? WHERE id = ? AND title = ''", (title[:200], session_id))

    @_locked
    def sessions(self, limit: int = 50, workspace: str | None = None, current: str | None = None,
                 top_level: bool = False) -> list[SessionRow]:
        """The newest `limit` sessions that have a conversation (at least one user message), and `current` (the
        caller's own session) even before its first message; `top_level`: no subagent's session."""
        query = f"SELECT * FROM sessions s WHERE ({USED} OR s.id = ?)"
        if top_level:
            query += " AND s.parent_id IS NULL"
        args: tuple[Any, ...] = (current or "",)
        if workspace:
            query += " AND workspace = ?"
            args = (*args, workspace)
        query += " ORDER BY updated DESC LIMIT ?"
        return self._rows(self._db.execute(query, (*args, limit)).fetchall())

    @_locked
    def children(self, session_id: str) -> list[SessionRow]:
        """The sessions of the subagents of `session_id`, oldest first."""
        return self._rows(self._db.execute("SELECT * FROM sessions WHERE parent_id = ? ORDER BY created",
                                           (session_id,)).fetchall())

    @_locked
    def session(self, session_id: str) -> SessionRow:
        """The session `session_id`, or the only one whose id starts with it."""
        rows = self._db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchall()
        if not rows:
            rows = self._db.execute("SELECT * FROM sessions WHERE id LIKE ? || '%'", (session_id,)).fetchall()
        if len(rows) != 1:
            problem = "no session" if not rows else f"{len(rows)} sessions"
            raise UsageError(f"{problem} matching {session_id!r} in {self.path}; `coder sessions` lists them.")
        return self._rows(rows)[0]

    @_locked
    def latest(self, workspace: str | None = None) -> SessionRow | None:
        """The most recently updated top-level session that has at least one user message (what --continue
        picks: an app opened and closed without a word, or a subagent's session, is not a conversation)."""
        query = f"SELECT * FROM sessions s WHERE parent_id IS NULL AND {USED}"
        args: tuple[Any, ...] = ()
        if workspace:
            query += " AND workspace = ?"
            args = (workspace,)
        row = self._db.execute(query + " ORDER BY updated DESC LIMIT 1", args).fetchone()
        return self._rows([row])[0] if row else None

    def events(self, session_id: str, last: int | None = None) -> Iterator[EventRow]:
        """The session's events in order; with `last`, only the newest `last` of them (Ctrl+T shows its end
        first)."""
        columns = "SELECT session_id, seq, time, type, data FROM events WHERE session_id = ?"
        with self._lock:  # read whole: a cursor left open between yields would meet another thread's transaction
            if last is None:
                rows = self._db.execute(f"{columns} ORDER BY seq", (session_id,)).fetchall()
            else:
                rows = self._db.execute(f"{columns} ORDER BY seq DESC LIMIT ?", (session_id, last)).fetchall()[::-1]
        for sid, seq, when, etype, data in rows:
            yield EventRow(sid, seq, when, etype, json.loads(data))

    def stored(self, session_id: str) -> list[Event]:
        """The session's events of the types this coder knows, parsed, oldest first: what a resume rebuilds from.
        A damaged event is a SchemaError naming it (the session is left as it is)."""
        return [row.event for row in self.events(session_id) if row.known]
