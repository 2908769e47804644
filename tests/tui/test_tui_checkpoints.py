"""Issue 24, bug 13: `/undo` and `/rewind` in terms of the user's messages, on a real session with real git.

`/undo` after a turn that changed nothing restored the checkpoint before the previous turn and removed a file the
user had committed in between, without a word. Now `/undo` undoes only what the last message changed, says
first what it will touch (files committed since included), and `/rewind` lists the messages with what changed
after each."""

from __future__ import annotations

import subprocess
from pathlib import Path

from coder.commands.slash import run_slash
from coder.policy.base import PermissionAnswer

SCRIPT = {"turns": [
    {"tool_calls": [{"name": "write_file", "input": {"path": "new.txt", "content": "made by turn one\n"}}]},
    {"text": "wrote it"},
    {"text": "just talking, nothing changed"},
    {"tool_calls": [{"name": "write_file", "input": {"path": "src/app.py", "content": "print('three')\n"}}]},
    {"text": "changed app"},
]}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def opened_session(factory):
    return factory(SCRIPT, mode="auto")(lambda e: None, lambda r: PermissionAnswer(True), {})


def test_undo_after_a_turn_that_changed_nothing_keeps_a_committed_file(factory, git_repo: Path) -> None:
    opened = opened_session(factory)
    opened.session.send("make new.txt")
    git(git_repo, "add", "new.txt")
    git(git_repo, "commit", "-q", "-m", "keep new.txt")
    opened.session.send("what do you think?")  # changes nothing
    result = run_slash(opened, "/undo")
    assert result.error and "changed no file" in result.text and "what do you think?" in result.text
    yes = run_slash(opened, "/undo yes")
    assert yes.error and "changed no file" in yes.text
    assert (git_repo / "new.txt").read_text() == "made by turn one\n"  # the committed file is still there
    assert git(git_repo, "status", "--porcelain") == ""


def test_undo_says_what_it_touches_and_names_the_commit_first(factory, git_repo: Path) -> None:
    opened = opened_session(factory)
    opened.session.send("make new.txt")
    git(git_repo, "add", "new.txt")
    git(git_repo, "commit", "-q", "-m", "keep new.txt")
    preview = run_slash(opened, "/undo")
    assert not preview.error and "deletes `new.txt`" in preview.text
    assert "Committed since" in preview.text and "keep new.txt" in preview.text and "/undo yes" in preview.text
    assert (git_repo / "new.txt").exists()  # nothing done yet
    done = run_slash(opened, "/undo yes")
    assert not done.error and "new.txt" in done.text and not (git_repo / "new.txt").exists()
    again = run_slash(opened, "/undo")
    assert again.error and "already undone" in again.text


def test_undo_takes_only_the_last_message_and_rewind_lists_the_messages(factory, git_repo: Path) -> None:
    opened = opened_session(factory)
    opened.session.send("make new.txt")
    opened.session.send("what do you think?")
    opened.session.send("change app")
    listing = run_slash(opened, "/rewind").text
    rows = [line for line in listing.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert len(rows) == 3
    assert "make new.txt" in rows[0] and "`new.txt`" in rows[0]
    assert "what do you think?" in rows[1] and "nothing" in rows[1]
    assert "change app" in rows[2] and "`src/app.py`" in rows[2]
    run_slash(opened, "/undo yes")
    assert "hello" in (git_repo / "src" / "app.py").read_text() and (git_repo / "new.txt").exists()
    preview = run_slash(opened, "/rewind 1")
    assert "deletes `new.txt`" in preview.text and (git_repo / "new.txt").exists()
    done = run_slash(opened, "/rewind 1 yes --conversation")
    assert not done.error and not (git_repo / "new.txt").exists()
    assert opened.session.history == []  # back to before the first message
    assert run_slash(opened, "/rewind 9").error


def test_undo_names_files_changed_since_and_keeps_them(factory, git_repo: Path) -> None:
    opened = opened_session(factory)
    opened.session.send("make new.txt")
    (git_repo / "new.txt").write_text("my own words\n")  # the person edits what the turn made
    preview = run_slash(opened, "/undo")
    assert "Changed since, and saved nowhere else:** `new.txt`" in preview.text and "--force" in preview.text
    refused = run_slash(opened, "/undo yes")
    assert refused.error and "new.txt" in refused.text
    assert (git_repo / "new.txt").read_text() == "my own words\n"
    forced = run_slash(opened, "/undo yes --force")
    assert not forced.error and not (git_repo / "new.txt").exists() and "saved as checkpoint" in forced.text
