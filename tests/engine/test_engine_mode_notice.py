"""Issue 33, round 4: `exit_plan` is deferred, loaded whole in a session that opens in plan mode, and loaded with
a notice when the user switches into plan mode mid-session; every switch of the permission mode is told to the
model with the next user message. Sessions run through the real SDKs against the fake server, which records every
request and refuses any the real API would (a refused request ends the turn with an error, which the tests check)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coder.base import events as ev
from coder.commands.modes import cycle_mode, set_mode
from coder.engine.builder import SessionOptions, open_session
from coder.engine.mode_notice import PLAN_ON
from coder.engine.turns import user_turns
from coder.models.wire import segments
from coder.tools.plan_tool import PlanVerdict
from coder.tui.farewell import read_conversation
from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[2]
PLAN = "# Plan\n1. Create notes.txt\n2. Check it"
ANTHROPIC, OPENAI = "anthropic:claude-sonnet-4-6", "openai:gpt-4.1"

#: look around (ask mode); then, switched to plan mode, load exit_plan as the notice says and propose a plan the
#: user sends back; then, switched twice (auto-edit, ask), one answer
SWITCHES = {"turns": [
    {"text": "Looking.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
    {"text": "Seen."},
    {"text": "Loading the plan tool.", "tool_calls": [{"name": "tool_search", "input": {"query": "select:exit_plan"}}]},
    {"text": "Planning.", "tool_calls": [{"name": "exit_plan", "input": {"plan": PLAN}}]},
    {"text": "I will revise it."},
    {"text": "Asking first, then."}]}
AFTER_RESUME = {"turns": [{"text": "Still here."}]}


def bare(obj: Any) -> Any:
    """Without the cache breakpoints, which move from one request to the next."""
    if isinstance(obj, dict):
        return {k: bare(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [bare(v) for v in obj]
    return obj


def texts_of(message: dict[str, Any]) -> list[str]:
    """The text parts of one user message, on either route (OpenAI joins a user's texts into one string)."""
    content = message["content"]
    if isinstance(content, str):
        return content.split("\n\n")
    return [b["text"] for b in content if b.get("type") == "text"]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in body["tools"]]


class Driven:
    """One session opened in-process through `open_session`, its model behind the fake server."""

    def __init__(self, repo: Path, model: str, mode: str, monkeypatch: pytest.MonkeyPatch, server: FakeServer,
                 answers: list[Any], resume: str | None = None) -> None:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url + "/v1")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        self.events: list[ev.Event] = []
        self.asked: list[ev.PermissionRequest] = []

        def ask(request: ev.PermissionRequest) -> Any:
            self.asked.append(request)
            return answers.pop(0)

        self.opened = open_session(SessionOptions(cwd=repo, model=model, permission_mode=mode, resume=resume,
                                                  no_sandbox=True, trust=True), self.events.append, ask)
        self.session = self.opened.session

    def send(self, text: str) -> None:
        outcome = self.session.send(text)
        assert outcome.reason == "done", (outcome, [e for e in self.events if isinstance(e, ev.ErrorEvent)])

    def close(self) -> None:
        self.session.close("done")
        self.opened.store.close()


@pytest.mark.parametrize("model", [ANTHROPIC, OPENAI])
def test_a_switch_into_plan_mode_loads_exit_plan_with_a_notice_and_the_prefix_holds(
        model: str, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeServer(SWITCHES) as server:
        driven = Driven(git_repo, model, "ask", monkeypatch, server, [PlanVerdict("revise", "plan", "more detail")])
        try:
            driven.send("look around")
            set_mode(driven.session, "plan")
            driven.send("plan the notes")
            set_mode(driven.session, "auto-edit")
            set_mode(driven.session, "ask")
            driven.send("just ask")
            sid = driven.session.id
            # what the user wrote, as /rewind lists it and the app says it at quit: without the notices
            assert [t.text for t in user_turns(driven.session, None)] == ["look around", "plan the notes", "just ask"]
            said = read_conversation(driven.opened)
            assert said is not None
            typed = [e["text"] for e in said.events if e["type"] == "user_message"]
            assert typed == ["look around", "plan the notes", "just ask"]
            history = list(driven.session.history)
        finally:
            driven.close()
        bodies = list(server.requests)
    assert len(bodies) == 6
    names = [tool_names(b) for b in bodies]
    if model == ANTHROPIC:
        deferred = {t["name"] for t in bodies[0]["tools"] if t.get("defer_loading")}
        assert "exit_plan" in deferred, "opened in ask mode: exit_plan waits behind the tool search"
        for body in bodies[1:]:
            assert bare(body["tools"]) == bare(bodies[0]["tools"]) and bare(body["system"]) == bare(bodies[0]["system"])
    else:
        assert "exit_plan" not in names[0] and "tool_search" in names[0]
        assert names[1] == names[2] == names[0] and names[3] == names[0] + ["exit_plan"] == names[5], "appended last"
    # every request begins with the whole previous one: no earlier message was touched
    for before, after in zip(bodies, bodies[1:], strict=False):
        assert bare(after["messages"][:len(before["messages"])]) == bare(before["messages"])
        if model == ANTHROPIC:
            old, new = segments(before), segments(after)
            assert [s.text for s in new[:len(old)]] == [s.text for s in old]
    # the switch into plan mode: the notice ahead of the user's text, which ends the request (no call made for the
    # model: its own load follows, with its thinking on the routes that think); then the model's load
    asked = bare(bodies[2]["messages"])
    at = next(i for i, m in enumerate(asked) if m["role"] == "user" and "plan the notes" in texts_of(m))
    assert texts_of(asked[at])[:2] == [PLAN_ON, "plan the notes"] and at + 1 == len(asked)
    loaded = bare(bodies[3]["messages"])
    if model == ANTHROPIC:
        call = loaded[at + 1]["content"][-1]
        assert (call["type"], call["name"], call["input"]) == ("tool_use", "tool_search",
                                                               {"query": "select:exit_plan"})
        result = loaded[at + 2]["content"][0]
        assert result["tool_use_id"] == call["id"]
        assert result["content"] == [{"type": "tool_reference", "tool_name": "exit_plan"}]
    else:
        call = loaded[at + 1]["tool_calls"][0]
        assert call["function"]["name"] == "tool_search"
        assert loaded[at + 2]["role"] == "tool" and "exit_plan" in loaded[at + 2]["content"]
    assert [PLAN_ON in texts_of(m) for m in bare(bodies[1]["messages"]) if m["role"] == "user"].count(True) == 0
    # the scripted model's exit_plan call worked: the plan was put to the user, who sent it back
    proposed = [r for r in driven.asked if isinstance(r, ev.PlanProposed)]
    assert [p.plan for p in proposed] == [PLAN]
    assert any(isinstance(e, ev.ToolCallFinished) and "more detail" in e.output for e in driven.events)
    # two switches (auto-edit, then ask) before the next message: one notice, for the last mode
    last_user = [m for m in bare(bodies[5]["messages"]) if m["role"] == "user"][-1]
    texts = texts_of(last_user)
    assert texts[0].startswith("[Plan mode is off: mode ask (") and texts[1] == "just ask", texts
    assert sum(t.startswith("[") and "mode" in t for t in texts) == 1
    notices = [e for e in driven.events if isinstance(e, ev.ModeNotice)]
    assert [(n.mode, n.text) for n in notices] == [("plan", PLAN_ON), ("ask", texts[0])]

    # a resume puts the notices and the load back where they were: the next request extends the last one; resumed
    # in plan mode, the model is told, and exit_plan is whole, as in any session that opens in plan mode (no second
    # load; on Anthropic the history's reference to it, a tool now sent whole, is left out of the request)
    with FakeServer(AFTER_RESUME) as server:
        resumed = Driven(git_repo, model, "plan", monkeypatch, server, [], resume=sid)
        try:
            assert resumed.session.history == history
            resumed.send("still there?")
        finally:
            resumed.close()
        again = server.requests[0]
    # (the OpenAI route's system message gains the plan-mode section of a session that opens in plan mode)
    conversation = [bare([m for m in b["messages"] if m["role"] != "system"]) for b in (bodies[5], again)]
    if model == ANTHROPIC:  # the load's result carries its text instead of the reference
        load = conversation[0][at + 2]["content"][0]
        assert load["content"] == [{"type": "tool_reference", "tool_name": "exit_plan"}]
        load["content"] = next(e.output for e in driven.events if isinstance(e, ev.ToolCallFinished)
                               and e.tool == "tool_search")
        assert "defer_loading" not in next(t for t in again["tools"] if t["name"] == "exit_plan")
        assert '"tool_reference"' not in json.dumps(again)
    assert conversation[1][:len(conversation[0])] == conversation[0]
    assert tool_names(again).count("exit_plan") == 1
    assert tool_names(again).index("exit_plan") < tool_names(again).index("tool_search"), "whole, not appended"
    assert texts_of(again["messages"][-1]) == [PLAN_ON, "still there?"]
    assert [e.mode for e in resumed.events if isinstance(e, ev.ModeNotice)] == ["plan"]
    assert not [e for e in resumed.events if isinstance(e, ev.ToolCallRequested)], "loaded already: no second load"


def test_a_resume_in_another_mode_is_told_and_a_switch_back_is_not(git_repo: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    script = {"turns": [{"text": "One."}, {"text": "Two."}, {"text": "Three."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, ANTHROPIC, "ask", monkeypatch, server, [])
        try:
            driven.send("first")
            cycle_mode(driven.session)  # ask -> auto-edit
            set_mode(driven.session, "ask")  # and back before any message: the model knows ask
            driven.send("second")
            sid = driven.session.id
        finally:
            driven.close()
        resumed = Driven(git_repo, ANTHROPIC, "auto", monkeypatch, server, [], resume=sid)
        try:
            resumed.send("third")
        finally:
            resumed.close()
        bodies = list(server.requests)
    assert not [e for e in driven.events if isinstance(e, ev.ModeNotice)]
    assert texts_of(bodies[1]["messages"][-1]) == ["second"]
    assert texts_of(bodies[2]["messages"][-1]) == [
        "[Permission mode is now auto: everything the sandbox allows runs without asking.]", "third"]


def run_coder(repo: Path, script: dict[str, Any], model: str, mode: str) -> tuple[list[dict[str, Any]], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}
    with FakeServer(script) as server:
        env["ANTHROPIC_BASE_URL"] = server.base_url
        env["OPENAI_BASE_URL"] = server.base_url + "/v1"
        result = subprocess.run([sys.executable, "-m", "coder", "run", "--trust", "--no-sandbox", "--output-format",
                                 "stream-json", "--permission-mode", mode, "--model", model, "plan it"],
                                cwd=repo, env=env, capture_output=True, text=True, timeout=180)
        bodies = list(server.requests)
    assert result.returncode == 0, result.stderr[-2000:]
    return bodies, result.stdout


@pytest.mark.parametrize("model", [ANTHROPIC, OPENAI])
def test_a_session_opened_in_plan_mode_has_exit_plan_whole_from_the_first_request(model: str,
                                                                                 git_repo: Path) -> None:
    script = {"turns": [{"tool_calls": [{"name": "exit_plan", "input": {"plan": PLAN}}]}, {"text": "Ready."}]}
    bodies, stdout = run_coder(git_repo, script, model, "plan")
    events = [json.loads(line) for line in stdout.splitlines()]
    assert [e["plan"] for e in events if e["type"] == "plan_proposed"] == [PLAN]
    assert events[-1]["plan"] == PLAN
    assert not [e for e in events if e["type"] == "mode_notice"], "opened in plan mode: nothing to tell"
    for body in bodies:
        if model == ANTHROPIC:
            tool = next(t for t in body["tools"] if t["name"] == "exit_plan")
            assert "defer_loading" not in tool and tool["input_schema"]["required"] == ["plan"]
            assert "# Plan mode" in json.dumps(body["system"])
            assert "exit_plan" not in next(t for t in body["tools"] if t["name"] == "tool_search")["description"]
        else:
            assert tool_names(body).index("exit_plan") < tool_names(body).index("tool_search"), "whole, not appended"
            assert "# Plan mode" in body["messages"][0]["content"]


def test_a_switch_into_plan_mode_keeps_the_model_thinking(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The switch adds no call of its own: had the engine loaded `exit_plan` for the model, the plan turn's first
    request would end in a tool loop with no thinking block, and the API's rule would keep thinking off for the whole
    turn (and a model that always thinks would get that call as text, which loads nothing)."""
    script = {"turns": [{"text": "Seen."},
                        {"text": "Looking.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
                        {"text": "Done looking."}]}
    with FakeServer(script) as server:
        driven = Driven(git_repo, ANTHROPIC, "ask", monkeypatch, server, [])
        try:
            driven.session.parts.thinking_budget = 4096
            driven.send("first")
            set_mode(driven.session, "plan")
            driven.send("second")
        finally:
            driven.close()
        bodies = list(server.requests)
    assert len(bodies) == 3 and bodies[0].get("thinking")
    assert [b.get("thinking") for b in bodies[1:]] == [bodies[0]["thinking"]] * 2, "thinking stays on in plan mode"
    assert texts_of(bodies[1]["messages"][-1])[0] == PLAN_ON
