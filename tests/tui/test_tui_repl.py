"""The plain REPL driven through pipes (no terminal): same session, commands and prompts as the app."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tui_support import app_args  # type: ignore[import-not-found]

from coder.repl.repl import Repl

SCRIPT = {"turns": [
    {"text": "Writing it.", "tool_calls": [{"name": "write_file", "input": {"path": "out.txt", "content": "one\n"}}]},
    {"text": "Written."},
    {"text": "Still here."},
]}


def run_repl(factory, git_repo: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch, script=SCRIPT,
             mode: str = "ask") -> tuple[str, object]:
    f = factory(script, mode=mode)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(line + "\n" for line in lines)))
    monkeypatch.setattr(sys, "stdout", out)
    repl = Repl(app_args(git_repo, plain=True), opener=f, out=out)
    assert repl.run() == 0
    return out.getvalue(), f


def test_repl_send_approve_command_and_quit(factory, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, f = run_repl(factory, git_repo, ["write it", "y", "/diff", "/undo", "/undo yes", "/quit"], monkeypatch)
    assert "ask> write it" in text
    assert "Allow write_file: out.txt?" in text and "end of input: deny and stop the turn > y" in text
    assert "✓ wrote out.txt" in text and "+one" in text and "Written." in text
    assert "checkpoint 1" in text and "/undo yes" in text and "Undone your last" in text and "Bye." in text
    assert not (git_repo / "out.txt").exists()  # /undo removed it
    from coder.base import paths
    from coder.store.db import SessionStore

    assert SessionStore(paths.sessions_db()).session(f.opened[0].session.id).status == "done"


def test_repl_deny_and_end_of_input(factory, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, f = run_repl(factory, git_repo, ["write it", "n"], monkeypatch)
    assert "✗ Permission denied" in text and not (git_repo / "out.txt").exists()


def test_repl_resume_replays_the_conversation(factory, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, f = run_repl(factory, git_repo, ["write it", "y", "/clear"], monkeypatch)
    assert len(f.opened) == 2  # /clear opened a fresh session
    first = f.opened[0].session.id
    text, g = run_repl(factory, git_repo, [f"/resume {first}", "more please", "/quit"], monkeypatch)
    assert "── resumed: earlier conversation above ──" in text
    assert "> write it" in text and "Written." in text
    assert g.opened[-1].session.id == first and "Writing it." in text


def test_unknown_command_and_mode(factory, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text, _ = run_repl(factory, git_repo, ["/wat", "/mode auto-edit", "/mode"], monkeypatch)
    assert "Unknown command /wat" in text  # Markdown, drawn: the backticks are a code span
    assert "auto-edit> " in text  # the prompt shows the mode and ends with "> "


def test_coder_plain_is_chosen_for_pipes(git_repo: Path, tmp_path: Path) -> None:
    """`coder` with stdout not a terminal runs the REPL, through the real binary and the real builder."""
    import json

    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "hello from the script"}]}))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-m", "coder", "--model", f"scripted:{script}"], cwd=git_repo, env=env,
                         input="say hello\n/cost\n/quit\n", capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ask> say hello" in out.stdout and "hello from the script" in out.stdout
    assert "Session cost" in out.stdout and "Bye." in out.stdout
