"""Issue 36: `/agents` for the user (coder/commands/agents.py) on a real session: start agents in the background,
list them with their state and cost, show one's report and patch, merge (reviewed) or discard, stop."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
from agents_support import define_agent

from coder.base import events as ev
from coder.commands.slash import run_slash
from coder.engine.builder import SessionOptions, open_session


@pytest.fixture(autouse=True)
def sandbox_present() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: install it with `apt-get install bubblewrap`"


def test_the_user_runs_follows_and_merges_agents(git_repo: Path, tmp_path: Path) -> None:
    define_agent(tmp_path, "writer", [
        {"text": "Writing.", "tool_calls": [{"name": "bash", "input": {
            "command": "echo from-$(basename $PWD) > made.txt"}}]},
        {"text": "REPORT: made made.txt"},
    ])
    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"turns": [{"text": "hello"}]}))
    events: list[ev.Event] = []
    opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", permission_mode="auto"),
                          events.append)
    agents = opened.agents
    assert agents is not None
    assert "No agents in this session yet" in run_slash(opened, "/agents").text
    started = run_slash(opened, "/agents run writer make the file")
    assert not started.error and "own worktree" in started.text
    # the agent is named once (the trial read "Started agent a2 (worker) in the background: a2 (worker: ...)")
    assert "Started agent **a1** (writer) in the background: make the file." in started.text, started.text
    assert started.text.count("writer") == 1, started.text
    # worded for the user who ran it (issue 47: it said "You will read of its end after a later tool call")
    assert "Ctrl+G" in started.text and "/agents show a1" in started.text and "tool call" not in started.text
    one = run_slash(opened, "/agents run writer make it again")
    assert not one.error
    assert run_slash(opened, "/agents merge a1", busy=True).error  # a merge waits for the running turn
    for ident in ("a1", "a2"):
        agents.runs[ident].thread.join(120)  # type: ignore[union-attr]
    listed = run_slash(opened, "/agents", busy=True)
    assert "a1 (writer: make the file) done" in listed.text and "1 file(s) changed, not merged yet" in listed.text
    shown = run_slash(opened, "/agents show a1")
    assert "REPORT: made made.txt" in shown.text and "+from-a1" in shown.diff
    merged = run_slash(opened, "/agents merge a1")
    assert not merged.error and "merged: 1 file(s) written" in merged.text and "Review: pass" in merged.text
    assert "0 deleted.\nReview: pass." in merged.text  # two sentences (issue 47: "0 deleted Review: pass.")
    assert (git_repo / "made.txt").read_text() == "from-a1\n"
    second = run_slash(opened, "/agents merge a2")  # the same new file, other content: add/add
    assert second.error and "made.txt" in second.text and "nothing was written" in second.text
    assert not run_slash(opened, "/agents discard a2").error
    assert "its patch: discarded" in run_slash(opened, "/agents").text
    # the user's agents do not wake the model: their news waits for its next step
    assert not agents.wake_pending() and "REPORT: made made.txt" in agents.news()
    opened.finish("done")


def test_stop_all_from_the_command(git_repo: Path, tmp_path: Path) -> None:
    define_agent(tmp_path, "sleeper", [
        {"text": "Sleeping.", "tool_calls": [{"name": "bash", "input": {"command": "sleep 4343"}}]},
        {"text": "REPORT: woke"},
    ])
    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"turns": [{"text": "hello"}]}))
    running = threading.Event()

    def on_event(event: ev.Event) -> None:
        if isinstance(event, ev.AgentRelay) and isinstance(event.event, ev.ToolCallApproved):
            running.set()

    opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", permission_mode="auto"),
                          on_event)
    assert not run_slash(opened, "/agents run sleeper sleep long").error
    assert running.wait(120)
    assert "Stopping every running agent" in run_slash(opened, "/agents stop all", busy=True).text
    run = opened.agents.runs["a1"]  # type: ignore[union-attr]
    run.thread.join(60)  # type: ignore[union-attr]
    assert run.state == "stopped"
    opened.finish("done")
