"""Issue 36: stopping an agent stops everything it runs, and a parent killed with SIGKILL leaves no process and no
worktree behind (the sandbox dies with its parent, the janitor removes the trees), nothing in the user's git."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from agents_support import LOAD_AGENT_TOOLS, REPO, control, define_agent, start, worktrees_left
from repo_support import git

from coder.base import events as ev
from coder.engine.agent_janitor import JANITOR, claim, sweep
from coder.engine.builder import SessionOptions, open_session


@pytest.fixture(autouse=True)
def sandbox_present() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: install it with `apt-get install bubblewrap`"


def processes_with(*needles: str) -> list[int]:
    """Live processes whose command line holds every one of `needles` (zombies are gone already for this)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if all(n in cmdline for n in needles) and state != "Z":
            found.append(int(name))
    return found


def until(check, what: str, seconds: float = 90.0) -> None:
    """Poll `check` until it holds; fail saying `what` did not happen."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds:.0f}s: {what}")
        time.sleep(0.05)


def sessions_list(repo: Path) -> str:
    return subprocess.run([sys.executable, "-m", "coder", "sessions", "list"], cwd=repo, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120).stdout


def sleeper(tmp_path: Path) -> str:
    """A writing agent whose command runs until stopped; returns the command's unique mark."""
    mark = f"4242.{uuid.uuid4().int % 10**6}"
    define_agent(tmp_path, "sleeper", [
        {"text": "Working.", "tool_calls": [{"name": "bash", "input": {
            "command": f"echo partial > partial.txt; echo started-{mark}; sleep {mark}"}}]},
        {"text": "REPORT: woke up"},
    ])
    return mark


def test_a_killed_parent_leaves_no_process_and_no_worktree(git_repo: Path, tmp_path: Path) -> None:
    mark = sleeper(tmp_path)
    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"turns": [LOAD_AGENT_TOOLS,
        {"text": "Starting.", "tool_calls": [start("sleeper", "work long")]},
        {"text": "Waiting.", "tool_calls": [control("wait", "a1", timeout=600)]},
        {"text": "never reached"},
    ]}))
    proc = subprocess.Popen([sys.executable, "-m", "coder", "run", "--output-format", "stream-json",
                             "--permission-mode", "auto", "--model", f"scripted:{script}", "go"],
                            cwd=git_repo, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
    worktree = None
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            if event["type"] == "agent_started":
                worktree = Path(event["worktree"])
            if event.get("agent_id") == "a1" and event["type"] == "tool_output" and f"started-{mark}" in \
                    event["text"]:
                break
        else:
            raise AssertionError("coder run ended before its agent ran its command")
        # the plant is live: the agent's command runs, in its worktree, with the janitor watching
        assert worktree is not None and (worktree / "partial.txt").exists()
        until(lambda: bool(processes_with(f"sleep {mark}")), "the agent's command runs")
        janitor = (str(worktree.parent), JANITOR.strip().splitlines()[1])
        assert len(processes_with(*janitor)) == 1
        # `coder sessions` shows the background work while it runs
        listed = sessions_list(git_repo)
        assert re.search(r"↳ a1 +sleeper +background +running", listed), listed
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    until(lambda: not processes_with(f"sleep {mark}"), "the agent's sandboxed command ended")
    until(lambda: not os.path.lexists(worktree.parent), "the janitor removed the session's worktrees")
    until(lambda: not processes_with(*janitor), "the janitor ended")
    assert worktrees_left() == []
    assert re.search(r"↳ a1 +sleeper +background +interrupted", sessions_list(git_repo))  # its process is gone
    # the user's git sees nothing of it: one worktree, nothing to prune, no branch, a clean status
    assert git(git_repo, "worktree", "list").count("\n") == 1
    assert git(git_repo, "worktree", "prune", "--dry-run", "-v") == ""
    assert git(git_repo, "branch", "--format=%(refname:short)") == "main\n"
    assert git(git_repo, "status", "--porcelain") == ""
    git(git_repo, "fsck", "--no-progress")


def test_a_stop_ends_the_agents_commands_and_its_tree(git_repo: Path, tmp_path: Path) -> None:
    """What the app's stop does (`Agents.stop`, from another thread): the agent's sandboxed command is killed,
    the agent ends `stopped`, the parent's wait returns, and the tree with its half-done work is dropped."""
    mark = sleeper(tmp_path)
    script = tmp_path / "parent.json"
    script.write_text(json.dumps({"turns": [LOAD_AGENT_TOOLS,
        {"text": "Starting.", "tool_calls": [start("sleeper", "work long")]},
        {"text": "Waiting.", "tool_calls": [control("wait", "a1", timeout=600)]},
        {"text": "Stopped, then."},
    ]}))
    events: list[ev.Event] = []
    opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", permission_mode="auto"),
                          events.append)
    agents = opened.agents
    assert agents is not None

    def stop_when_running() -> None:
        until(lambda: any(isinstance(e, ev.AgentRelay) and isinstance(e.event, ev.ToolOutput)
                          and f"started-{mark}" in e.event.text for e in list(events)), "the command started")
        agents.stop("a1")

    stopper = threading.Thread(target=stop_when_running, daemon=True)
    stopper.start()
    outcome = opened.session.send("go")
    stopper.join(60)
    assert outcome.final_text == "Stopped, then."
    run = agents.runs["a1"]
    assert run.state == "stopped" and not processes_with(f"sleep {mark}")
    ended = next(e for e in events if isinstance(e, ev.AgentEnded))
    assert ended.state == "stopped" and ended.files == ["partial.txt"]
    opened.finish("done")
    assert worktrees_left() == []
    assert not (git_repo / "partial.txt").exists()  # never merged
    saved = opened.session.parts.tool_ctx.state_dir / "agents" / "a1.patch"
    assert "+partial" in saved.read_text()  # the unmerged patch is kept, and the session said where
    assert any(isinstance(e, ev.ErrorEvent) and str(saved) in e.message for e in events)


def test_the_next_session_sweeps_trees_whose_owner_is_gone(tmp_path: Path) -> None:
    root = tmp_path / "worktrees"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = root / "dead-session"
    (dead / "a1" / "src").mkdir(parents=True)
    (dead / ".owner").write_text(f"{gone.stdout.strip()} host:1\n")
    alive = root / "live-session"
    claim(alive)
    (alive / "a1").mkdir()
    orphan = root / "no-owner"
    orphan.mkdir()
    assert sorted(p.name for p in sweep(root)) == ["dead-session", "no-owner"]
    assert not dead.exists() and not orphan.exists() and (alive / "a1").is_dir()
