"""Issue 36, where agents meet the rest of the session: the parent compacts its context while an agent runs, the
news of an agent that ended reaches a parent that was idle (a turn of its own) or busy (after its next step),
and a resumed session reads the news its model read."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
from agents_support import LOAD_AGENT_TOOLS, control, define_agent, start, user_config

from coder.base import events as ev
from coder.engine.agents import NEWS_HEADER, settle
from coder.engine.builder import SessionOptions, open_session
from coder.engine.history import rebuild
from coder.policy.base import PermissionAnswer

SUMMARY = {"when": "about to be compacted", "repeat": True, "text": "Summary: agent a1 works on the slow job."}


@pytest.fixture(autouse=True)
def sandbox_present() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: install it with `apt-get install bubblewrap`"


def gated_agent(tmp_path: Path) -> Path:
    """An agent whose command waits (at most 120 s) until the test opens its gate; returns the gate."""
    meet = tmp_path / "meet"
    meet.mkdir()
    user_config(f'[sandbox]\nextra_rw = ["{meet}"]\n[context]\ncompact_at = 3000\nrecent_turns = 1\n')
    define_agent(tmp_path, "slow", [
        {"text": "Waiting for the gate.", "tool_calls": [{"name": "bash", "input": {
            "command": f"for i in $(seq 1 1200); do [ -e {meet}/go ] && break; sleep 0.1; done; ls {meet}"}}]},
        {"text": "REPORT: slow job done"},
    ], tools=("bash",))
    return meet / "go"


def test_the_parent_compacts_while_its_agent_runs(git_repo: Path, tmp_path: Path) -> None:
    gate = gated_agent(tmp_path)
    script = tmp_path / "parent.json"
    big = {"name": "bash", "input": {"command": "seq 1 4000"}}
    script.write_text(json.dumps({"turns": [LOAD_AGENT_TOOLS,
        {"text": "Starting the slow job.", "tool_calls": [start("slow", "do the slow job")]},
        {"text": "Meanwhile, counting.", "tool_calls": [big]},
        {"text": "Counting more.", "tool_calls": [big]},
        {"text": "Now waiting.", "tool_calls": [control("wait", "a1", timeout=120)]},
        {"text": "All done."},
        SUMMARY,
    ]}))
    events: list[ev.Event] = []

    def on_event(event: ev.Event) -> None:
        events.append(event)
        if isinstance(event, ev.CompactionEvent) and event.kind == "summary":
            gate.write_text("go")  # the agent may finish only once the parent has compacted

    opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", permission_mode="auto"),
                          on_event)
    outcome = opened.session.send("start the slow job and count")
    assert outcome.reason == "done" and outcome.final_text == "All done."
    kinds = [type(e).__name__ for e in events if isinstance(e, ev.AgentStarted | ev.CompactionEvent | ev.AgentEnded)]
    assert kinds.index("AgentStarted") < kinds.index("CompactionEvent") < kinds.index("AgentEnded")
    waited = [e for e in events if isinstance(e, ev.ToolCallFinished) and e.input.get("action") == "wait"]
    assert "REPORT: slow job done" in waited[0].output and "ended: done" in waited[0].output
    assert opened.session.parts.pinned.task == "start the slow job and count"  # pinned through the compaction
    opened.finish("done")


def test_news_reaches_a_busy_parent_after_its_step_and_survives_a_resume(git_repo: Path, tmp_path: Path) -> None:
    gate = gated_agent(tmp_path)
    gate.write_text("go")  # no waiting: the agent ends while the parent works
    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"turns": [LOAD_AGENT_TOOLS,
        {"text": "Starting.", "tool_calls": [start("slow", "do the slow job")]},
        *({"text": f"Working {i}.", "tool_calls": [{"name": "bash", "input": {"command": "sleep 0.3; echo w"}}]}
          for i in range(40)),
    ]}))
    events: list[ev.Event] = []
    opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", permission_mode="auto",
                                         max_turns=41), events.append)
    opened.session.send("work while the agent works")
    news = [e for e in events if isinstance(e, ev.AgentNews)]
    assert len(news) == 1 and "REPORT: slow job done" in news[0].note
    told = next(e for e in events if isinstance(e, ev.ToolCallFinished) and e.id == news[0].tool_id)
    assert told.tool == "bash"  # appended to an ordinary result, the step after the agent ended
    results = [b for m in opened.session.history for b in m.content if getattr(b, "tool_use_id", "") == told.id]
    assert "REPORT: slow job done" in results[0].content  # what the model read
    session_id = opened.session.id
    store = opened.store
    rebuilt = rebuild(store.stored(session_id))
    again = [b for m in rebuilt.history for b in m.content if getattr(b, "tool_use_id", "") == told.id]
    assert again[0].content == results[0].content  # a resumed session reads the same
    opened.finish("done")


def test_an_idle_parent_is_woken_with_the_news(git_repo: Path, tmp_path: Path) -> None:
    """The parent's turn ends while its agent runs; `settle` (what `coder run` does, and the app when idle) waits,
    then gives the model a turn of its own with the agent's report."""
    gate = gated_agent(tmp_path)
    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"turns": [LOAD_AGENT_TOOLS,
        {"text": "Started it; I will hear of it.", "tool_calls": [start("slow", "do the slow job")]},
        {"text": "Waiting for the agent."},
        {"text": "The agent reported: done."},
    ]}))
    events: list[ev.Event] = []

    def on_event(event: ev.Event) -> None:
        events.append(event)
        if isinstance(event, ev.TurnEnd) and not gate.exists():
            gate.write_text("go")  # released only once the first turn has ended

    opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", permission_mode="auto"),
                          on_event)
    first = opened.session.send("start it")
    assert first.final_text == "Waiting for the agent." and opened.agents is not None and opened.agents.running()
    outcome = settle(opened.session, opened.agents, first)
    assert outcome.final_text == "The agent reported: done."
    woken = [e for e in events if isinstance(e, ev.UserMessage)][-1]
    assert woken.text.startswith(NEWS_HEADER) and "REPORT: slow job done" in woken.text
    opened.finish("done")


def test_a_background_agent_asks_while_its_parent_goes_on(git_repo: Path, tmp_path: Path) -> None:
    """A background agent's question reaches the parent's frontend from the agent's own thread, naming the agent,
    and is held open while the parent keeps working (its question does not block the parent); while it is open
    the agent's state says it waits on the user. The answer (allow once) lets its command run; the next question
    of the same kind is asked again."""
    define_agent(tmp_path, "asker", [
        {"text": "Running one.", "tool_calls": [{"name": "bash", "input": {"command": "touch 1 && echo ran-once"}}]},
        {"text": "And another.", "tool_calls": [{"name": "bash", "input": {"command": "touch 2 && echo ran-twice"}}]},
        {"text": "REPORT: asked twice"},
    ], tools=("bash",))
    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"turns": [LOAD_AGENT_TOOLS,
        {"text": "Starting.", "tool_calls": [start("asker", "run commands")]},
        {"text": "Reading its progress.", "tool_calls": [control("read", "a1")]},
        {"text": "Waiting.", "tool_calls": [control("wait", "a1", timeout=120)]},
        {"text": "Finished."},
    ]}))
    events: list[ev.Event] = []
    parent_read = threading.Event()
    asked: list[tuple[str, str, str, bool]] = []

    def on_event(event: ev.Event) -> None:
        events.append(event)
        if isinstance(event, ev.ToolCallFinished) and event.input.get("action") == "read":
            parent_read.set()

    def ask(request: ev.PermissionRequest) -> PermissionAnswer:
        if not request.agent:
            return PermissionAnswer(request.tool == "task")  # the parent's own start of an agent that executes
        first = not asked
        # held until the parent has gone on to its next tool call: a question blocks only its own agent
        held = parent_read.wait(120) if first else True
        asked.append((request.tool, request.agent, threading.current_thread().name, held))
        return PermissionAnswer(True)

    opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", permission_mode="auto-edit"),
                          on_event, ask=ask)
    outcome = opened.session.send("start it and go on")
    assert outcome.final_text == "Finished."
    assert asked == [("bash", "a1", "coder-agent-a1", True)] * 2  # once each: "allow once" is not remembered
    waits = [e.waiting for e in events if isinstance(e, ev.AgentUpdate) and e.ident == "a1"]
    assert any(w.startswith("your answer: may it run") for w in waits)
    ended = next(e for e in events if isinstance(e, ev.AgentEnded))
    assert ended.state == "done" and "REPORT: asked twice" in ended.report and sorted(ended.files) == ["1", "2"]
    outputs = [e.event.output for e in events
               if isinstance(e, ev.AgentRelay) and isinstance(e.event, ev.ToolCallFinished)]
    assert any("ran-once" in o for o in outputs) and any("ran-twice" in o for o in outputs)
    opened.finish("done")


def test_waiting_on_an_agent_that_already_ended_says_so(git_repo: Path, tmp_path: Path) -> None:
    """Issue 47: `subagents wait` on an agent whose end the model had already read returned nothing."""
    define_agent(tmp_path, "quick", [{"text": "REPORT: quick job done"}], tools=("bash",))
    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"turns": [LOAD_AGENT_TOOLS,
        {"text": "Starting it.", "tool_calls": [start("quick", "do the quick job")]},
        {"text": "Waiting for it.", "tool_calls": [control("wait", "a1", timeout=120)]},
        {"text": "Waiting again.", "tool_calls": [control("wait", "a1", timeout=120)]},
        {"text": "Both waits returned."},
    ]}))
    events: list[ev.Event] = []
    opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", permission_mode="auto"),
                          events.append)
    assert opened.session.send("go").final_text == "Both waits returned."
    waits = [e.output for e in events if isinstance(e, ev.ToolCallFinished) and e.input.get("action") == "wait"]
    assert len(waits) == 2 and "REPORT: quick job done" in waits[0]
    assert "a1 (quick: do the quick job) had already ended (done)" in waits[1]
    opened.finish("done")
