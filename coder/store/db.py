"""Sessions and their events in SQLite (stdlib).

WAL mode and one transaction per event: a process killed with SIGKILL loses at most the event in flight, and a
resumed session rebuilds its history from what is here. The database lives in the state dir
(`$CODER_STATE_DIR`, else `$XDG_STATE_HOME/coder`).
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.errors import ConfigError, UsageError

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
    parent_id TEXT
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


@dataclass
class EventRow:
    session_id: str
    seq: int
    time: float
    type: str
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {**self.data, "type": self.type, "session_id": self.session_id, "seq": self.seq, "time": self.time}


def new_session_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


class SessionStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), timeout=30, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
        except (OSError, sqlite3.OperationalError) as exc:
            raise ConfigError(f"the session store {path} cannot be written ({exc}). Point CODER_STATE_DIR or "
                              "XDG_STATE_HOME at a writable folder.") from exc
        except sqlite3.DatabaseError as exc:
            raise ConfigError(f"the session store {path} is damaged ({exc}). Move it aside (your sessions are in "
                              "it) and coder starts a new one.") from exc

    def close(self) -> None:
        self._db.close()

    def create_session(self, session_id: str, workspace: str, cwd: str, model: str, title: str = "",
                       parent_id: str | None = None) -> None:
        now = time.time()
        self._db.execute(
            "INSERT INTO sessions (id, created, updated, workspace, cwd, model, title, parent_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, now, now, workspace, cwd, model, title[:200], parent_id),
        )

    def append(self, session_id: str, event_type: str, data: dict[str, Any]) -> int:
        """Persist one event in its own transaction and return its sequence number."""
        now = time.time()
        payload = json.dumps({k: v for k, v in data.items() if k != "type"}, ensure_ascii=False, default=str)
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            seq = self._db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM events WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            self._db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?)", (session_id, seq, now, event_type, payload))
            self._db.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))
        return seq

    def set_status(self, session_id: str, status: str) -> None:
        self._db.execute("UPDATE sessions SET status = ?, updated = ? WHERE id = ?", (status, time.time(), session_id))

    def set_title(self, session_id: str, title: str) -> None:
        self._db.execute("UPDATE sessions SET title = ? WHERE id = ? AND title = ''", (title[:200], session_id))

    def sessions(self, limit: int = 50, workspace: str | None = None) -> list[SessionRow]:
        query = "SELECT * FROM sessions"
        args: tuple[Any, ...] = ()
        if workspace:
            query += " WHERE workspace = ?"
            args = (workspace,)
        query += " ORDER BY updated DESC LIMIT ?"
        return [SessionRow(*row) for row in self._db.execute(query, (*args, limit))]

    def session(self, session_id: str) -> SessionRow:
        """The session `session_id`, or the only one whose id starts with it."""
        rows = self._db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchall()
        if not rows:
            rows = self._db.execute("SELECT * FROM sessions WHERE id LIKE ? || '%'", (session_id,)).fetchall()
        if len(rows) != 1:
            problem = "no session" if not rows else f"{len(rows)} sessions"
            raise UsageError(f"{problem} matching {session_id!r} in {self.path}; `coder sessions` lists them.")
        return SessionRow(*rows[0])

    def latest(self, workspace: str | None = None) -> SessionRow | None:
        """The most recently updated top-level session that has at least one user message (what --continue
        picks: an app opened and closed without a word, or a subagent's session, is not a conversation)."""
        query = ("SELECT * FROM sessions s WHERE parent_id IS NULL AND EXISTS (SELECT 1 FROM events e WHERE "
                 "e.session_id = s.id AND e.type = 'user_message')")
        args: tuple[Any, ...] = ()
        if workspace:
            query += " AND workspace = ?"
            args = (workspace,)
        row = self._db.execute(query + " ORDER BY updated DESC LIMIT 1", args).fetchone()
        return SessionRow(*row) if row else None

    def events(self, session_id: str) -> Iterator[EventRow]:
        for sid, seq, when, etype, data in self._db.execute(
            "SELECT * FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        ):
            yield EventRow(sid, seq, when, etype, json.loads(data))
