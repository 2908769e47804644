"""The SQLite session store."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder.base.errors import UsageError
from coder.base.events import UserMessage
from coder.store.db import SessionStore


def test_append_and_read_back_in_order(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    store.create_session("20260101-000000-aaaaaa", "/w", "/w", "scripted:x")
    for i in range(5):
        assert store.append("20260101-000000-aaaaaa", UserMessage(f"m{i}")) == i + 1
    other = SessionStore(tmp_path / "s.db")  # a second connection sees every committed event
    events = list(other.events("20260101-000000-aaaaaa"))
    assert [e.data["text"] for e in events] == [f"m{i}" for i in range(5)]
    assert events[0].to_dict()["type"] == "user_message"


def test_prefix_lookup_and_errors(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    store.create_session("20260101-000000-aaaaaa", "/w", "/w", "m")
    store.create_session("20260101-000000-aabbbb", "/w", "/w", "m")
    assert store.session("20260101-000000-aab").id == "20260101-000000-aabbbb"
    with pytest.raises(UsageError, match="2 sessions"):
        store.session("20260101-000000-aa")
    with pytest.raises(UsageError, match="no session"):
        store.session("zzz")
    assert store.latest("/w") is None  # no user message yet: not a conversation to continue
    store.append("20260101-000000-aaaaaa", UserMessage("hi"))
    store.create_session("20260101-000000-cccccc", "/w", "/w", "m")  # newer, but empty
    store.create_session("20260101-000000-dddddd", "/w", "/w", "m", parent_id="20260101-000000-aaaaaa")
    store.append("20260101-000000-dddddd", UserMessage("a subagent's task"))
    assert store.latest("/w").id == "20260101-000000-aaaaaa" and store.latest("/elsewhere") is None
