"""Checkpoints driven by the session loop, with the real git checkpoints: undo goes back one turn, a user's edit
made between turns survives it and is not counted as the session's change."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from coder.base import events as ev
from coder.context.base import PassthroughContext, Pinned
from coder.engine.session import Session
from coder.engine.session_parts import Limits, SessionParts, no_questions
from coder.models.scripted import ScriptedProvider
from coder.policy.base import ModePolicy
from coder.tools.base import Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params
from coder.vcs.checkpoints import Checkpoints
from coder.vcs.repo import Repo

WRITE = ToolContract("write", "Write a file.", {"type": "object", "properties": {"name": {"type": "string"}},
                                                "required": ["name"]}, "write")


@dataclass(frozen=True)
class Name(Params):
    name: str


class WriteTool(Tool[Name]):
    contract = WRITE

    def run(self, params: Name, ctx: ToolContext) -> ToolResult:
        (ctx.workspace / params.name).write_text(f"{params.name} by the agent\n")
        return ToolResult("ok")  # reports nothing: the checkpoint must find the change, as for shell commands


TWO_WRITES = {"turns": [{"tool_calls": [{"name": "write", "input": {"name": "a.txt"}}]}, {"text": "one"},
                        {"tool_calls": [{"name": "write", "input": {"name": "b.txt"}}]}, {"text": "two"}]}


def two_write_session(repo: Path, session_id: str) -> tuple[Session, Checkpoints, list[ev.Event]]:
    """A session whose two user turns each write one file, with real checkpoints; and the events it emits."""
    seen: list[ev.Event] = []
    checkpoints = Checkpoints(Repo.open(repo), session_id)
    ctx = ToolContext(repo, repo, session_id, threading.Event(), repo.parent / "state")
    parts = SessionParts(session_id, ScriptedProvider(TWO_WRITES), {"write": WriteTool()}, ModePolicy("auto"),
                         PassthroughContext(), ctx, "sys", Pinned(), Limits(), seen.append, no_questions,
                         checkpointer=checkpoints)
    return Session(parts), checkpoints, seen


def test_undo_keeps_user_edits_between_turns(git_repo: Path) -> None:
    session, checkpoints, seen = two_write_session(git_repo, "s-cp")
    session.send("first")
    (git_repo / "README.md").write_text("# edited by the user between turns\n")
    session.send("second")
    assert session.stats.files_changed == {"a.txt", "b.txt"}  # the user's README edit is not the session's
    labels = [e.label for e in seen if isinstance(e, ev.CheckpointEvent)]
    assert labels == ["turn 2", "before turn 3", "turn 4"]
    checkpoints.undo()
    assert not (git_repo / "b.txt").exists() and (git_repo / "a.txt").exists()
    assert "edited by the user" in (git_repo / "README.md").read_text()


def test_rewind_conversation_and_resume_honours_it(git_repo: Path) -> None:
    from coder.engine.history import rebuild

    session, checkpoints, seen = two_write_session(git_repo, "s-rw")
    session.send("first")
    first = next(e for e in seen if isinstance(e, ev.CheckpointEvent))
    session.send("second")
    assert len(session.history) == 8
    checkpoints.restore(int(first.id))
    dropped = session.rewind_conversation(first.id)
    assert dropped == 4 and [m.text() for m in session.history if m.role == "user"][0] == "first"
    assert not (git_repo / "b.txt").exists()
    restored = rebuild(e for e in seen if e.persist)
    assert len(restored.history) == 4 and restored.history[-1].text() == "one"


def test_old_sessions_checkpoints_are_pruned(git_repo: Path) -> None:
    import time as _time

    from coder.vcs.checkpoints import list_sessions, prune_sessions

    for name in ("s-old1", "s-old2", "s-new"):
        cp = Checkpoints(Repo.open(git_repo), name)
        (git_repo / f"{name}.txt").write_text(name)
        cp.snapshot("turn")
        _time.sleep(1.1)  # ref creation dates have one-second resolution
    pruned = prune_sessions(Repo.open(git_repo), keep_sessions=1, current="s-old1")
    assert pruned == ["s-old2"]
    assert {s.session_id for s in list_sessions(Repo.open(git_repo))} == {"s-old1", "s-new"}


def test_undo_never_touches_coders_own_folder(git_repo: Path) -> None:
    checkpoints = Checkpoints(Repo.open(git_repo), "s-own")
    (git_repo / "new.txt").write_text("agent\n")
    (git_repo / ".coder").mkdir()
    (git_repo / ".coder" / "permissions.json").write_text('{"allow": ["bash(npm test*)"]}')
    checkpoint = checkpoints.snapshot("turn 1")
    assert checkpoint is not None and checkpoint.files_changed == ["new.txt"]
    (git_repo / ".coder" / "config.toml").write_text("max_turns = 5\n")
    checkpoints.undo()
    assert not (git_repo / "new.txt").exists()
    assert (git_repo / ".coder" / "permissions.json").exists() and (git_repo / ".coder" / "config.toml").exists()
