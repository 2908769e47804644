"""Versions: of each event's shape (migrated when read back, coder/base/event_versions.py) and of the store's own
tables (SQLite's user_version, coder/store/db.py `MIGRATIONS`)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from coder.base import events as ev
from coder.base.errors import ConfigError
from coder.base.event_versions import MIGRATIONS, event_from_dict, load_event, migrates
from coder.base.schema import SchemaError
from coder.store.db import STORE_VERSION, VERSION_KEY, SessionStore

SID = "20260101-000000-aaaaaa"


@dataclass
class Renamed(ev.Event):
    """A test's event type at version 2: version 1 called `count` `n`."""

    type: ClassVar[str] = "test_renamed"
    schema_version: ClassVar[int] = 2
    count: int
    note: str = ""


@migrates("test_renamed", 1)
def _renamed_1(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    data["count"] = data.pop("n")
    return data


def store_with(tmp_path: Path, rows: list[tuple[str, dict[str, Any]]]) -> SessionStore:
    store = SessionStore(tmp_path / "s.db")
    store.create_session(SID, "/w", "/w", "m")
    with sqlite3.connect(store.path) as conn:
        for seq, (kind, data) in enumerate(rows, 1):
            conn.execute("INSERT INTO events VALUES (?, ?, 0, ?, ?)", (SID, seq, kind, json.dumps(data)))
    return store


def test_an_event_of_an_older_version_is_migrated_and_one_written_now_says_its_version(tmp_path: Path) -> None:
    store = store_with(tmp_path, [("test_renamed", {"n": 3})])  # as a coder of version 1 wrote it
    store.append(SID, Renamed(4, "now"))
    old, new = store.events(SID)
    assert old.event == Renamed(3) and new.event == Renamed(4, "now")
    assert new.raw[VERSION_KEY] == 2 and VERSION_KEY not in old.raw
    assert ("test_renamed", 1) in MIGRATIONS


def test_events_still_at_version_1_are_stored_as_an_older_coder_writes_them(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    store.create_session(SID, "/w", "/w", "m")
    store.append(SID, ev.UserMessage("hi"))
    raw = sqlite3.connect(store.path).execute("SELECT data FROM events").fetchone()[0]
    assert json.loads(raw) == {"text": "hi", "attachments": [], "images": []}


def test_a_damaged_event_is_one_line_naming_the_session_the_event_and_the_key(tmp_path: Path) -> None:
    store = store_with(tmp_path, [("user_message", {"text": "hi"}),
                                  ("tool_call_finished", {"id": "t1", "tool": "bash", "input": {}, "output": "x",
                                                          "is_error": "no"})])
    good, bad = store.events(SID)
    assert good.event == ev.UserMessage("hi")
    with pytest.raises(SchemaError) as info:
        store.stored(SID)
    assert str(info.value) == f'session {SID} event 2: is_error = "no": expected true or false'
    assert info.value.exit_code == 2 and bad.raw["is_error"] == "no"  # nothing is lost


def test_an_unknown_type_is_kept_and_left_out_of_a_resume_and_a_newer_version_is_refused(tmp_path: Path) -> None:
    store = store_with(tmp_path, [("from_the_future", {"x": 1}), ("user_message", {"text": "hi"}),
                                  ("user_message", {"text": "hi", VERSION_KEY: 9})])
    future, current, newer = store.events(SID)
    assert not future.known and future.data == {"x": 1}
    with pytest.raises(SchemaError, match="stored by a newer coder"):
        assert newer.event
    assert current.event == ev.UserMessage("hi")


def test_unknown_keys_of_a_stored_event_are_left_out_but_wrong_types_are_not() -> None:
    assert event_from_dict({"type": "user_message", "text": "hi", "mood": "happy"}) == ev.UserMessage("hi")
    with pytest.raises(SchemaError, match=r"attachments = \"a.py\": expected a list of objects"):
        event_from_dict({"type": "user_message", "text": "hi", "attachments": "a.py"})
    with pytest.raises(SchemaError, match="needs `text`"):
        load_event("user_message", {})


def test_every_event_type_round_trips_through_its_dict() -> None:
    samples = {
        ev.SessionStart: ev.SessionStart("s", "m", "/w", "/w", "ask", "bubblewrap", True),
        ev.ToolCallFinished: ev.ToolCallFinished("t", "bash", {"command": "ls"}, "out", False, ["a"], 0.5,
                                                 {"exit_code": 0}),
        ev.UsageEvent: ev.UsageEvent(1, 2, 3, 4, 0.5, 1.5, 10, 100),
        ev.CompactionEvent: ev.CompactionEvent("mask", 10, 5, {"replacements": {}}),
        ev.AgentEnded: ev.AgentEnded("a1", "done", 2, 0.1, "report"),
        ev.StuckEvent: ev.StuckEvent("repeat", "nudge", "ls", 3, 7, "note", "t1"),
    }
    for event in samples.values():
        assert event_from_dict(event.to_dict()) == event


def test_an_old_store_is_brought_to_the_current_version_once(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # as coder stored sessions before it knew which process had one open
        conn.executescript("CREATE TABLE sessions (id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL,"
                           " workspace TEXT NOT NULL, cwd TEXT NOT NULL, model TEXT NOT NULL, title TEXT NOT NULL"
                           " DEFAULT '', status TEXT NOT NULL DEFAULT 'running', parent_id TEXT);"
                           "INSERT INTO sessions (id, created, updated, workspace, cwd, model) VALUES"
                           f" ('{SID}', 0, 0, '/w', '/w', 'm');")
    store = SessionStore(path)
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == STORE_VERSION
    assert store.session(SID).pid is None
    store.set_status(SID, "running")
    assert store.session(SID).pid is not None
    SessionStore(path)  # opened again: nothing left to do
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {STORE_VERSION + 1}")
    with pytest.raises(ConfigError, match="written by a newer coder"):
        SessionStore(path)
