"""Issue 36, end to end through `coder run` (a real process, the real bubblewrap sandbox, real git): background
subagents that write, each in its own worktree, at the same time; their patches reviewed and merged into the
parent's tree three ways; a conflict shown and nothing written; stream-json tagging each agent's events; the cap;
the session's cost including its agents'."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from agents_support import control, define_agent, run_coder, start, user_config, worktrees_left
from repo_support import git

LINES = "".join(f"line {i}\n" for i in range(1, 21))


@pytest.fixture(autouse=True)
def sandbox_present() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: install it with `apt-get install bubblewrap`"


@pytest.fixture
def repo(git_repo: Path) -> Path:
    (git_repo / "lines.txt").write_text(LINES)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "lines")
    return git_repo


def edit_line(a1: int, a2: int) -> dict:
    """A shell edit of lines.txt: the agent in worktree a1 marks line `a1`, the one in a2 line `a2`."""
    return {"name": "bash", "input": {"command": f'ME=$(basename "$PWD"); case $ME in a1) N={a1};; *) N={a2};; esac; '
                                                 'sed -i "s/^line $N$/line $N by $ME/" lines.txt && git diff --stat'}}


def test_two_writers_at_once_in_their_own_worktrees_are_reviewed_and_merged(repo: Path, tmp_path: Path) -> None:
    meet = tmp_path / "meet"  # a folder both sandboxes may write: each waits there until the other has arrived
    meet.mkdir()
    user_config(f'[sandbox]\nextra_rw = ["{meet}"]\n')
    barrier = (f'touch {meet}/$(basename "$PWD"); for i in $(seq 1 600); do [ "$(ls {meet} | wc -l)" -ge 2 ] && '
               f'break; sleep 0.1; done; echo "met $(ls {meet} | wc -l) at $PWD"')
    define_agent(tmp_path, "writer", [
        {"text": "Meeting.", "tool_calls": [{"name": "bash", "input": {"command": barrier}}]},
        {"text": "Editing.", "tool_calls": [edit_line(2, 19)]},
        {"text": "REPORT: edited lines.txt"},
    ])
    run = run_coder(repo, tmp_path, [
        {"text": "Two at once.", "tool_calls": [start("writer", "edit one"), start("writer", "edit two")]},
        {"text": "Waiting.", "tool_calls": [control("wait", timeout=200)]},
        {"text": "Waiting.", "tool_calls": [control("wait", timeout=200)]},
        {"text": "Merging.", "tool_calls": [control("merge", "a1"), control("merge", "a2")]},
        {"text": "Both merged."},
    ])
    assert run.returncode == 0, run.stderr
    started = run.parent("agent_started")
    assert [(e["ident"], e["background"]) for e in started] == [("a1", True), ("a2", True)]
    for ident in ("a1", "a2"):
        worktree = next(e["worktree"] for e in started if e["ident"] == ident)
        assert Path(worktree).name == ident and not Path(worktree).is_relative_to(repo)
        # both sandboxes were alive at the same time: each saw the other's mark
        assert f"met 2 at {worktree}" in run.outputs(ident)[0]
        assert all(e["agent_id"] == ident for e in run.child(ident))  # stream-json tags each agent's events
        assert run.child(ident, "session_start")[0]["workspace"] == worktree
    merged = run.parent("agent_merged")
    assert [(e["ident"], e["outcome"], e["verdict"]) for e in merged] == [("a1", "merged", "pass"),
                                                                         ("a2", "merged", "pass")]
    assert len(run.parent("review")) == 2
    # one file edited by both in their own trees, in two places: both edits are in the parent's tree
    assert (repo / "lines.txt").read_text() == LINES.replace("line 2\n", "line 2 by a1\n").replace(
        "line 19\n", "line 19 by a2\n")
    assert "lines.txt | 2 +-" in run.outputs("a1")[1]  # the agent's own git works in its worktree
    assert run.result["files_changed"] == ["lines.txt"]
    assert [a["patch"] for a in run.result["agents"]] == ["merged", "merged"]
    assert git(repo, "worktree", "list").count("\n") == 1 and git(repo, "branch", "--list", "coder/*") == ""
    assert worktrees_left() == []
    assert git(repo, "for-each-ref", "refs/coder/*/agents/") == ""


def test_a_conflict_is_shown_and_nothing_of_it_written(repo: Path, tmp_path: Path) -> None:
    define_agent(tmp_path, "writer", [
        {"text": "Editing.", "tool_calls": [edit_line(2, 2)]},
        {"text": "REPORT: edited line 2"},
    ])
    run = run_coder(repo, tmp_path, [
        {"text": "Two at once.", "tool_calls": [start("writer", "edit one"), start("writer", "edit two")]},
        {"text": "Waiting.", "tool_calls": [control("wait", "a1", timeout=200)]},
        {"text": "Waiting.", "tool_calls": [control("wait", "a2", timeout=200)]},
        {"text": "Merging.", "tool_calls": [control("merge", "a1"), control("merge", "a2")]},
        {"text": "Dropping the other.", "tool_calls": [control("discard", "a2")]},
        {"text": "One merged, one conflicted."},
    ])
    assert run.returncode == 0, run.stderr
    first, second = run.results("subagents")[-3:-1]
    assert not first["is_error"] and "merged: 1 file(s) written" in first["output"]
    assert second["is_error"]
    shown = second["output"]
    assert "not merged" in shown and "nothing was written" in shown and "lines.txt" in shown
    assert "line 2 by a1" in shown and "line 2 by a2" in shown  # both sides of the conflicting hunk
    assert [(e["ident"], e["outcome"]) for e in run.parent("agent_merged")] == [
        ("a1", "merged"), ("a2", "conflict"), ("a2", "discarded")]
    assert run.parent("agent_merged")[1]["conflicts"] == ["lines.txt"]
    assert (repo / "lines.txt").read_text() == LINES.replace("line 2\n", "line 2 by a1\n")
    assert worktrees_left() == []


def test_the_cap_queues_the_second_agent_until_the_first_has_ended(repo: Path, tmp_path: Path) -> None:
    user_config("[agents]\nmax_running = 1\n")
    define_agent(tmp_path, "looker", [
        {"text": "Looking.", "tool_calls": [{"name": "bash", "input": {"command": "cat lines.txt | wc -l"}}]},
        {"text": "REPORT: 20 lines"},
    ], mode="plan", tools=("bash",))
    run = run_coder(repo, tmp_path, [
        {"text": "Two.", "tool_calls": [start("looker", "count one"), start("looker", "count two")]},
        {"text": "Waiting.", "tool_calls": [control("wait", "a2", timeout=200)]},
        {"text": "Counted."},
    ])
    assert run.returncode == 0, run.stderr
    order = [(e["type"], e["ident"], e.get("state")) for e in run.events
             if e["type"] in ("agent_update", "agent_ended") and "agent_id" not in e]
    assert ("agent_update", "a2", "queued") in order
    first_running_a2 = order.index(("agent_update", "a2", "running"))
    a1_ended = order.index(("agent_ended", "a1", "done"))
    assert a1_ended < first_running_a2, order
    assert not any(e.get("worktree") for e in run.parent("agent_started"))  # read-only: no worktree
    assert run.outputs("a1") == run.outputs("a2") and "20" in run.outputs("a1")[0]


def test_the_sessions_cost_includes_its_agents(repo: Path, tmp_path: Path) -> None:
    user_config('[providers.scripted]\nprice_as = "claude-sonnet-4-6"\n')
    define_agent(tmp_path, "looker", [
        {"text": "Looking around the repository before answering.",
         "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
        {"text": "REPORT: there are files"},
    ], mode="plan", tools=("bash",))
    run = run_coder(repo, tmp_path, [
        {"text": "Asking.", "tool_calls": [start("looker", "look")]},
        {"text": "Waiting.", "tool_calls": [control("wait", "a1", timeout=200)]},
        {"text": "Looked."},
    ])
    assert run.returncode == 0, run.stderr
    own = sum(e["cost_usd"] for e in run.parent("usage"))
    agent = sum(e["cost_usd"] for e in run.child("a1", "usage"))
    assert own > 0 and agent > 0
    assert run.parent("agent_ended")[0]["cost_usd"] == pytest.approx(agent, abs=1e-6)
    assert run.result["cost_usd"] == pytest.approx(own + agent, abs=1e-5)
    assert run.parent("usage")[-1]["total_cost_usd"] == pytest.approx(own + agent, abs=1e-5)
    updates = [e for e in run.parent("agent_update") if e["ident"] == "a1"]
    assert updates[-1]["cost_usd"] == pytest.approx(agent, abs=1e-6)
    assert updates[-1]["session_cost_usd"] > updates[-1]["cost_usd"]


def test_a_background_writer_outside_git_is_refused_with_a_way_out(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    define_agent(tmp_path, "writer", [{"text": "REPORT: nothing"}])
    run = run_coder(folder, tmp_path, [
        {"text": "Starting.", "tool_calls": [start("writer", "write")]},
        {"text": "Could not."},
    ])
    assert run.returncode == 0, run.stderr
    result = run.results("task")[0]
    assert result["is_error"] and "not a git repository" in result["output"] and "without `background`" in \
        result["output"]
    assert run.parent("agent_started") == []


def test_a_wrong_agents_setting_stops_before_the_session(repo: Path, tmp_path: Path) -> None:
    user_config("[agents]\nmax_running = 0\n")
    run = run_coder(repo, tmp_path, [{"text": "never"}])
    assert run.returncode == 2
    assert "[agents] max_running = 0" in run.result["error"]
