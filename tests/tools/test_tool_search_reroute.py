"""Issue 33: a session that loaded a tool through `tool_search` and is resumed on the other route, where that tool is
sent whole. The history keeps the load (`tool_references` on the tool result); on the Anthropic route a reference
must name a tool of the request marked `defer_loading`, or the API refuses every request of the session
(`tool_reference_unresolved`). The request leaves such a reference out (coder/models/request_rules.py). Sessions
run in-process through `open_session`, the real SDKs and the strict fake server, which refuses what the API would
(a refused request ends the turn with an error: `Driven.send` checks there is none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fake_session_support import Driven

from coder.models.registry import create_provider
from coder.models.wire import segments
from coder_testkit.fake_server import FakeServer

ANTHROPIC, OPENAI = "anthropic:claude-sonnet-4-6", "openai:gpt-4.1"
EDITOR, PATCH = "str_replace_based_edit_tool", "apply_patch"

#: the OpenAI route defers the str_replace editor: the model loads it and creates a file with it ...
LOAD_EDITOR = {"turns": [
    {"tool_calls": [{"name": "tool_search", "input": {"query": f"select:{EDITOR}"}}]},
    {"tool_calls": [{"name": EDITOR, "input": {"command": "create", "path": "made.txt", "file_text": "one\n"}}]},
    {"text": "Created."}]}
#: ... and, resumed on the Anthropic route (where the editor is core), edits it again
EDIT_AGAIN = {"turns": [
    {"tool_calls": [{"name": EDITOR, "input": {"command": "str_replace", "path": "made.txt", "old_str": "one",
                                               "new_str": "two"}}]},
    {"text": "Edited."},
    {"text": "Still here."}]}
#: the Anthropic route defers apply_patch: loaded and used, then used again on the OpenAI route (core there)
LOAD_PATCH = {"turns": [
    {"tool_calls": [{"name": "tool_search", "input": {"query": f"select:{PATCH}"}}]},
    {"tool_calls": [{"name": PATCH, "input": {
        "patch": "*** Begin Patch\n*** Add File: made.txt\n+one\n*** End Patch"}}]},
    {"text": "Created."}]}
PATCH_AGAIN = {"turns": [
    {"tool_calls": [{"name": PATCH, "input": {
        "patch": "*** Begin Patch\n*** Update File: made.txt\n@@\n-one\n+two\n*** End Patch"}}]},
    {"text": "Edited."},
    {"text": "Still here."}]}


def run_then_resume(repo: Path, monkeypatch: pytest.MonkeyPatch, first: tuple[str, dict[str, Any]],
                    then: tuple[str, dict[str, Any]]) -> tuple[Driven, list[dict[str, Any]]]:
    """A session on `first`'s route that loads a tool, closed, then resumed on `then`'s route for two messages:
    (the resumed session, its requests)."""
    with FakeServer(first[1]) as server:
        driven = Driven(repo, first[0], monkeypatch, server)
        try:
            driven.send("make the file")
            sid = driven.session.id
        finally:
            driven.close()
    assert (repo / "made.txt").read_text() == "one\n"
    with FakeServer(then[1]) as server:
        resumed = Driven(repo, then[0], monkeypatch, server, resume=sid)
        try:
            resumed.send("change it")
            resumed.send("still there?")
        finally:
            resumed.close()
        bodies = list(server.requests)
    assert len(bodies) == 3
    return resumed, bodies


def test_a_load_on_the_openai_route_resumed_on_anthropic_where_the_tool_is_whole(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    resumed, bodies = run_then_resume(git_repo, monkeypatch, (OPENAI, LOAD_EDITOR), (ANTHROPIC, EDIT_AGAIN))
    assert (git_repo / "made.txt").read_text() == "two\n", "the loaded editor was callable on the new route"
    editor = next(t for t in bodies[0]["tools"] if t["name"] == EDITOR)
    assert "defer_loading" not in editor, "core on this route"
    # the history still holds the load; the request carries its text, not a reference to a tool sent whole
    assert any(EDITOR in b.tool_references for m in resumed.session.history for b in m.content
               if hasattr(b, "tool_references"))
    results = [b for m in bodies[0]["messages"] for b in m["content"] if b.get("type") == "tool_result"]
    load = results[0]["content"]
    assert isinstance(load, str) and EDITOR in load, load
    assert '"tool_reference"' not in str(bodies), "no reference at all: the editor is the only tool loaded"
    # the same history renders the same bytes in every request: each begins with all of the previous one's
    for before, after in zip(bodies, bodies[1:], strict=False):
        old, new = segments(before), segments(after)
        assert [s.text for s in new[:len(old)]] == [s.text for s in old]
        assert len(new) > len(old)


def test_a_load_on_the_anthropic_route_resumed_on_openai_where_the_tool_is_whole(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, bodies = run_then_resume(git_repo, monkeypatch, (ANTHROPIC, LOAD_PATCH), (OPENAI, PATCH_AGAIN))
    assert (git_repo / "made.txt").read_text() == "two\n", "the loaded apply_patch was callable on the new route"
    names = [[t["function"]["name"] for t in b["tools"]] for b in bodies]
    assert names[0].count(PATCH) == 1 and names[0].index(PATCH) < names[0].index("tool_search"), "core, not appended"
    assert names[1] == names[0] == names[2]
    for before, after in zip(bodies, bodies[1:], strict=False):
        assert after["messages"][:len(before["messages"])] == before["messages"], "earlier messages unchanged"


def test_a_load_on_the_openai_route_continued_on_anthropic_after_a_model_switch(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`/model` keeps the session's tools (deferred for the route it opened on); the Anthropic route sends its own
    editor by its server type, whole, so the reference is left out there too."""
    with FakeServer({"turns": LOAD_EDITOR["turns"] + EDIT_AGAIN["turns"]}) as server:
        driven = Driven(git_repo, OPENAI, monkeypatch, server)
        try:
            driven.send("make the file")
            config = driven.opened.config
            driven.session.switch_model(create_provider(ANTHROPIC, config.providers, config.pricing))
            driven.send("change it")
            driven.send("still there?")
        finally:
            driven.close()
        bodies = [b for b in server.requests if "system" in b]  # the Anthropic ones (chat puts it in messages)
    assert (git_repo / "made.txt").read_text() == "two\n"
    assert len(bodies) == 3 and "defer_loading" not in next(t for t in bodies[0]["tools"] if t["name"] == EDITOR)
    for before, after in zip(bodies, bodies[1:], strict=False):
        old, new = segments(before), segments(after)
        assert [s.text for s in new[:len(old)]] == [s.text for s in old]
