"""Issue 36: an agent in an isolated tree is confined to that tree. Its sandbox binds its own tree read-write and
the user's object store read-only (what its git borrows); the parent's work tree, with its ignored secrets, is
not there to read or write, and the editor's writes stay inside the agent's tree (its policy's workspace). Each
attack is tried by the agent and, as the control that proves the plant is live, by the parent itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from agents_support import LOAD_AGENT_TOOLS, control, define_agent, start

from coder.base import events as ev
from coder.engine.builder import SessionOptions, open_session

SECRET = "IGNORED-SECRET-MARK-36"


@pytest.fixture(autouse=True)
def sandbox_present() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: install it with `apt-get install bubblewrap`"


@pytest.fixture
def repo(git_repo: Path) -> Path:
    (git_repo / ".gitignore").write_text(".env\n")
    (git_repo / ".env").write_text(f"TOKEN={SECRET}\n")
    return git_repo


def attack(repo: Path) -> str:
    return (f"cat {repo}/.env; echo cat=$?; touch {repo}/escaped; ls {repo}/escaped >/dev/null 2>&1; "
            f"touch {repo}/.git/objects/planted; echo obj=$?; cat .env; echo own=$?")


def run(repo: Path, tmp_path: Path, mode: str, parent_turns: list[dict]) -> list[ev.Event]:
    script = tmp_path / f"parent-{mode}.json"
    script.write_text(json.dumps({"turns": [LOAD_AGENT_TOOLS, *parent_turns]}))
    events: list[ev.Event] = []
    opened = open_session(SessionOptions(cwd=repo, model=f"scripted:{script}", permission_mode=mode), events.append)
    opened.session.send("go")
    opened.finish("done")
    return events


def outputs(events: list[ev.Event], ident: str | None) -> list[str]:
    if ident is None:
        return [e.output for e in events if isinstance(e, ev.ToolCallFinished) and e.tool != "tool_search"]
    return [e.event.output for e in events if isinstance(e, ev.AgentRelay) and e.ident == ident
            and isinstance(e.event, ev.ToolCallFinished)]


def test_an_isolated_agents_shell_neither_reads_nor_writes_the_parents_tree(repo: Path, tmp_path: Path) -> None:
    define_agent(tmp_path, "prober", [
        {"text": "Probing.", "tool_calls": [{"name": "bash", "input": {"command": attack(repo)}}]},
        {"text": "REPORT: probed"},
    ])
    events = run(repo, tmp_path, "auto", [
        {"text": "Probe.", "tool_calls": [start("prober", "probe")]},
        {"text": "Waiting.", "tool_calls": [control("wait", "a1", timeout=120)]},
        {"text": "Done."},
    ])
    shown = outputs(events, "a1")[0]
    assert SECRET not in shown and "obj=1" in shown  # the object store is read-only to it
    assert not (repo / "escaped").exists() and not (repo / ".git" / "objects" / "planted").exists()
    started = next(e for e in events if isinstance(e, ev.AgentStarted))
    assert started.worktree and not Path(started.worktree, ".env").exists()  # ignored files stay home
    # control: the parent's own shell reads the secret and writes both places
    control_events = run(repo, tmp_path, "auto", [
        {"text": "Probe myself.", "tool_calls": [{"name": "bash", "input": {"command": attack(repo)}}]},
        {"text": "Done."},
    ])
    assert SECRET in outputs(control_events, None)[0]
    assert (repo / "escaped").exists() and (repo / ".git" / "objects" / "planted").exists()


@pytest.mark.parametrize("mode", ["auto-edit", "auto"])
def test_an_isolated_agents_editor_writes_only_its_own_tree(repo: Path, tmp_path: Path, mode: str) -> None:
    target = repo / "escaped.txt"
    write = {"name": "str_replace_based_edit_tool", "input": {"command": "create", "path": str(target),
                                                              "file_text": "escaped\n"}}
    define_agent(tmp_path, "editor", [
        {"text": "Writing outside.", "tool_calls": [write]},
        {"text": "Writing inside.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
            "command": "create", "path": "inside.txt", "file_text": "inside\n"}}]},
        {"text": "REPORT: wrote"},
    ], mode=mode, tools=("str_replace_based_edit_tool",))
    events = run(repo, tmp_path, mode, [
        {"text": "Edit.", "tool_calls": [start("editor", "edit")]},
        {"text": "Waiting.", "tool_calls": [control("wait", "a1", timeout=120)]},
        {"text": "Done."},
    ])
    denied = [e.event for e in events if isinstance(e, ev.AgentRelay) and isinstance(e.event, ev.ToolCallDenied)]
    assert denied and "outside the workspace" in denied[0].reason
    assert not target.exists()
    ended = next(e for e in events if isinstance(e, ev.AgentEnded))
    assert ended.files == ["inside.txt"] and not (repo / "inside.txt").exists()  # in its tree, until merged
    # control: the parent's editor in the same mode writes the same path
    run(repo, tmp_path, mode, [{"text": "Write.", "tool_calls": [write]}, {"text": "Done."}])
    assert target.read_text() == "escaped\n"
