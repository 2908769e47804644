"""Issue 24: a running command sent to the background (Ctrl+B in the app and the REPL: `Session.background`),
through the real session (`open_session`, scripted model, real store) and the real bubblewrap sandbox. The call
returns at once with the job's id; the command runs on, in its own sandbox, to its end; the next command runs in
a new shell; `bash_output` reads what the job printed since and how it ended; the frontends hear that it ended;
and the session's end stops a job that still runs."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from coder.base import events as ev
from coder.engine.builder import SessionOptions, open_session
from coder.sandbox import procs

STEPS = "hostname; for i in 1 2 3 4 5 6; do echo step$i; sleep 0.5; done; echo finished > job.txt"


def _open(git_repo: Path, tmp_path: Path, turns: list[dict], events: list[ev.Event]):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns}))
    return open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", permission_mode="auto"),
                        events.append)


def _press_ctrl_b_on_output(session, events: list[ev.Event], needle: str) -> threading.Thread:
    """What the app does on Ctrl+B, once the running command has printed `needle`."""
    def watch() -> None:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if any(isinstance(e, ev.ToolOutput) and needle in e.text for e in list(events)):
                session.background()
                return
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_command_sent_to_the_background_runs_on_in_its_sandbox(git_repo: Path, tmp_path: Path) -> None:
    events: list[ev.Event] = []
    opened = _open(git_repo, tmp_path, [
        {"text": "Running the steps.", "tool_calls": [{"name": "bash", "input": {"command": STEPS}}]},
        {"text": "Meanwhile.", "tool_calls": [{"name": "bash", "input": {"command": "echo meanwhile; hostname"}}]},
        {"text": "Waiting.", "tool_calls": [{"name": "bash", "input": {"command": "sleep 4; cat job.txt"}}]},
        {"text": "Loading.", "tool_calls": [{"name": "tool_search", "input": {"query": "select:bash_output"}}]},
        {"text": "Checking.", "tool_calls": [{"name": "bash_output", "input": {"id": "bg1"}}]},
        {"text": "Done."}], events)
    try:
        watcher = _press_ctrl_b_on_output(opened.session, events, "step1")
        outcome = opened.session.send("run the steps")
        watcher.join(1)
        assert outcome.reason == "done"
        results = [e for e in events if isinstance(e, ev.ToolCallFinished) and e.tool != "tool_search"]
        first, meanwhile, waited, checked = results
        assert first.data.get("background") == "bg1" and first.duration_s < 2.5, (first.duration_s, first.output)
        assert "coder-sandbox" in first.output and "step1" in first.output  # its output until Ctrl+B
        assert "job bg1" in first.output and "bash_output" in first.output and "step6" not in first.output
        assert "meanwhile" in meanwhile.output and "coder-sandbox" in meanwhile.output  # a new shell, sandboxed
        assert "finished" in waited.output  # the job went on to its end in the workspace
        assert "background job bg1" in waited.output and "exit code 0" in waited.output  # the model hears of it
        assert "ended with exit code 0" in checked.output and "step6" in checked.output
        assert "step1" not in checked.output  # only what it printed since the model last saw it
        assert (git_repo / "job.txt").read_text() == "finished\n"
        ended = [e for e in events if isinstance(e, ev.BackgroundEnded)]
        assert [(e.id, e.exit_code) for e in ended] == [("bg1", 0)]  # the frontends are told
    finally:
        opened.session.close("done")
        opened.store.close()


def test_the_sessions_end_stops_a_background_job(git_repo: Path, tmp_path: Path) -> None:
    events: list[ev.Event] = []
    opened = _open(git_repo, tmp_path, [
        {"text": "Serving.", "tool_calls": [{"name": "bash", "input": {
            "command": "echo up; sleep 300; echo never > never.txt"}}]},
        {"text": "Left it running."}], events)
    try:
        watcher = _press_ctrl_b_on_output(opened.session, events, "up")
        assert opened.session.send("start it").reason == "done"
        watcher.join(1)
        jobs = opened.session.parts.tool_ctx.services["bash_jobs"]
        job = jobs.jobs["bg1"]
        assert job.status == "running"
        bash = job.shell.shell_pid
        assert bash is not None and any(
            "sleep" in Path(f"/proc/{p}/cmdline").read_text() for p in procs.descendants(bash))
    finally:
        opened.session.close("done")
        opened.store.close()
    assert job.status == "stopped" and not Path(f"/proc/{bash}").exists()  # the sandbox went with the session
    assert not (git_repo / "never.txt").exists()
