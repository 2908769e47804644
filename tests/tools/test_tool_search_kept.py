"""Issue 46: a tool loaded on demand stays loaded in every later request, on every route and model
(coder/models/tool_loading.py), through the real SDKs and the strict fake server.

A request loads a deferred tool either by a `tool_reference` inside a tool result (the model then has its
definition) or by declaring it whole; a reference sent as text loads nothing. Models that always think get a tool
call made without their thinking as text (a compaction's reload, another model's calls after `/model`), so there
the tools those calls loaded must go whole. Models without tool search (Claude Opus 4.1 and earlier) never see
`defer_loading`: a loaded tool is appended, as on the OpenAI route."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_session_support import Driven

from coder.base import events as ev
from coder.commands.modes import set_mode
from coder.models.registry import create_provider
from coder_testkit.fake_server import FakeServer

TOOL = "bash_output"  # deferred on every route, and runs without setup (an unknown job is an error result)
LOAD = {"tool_calls": [{"name": "tool_search", "input": {"query": f"select:{TOOL}"}}]}
USE = {"tool_calls": [{"name": TOOL, "input": {"id": "bg9"}}]}
SUMMARY = {"when": "Your context is about to be compacted", "repeat": True, "text": "## Intent\nkeep going"}


def loaded(body: dict[str, Any]) -> set[str]:
    """The tools the request gives the model a definition of: declared whole, or referenced in a tool result."""
    whole = {t["name"] for t in body.get("tools") or [] if not t.get("defer_loading")}
    referenced = {p["tool_name"] for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
                  if b.get("type") == "tool_result" and isinstance(b.get("content"), list) for p in b["content"]
                  if p.get("type") == "tool_reference"}
    return whole | referenced


def ran(driven: Driven) -> list[ev.ToolCallFinished]:
    return [e for e in driven.events if isinstance(e, ev.ToolCallFinished) and e.tool == TOOL]


@pytest.mark.parametrize("model", ["anthropic:claude-opus-5-5", "anthropic:claude-fable-5",
                                   "anthropic:claude-sonnet-4-6", "openai:gpt-4.1"])
def test_a_loaded_tool_stays_loaded_after_a_compaction(git_repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                       model: str) -> None:
    """Opus 5.5 and Fable 5 always think: the handoff's reload is a call made without thinking, sent as text."""
    script = {"turns": [SUMMARY, LOAD, {"text": "Loaded."}, {"text": "Two."}, {"text": "Three."}, USE,
                        {"text": "Used it."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, model, monkeypatch, server)
        try:
            for text in ("load it", "two", "three"):
                driven.send(text)
            compaction = driven.session.parts.context.compact_now(driven.session.history, driven.session.parts.pinned)
            assert compaction is not None and compaction.kind == "summary"
            driven.send("use it")
        finally:
            driven.close()
        main = [b for b in server.requests if "Your context is about to be compacted" not in str(b)]
    assert ran(driven) and ran(driven)[0].is_error and "bg9" in ran(driven)[0].output, "it ran"
    after = main[-2:]  # the requests after the compaction: the one that calls it and the one after the call
    for body in after:
        names = loaded(body) if "system" in body else {t["function"]["name"] for t in body["tools"]}
        assert TOOL in names, f"{model}: {TOOL} not loaded after the compaction"


@pytest.mark.parametrize("switch_to", ["anthropic:claude-fable-5", "anthropic:claude-opus-5-5"])
def test_a_loaded_tool_stays_loaded_after_a_switch_to_a_model_that_always_thinks(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch, switch_to: str) -> None:
    """Loaded on Sonnet 4.6, then `/model`: the other model's calls carry no thinking the new one reads, so they go
    as text, and so would every load."""
    script = {"turns": [LOAD, {"text": "Loaded."}, USE, {"text": "Used it."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, "anthropic:claude-sonnet-4-6", monkeypatch, server)
        try:
            driven.send("load it")
            config = driven.opened.config
            driven.session.switch_model(create_provider(switch_to, config.providers, config.pricing))
            driven.send("use it")
        finally:
            driven.close()
        switched = server.requests[2:]
    assert ran(driven)
    for body in switched:
        assert TOOL in loaded(body), f"{TOOL} not loaded on {switch_to}"
    assert switched[0]["tools"] == switched[1]["tools"], "the tool list holds between requests"


def test_no_defer_loading_for_a_model_without_tool_search(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """[tool-search] "Claude Opus 4.1 and earlier models don't support the tool search tool": deferred tools are
    left out until loaded, then appended after the others, as on the OpenAI route."""
    script = {"turns": [LOAD, USE, {"text": "Used it."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, "anthropic:claude-opus-4-1", monkeypatch, server)
        try:
            driven.send("load and use it")
        finally:
            driven.close()
        bodies = server.requests
    assert ran(driven)
    assert all(not t.get("defer_loading") for b in bodies for t in b["tools"]), "never sent to this model"
    names = [[t["name"] for t in b["tools"]] for b in bodies]
    assert TOOL not in names[0] and names[1][-1] == TOOL and names[1][:-1] == names[0], "appended once loaded"
    assert '"tool_reference"' not in str(bodies)


@pytest.mark.parametrize("model", ["anthropic:claude-sonnet-4-6", "openai:gpt-4.1"])
def test_a_deferred_tool_never_loaded_does_not_run(git_repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                   model: str) -> None:
    """The model has no definition of a deferred tool it never loaded (the request does not declare it, or marks it
    deferred): its call is a guess. The engine answers with an error saying how to load it; loaded, it runs."""
    script = {"turns": [USE, LOAD, USE, {"text": "Used it."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, model, monkeypatch, server)
        try:
            driven.send("use it")
        finally:
            driven.close()
    refused, used = ran(driven)
    assert refused.is_error and "not loaded" in refused.output and "select:bash_output" in refused.output
    assert "bg9" in used.output and "not loaded" not in used.output, "loaded, the same call runs"


@pytest.mark.parametrize("model", ["anthropic:claude-opus-5-5", "anthropic:claude-fable-5", "openai:gpt-4.1"])
def test_a_loaded_tool_stays_loaded_through_a_resume_and_a_mode_switch(
        git_repo: Path, monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    """Loaded, the session ends; resumed, the user switches to plan mode (a notice with the next message, which
    says how to load exit_plan): every request of the resumed session still gives the model the tool, and its call
    runs."""
    with FakeServer({"turns": [LOAD, {"text": "Loaded."}]}) as server:
        driven = Driven(git_repo, model, monkeypatch, server)
        try:
            driven.send("load it")
            sid = driven.session.id
        finally:
            driven.close()
    with FakeServer({"turns": [USE, {"text": "Used it."}]}) as server:
        resumed = Driven(git_repo, model, monkeypatch, server, resume=sid)
        try:
            set_mode(resumed.session, "plan")
            resumed.send("use it")
        finally:
            resumed.close()
        bodies = server.requests
    assert ran(resumed) and "bg9" in ran(resumed)[0].output and "not loaded" not in ran(resumed)[0].output
    assert "plan" in json.dumps(bodies[0]["messages"][-1]).lower(), "the switch was told"
    for body in bodies:
        names = loaded(body) if "system" in body else {t["function"]["name"] for t in body["tools"]}
        assert TOOL in names, f"{model}: {sorted(names)}"
