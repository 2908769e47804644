"""Issue 36, where agents meet the rest of the session: the parent compacts its context while an agent runs, the
news of an agent that ended reaches a parent that was idle (a turn of its own) or busy (after its next step),
and a resumed session reads the news its model read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agents_support import control, define_agent, start, user_config

from coder.base import events as ev
from coder.engine.agents import NEWS_HEADER, settle
from coder.engine.builder import SessionOptions, open_session
from coder.engine.history import rebuild

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
    script.write_text(json.dumps({"turns": [
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
    script.write_text(json.dumps({"turns": [
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
    rebuilt = rebuild(e.to_dict() for e in store.events(session_id))
    again = [b for m in rebuilt.history for b in m.content if getattr(b, "tool_use_id", "") == told.id]
    assert again[0].content == results[0].content  # a resumed session reads the same
    opened.finish("done")


def test_an_idle_parent_is_woken_with_the_news(git_repo: Path, tmp_path: Path) -> None:
    """The parent's turn ends while its agent runs; `settle` (what `coder run` does, and the app when idle) waits,
    then gives the model a turn of its own with the agent's report."""
    gate = gated_agent(tmp_path)
    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"turns": [
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
