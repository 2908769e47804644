"""Sessions stored by earlier versions of coder still read and resume (issue 48: typed, versioned events).

`stored/LABEL.sql` is a session store written by the coder LABEL names, through real `coder run` sessions of each
kind (tests/store/make_stored_sessions.py: tool calls, a resume, compaction, a subagent, images, plan mode, a
hook's context, a turn killed mid-call); `stored/LABEL.json` is what that coder rebuilt from each session. Every
event must parse through the schema layer, each session must rebuild to the same conversation, and each must
resume: a new turn runs on top of the stored history.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from coder.base import paths
from coder.base.events import EVENT_TYPES
from coder.engine.builder import SessionOptions, open_session
from coder.engine.history import rebuild
from coder.store.db import SessionStore

STORED = Path(__file__).resolve().parent / "stored"
LABELS = sorted(p.stem for p in STORED.glob("*.sql"))


def load(label: str, workspace: Path | None = None) -> tuple[SessionStore, dict[str, Any]]:
    """The stored sessions of `label` as this machine's session store (their workspace moved to `workspace`)."""
    db = paths.sessions_db()
    db.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as conn:
        conn.executescript((STORED / f"{label}.sql").read_text())
        if workspace is not None:
            conn.execute("UPDATE sessions SET workspace = ?, cwd = ?", (str(workspace), str(workspace)))
    expected = json.loads((STORED / f"{label}.json").read_text())["sessions"]
    return SessionStore(db), expected


def test_there_are_stored_sessions_of_every_kind() -> None:
    assert LABELS, f"no stored sessions in {STORED}"
    for label in LABELS:
        expected = json.loads((STORED / f"{label}.json").read_text())["sessions"]
        kinds = set().union(*(set(s["types"]) for s in expected.values()))
        assert {"tool_call_finished", "compaction", "agent_started", "plan_proposed", "hook_context",
                "todo"} <= kinds, label
        assert any(s["compactions"] for s in expected.values()), label
        assert any(s["mode"] == "plan" for s in expected.values()), label


@pytest.mark.parametrize("label", LABELS)
def test_every_stored_event_parses_and_every_session_rebuilds_as_it_did(label: str) -> None:
    store, expected = load(label)
    images = 0
    for sid, want in expected.items():
        rows = list(store.events(sid))
        assert sorted({r.type for r in rows}) == want["types"]
        for row in rows:
            assert row.known and isinstance(row.event, EVENT_TYPES[row.type])
            images += len(getattr(row.event, "images", []))
        got = rebuild(store.stored(sid))
        assert [m.to_dict() for m in got.history] == want["history"], sid
        assert (got.turns, got.cost_usd, got.files_changed, got.task, got.mode, got.history_at) == \
            (want["turns"], want["cost_usd"], want["files_changed"], want["task"], want["mode"], want["history_at"])
        assert [[c.kind, c.tokens_before, c.tokens_after] for c in got.compactions] == want["compactions"]
    assert images >= 2  # a picture attached to a message and one a tool returned


@pytest.mark.parametrize("label", LABELS)
def test_every_stored_session_resumes(label: str, git_repo: Path, tmp_path: Path) -> None:
    store, expected = load(label, git_repo)
    top = [r[0] for r in sqlite3.connect(store.path).execute("SELECT id FROM sessions WHERE parent_id IS NULL")]
    assert len(top) >= 6
    script = tmp_path / "resumed.json"
    script.write_text(json.dumps({"turns": [{"when": ".", "repeat": True, "text": "Resumed."}]}))
    for sid in top:
        opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", resume=sid,
                                             permission_mode="auto"), lambda event: None)
        try:
            history = expected[sid]["history"]
            assert [m.to_dict() for m in opened.session.history[:len(history)]] == history
            outcome = opened.session.send("go on")
            assert outcome.reason == "done", (sid, outcome)
            tail = [m.to_dict() for m in opened.session.history[len(history):]]
            assert tail[0]["role"] == "user" and "go on" in json.dumps(tail[0])
            assert tail[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Resumed."}]}
        finally:
            opened.finish("done")
