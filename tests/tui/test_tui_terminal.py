"""The real `coder` binary in a real terminal (tmux): start, type a task, approve an edit and a shell command (run
in the real sandbox), see the results, quit; the full-screen app and `--plain` both."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from terminal_support import ARMED, Tmux, coder_command, quit_plain  # type: ignore[import-not-found]

SCRIPT = {"turns": [
    {"text": "Creating the notes file.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
        "command": "create", "path": "notes.txt", "file_text": "hello\nworld\n"}}]},
    {"text": "Now counting it.", "tool_calls": [{"name": "bash", "input": {
        "command": "wc -c notes.txt > count.txt && cat count.txt"}}]},
    {"text": "Created notes.txt for you."},
]}


@pytest.fixture
def script_file(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def test_textual_app_in_tmux_approve_and_quit(git_repo: Path, script_file: Path, tmp_path: Path) -> None:
    tmux = Tmux(tmp_path, coder_command(script_file), git_repo)
    try:
        tmux.wait("idle │")
        tmux.type("please write notes")
        tmux.send("Enter")
        screen = tmux.wait(ARMED)  # the prompt took the focus and its keys answer now
        assert "edit notes.txt (create)" in screen and "4. No" in screen
        tmux.send("1")  # yes, this once
        screen = tmux.wait("Allow bash: wc -c notes.txt")  # a shell command, run in the sandbox once approved
        tmux.wait(ARMED)
        tmux.send("Enter")  # the highlighted choice: yes, this once
        screen = tmux.wait("Created notes.txt for you.")
        assert "+hello" in screen  # the edit's diff, shown open
        assert "✓ 12 notes.txt" in screen  # the command's one-line result
        assert (git_repo / "count.txt").read_text().strip() == "12 notes.txt"
        assert (git_repo / "notes.txt").read_text() == "hello\nworld\n"
        tmux.wait("checkpoint 1")
        tmux.wait("idle │")  # the turn has ended: Ctrl+C now means quit, not interrupt
        tmux.run("resize-window", "-t", "t", "-x", "80", "-y", "24")
        tmux.wait("Created notes.txt for you.", "checkpoint 1")  # the latest turn stays in view, no jump to the top
        tmux.send("C-c")
        tmux.wait("again to quit")
        started = time.monotonic()
        tmux.send("C-c")
        screen = tmux.wait("EXIT=0")
        assert "is saved; `coder --resume" in screen
        assert time.monotonic() - started < 20, "quitting took too long"  # waited on something, not just slow
    finally:
        tmux.close()


def test_plain_repl_in_tmux_approve_and_quit(git_repo: Path, script_file: Path, tmp_path: Path) -> None:
    tmux = Tmux(tmp_path, coder_command(script_file, "--plain"), git_repo)
    try:
        tmux.wait("ask>")  # capture-pane drops the trailing space
        tmux.type("please write notes")
        tmux.send("Enter")
        screen = tmux.wait("Esc: deny and stop the turn >")
        assert "Allow edit notes.txt (create)?" in screen and "+hello" in screen  # the change, as a diff
        assert "Creating the notes file." in screen
        time.sleep(0.7)  # the question takes keys once the keyboard was quiet for a moment
        tmux.type("1")  # one key, no Enter
        tmux.wait("Allow bash: wc -c notes.txt")
        time.sleep(0.7)
        tmux.send("Enter")  # Enter: the marked default, allow once
        screen = tmux.wait("Created notes.txt for you.")
        assert "✓ 12 notes.txt" in screen
        tmux.wait("ctx ")  # the status line printed after the turn: the prompt is next
        assert (git_repo / "notes.txt").read_text() == "hello\nworld\n"
        quit_plain(tmux)
    finally:
        tmux.close()


def test_plain_repl_escape_interrupts_wraps_words_and_keeps_ids_whole(git_repo: Path, tmp_path: Path) -> None:
    words = [f"wd{i}{'x' * (i % 7)}" for i in range(90)]
    script = tmp_path / "long.json"  # three paragraphs, one a streamed piece: each is rendered when it ends
    text = "\n\n".join(" ".join(words[i:i + 30]) for i in (0, 30, 60))
    script.write_text(json.dumps({"turns": [{"text": text}, {"text": "Onwards."}]}))
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "coder" / "config.toml"  # provider settings: user only
    user_config.parent.mkdir(parents=True, exist_ok=True)  # three stream pieces a minute apart: Esc ends the pause
    user_config.write_text("[providers.scripted]\nchunk_delay = 60\n")
    tmux = Tmux(tmp_path, coder_command(script, "--plain"), git_repo, width=80, height=40)
    try:
        tmux.wait("ask>")
        tmux.type("talk")
        tmux.send("Enter")
        tmux.wait("wd29")  # the first piece is out; the rest would come a minute later
        tmux.send("Escape")
        screen = tmux.wait("turn stopped: interrupted", timeout=10)
        assert "wd89" not in screen and "^[" not in screen
        streamed = [t for line in screen.splitlines() for t in line.split() if t.startswith("wd")]
        assert len(streamed) >= 30 and all(t in words for t in streamed), streamed  # no word cut at the edge
        assert all(len(line) <= 80 for line in screen.splitlines())
        tmux.wait("ctx ")
        tmux.type_at_prompt("/sessions")
        tmux.send("Enter")
        screen = tmux.wait("/resume ID")
        sid = re.search(r"session (\d{8}-\d{6}-[0-9a-f]{6})", screen).group(1)  # from the banner
        listing = screen[screen.rindex("/sessions"):].splitlines()
        assert any(sid in line and "this one" in line for line in listing), screen  # whole, on one line
        tmux.type("again")
        tmux.send("Enter")
        tmux.wait("Onwards.", timeout=10)  # one word: one chunk, no pause
        tmux.wait("ctx ")
        quit_plain(tmux)
    finally:
        tmux.close()


def test_plain_repl_escape_on_a_permission_prompt_denies_and_stops(git_repo: Path, script_file: Path,
                                                                   tmp_path: Path) -> None:
    tmux = Tmux(tmp_path, coder_command(script_file, "--plain"), git_repo)
    try:
        tmux.wait("ask>")
        tmux.type("please write notes")
        tmux.send("Enter")
        tmux.wait("Esc: deny and stop the turn >")
        time.sleep(0.7)
        tmux.send("Escape")
        screen = tmux.wait("turn stopped: interrupted", timeout=10)
        assert "Now counting it." not in screen and not (git_repo / "notes.txt").exists()
        tmux.wait("ctx ")
        quit_plain(tmux)
    finally:
        tmux.close()


def typist(tmux: Tmux, text: str, every: float = 0.12) -> None:
    """A person typing: one key every `every` seconds."""
    for ch in text:
        tmux.type(ch)
        time.sleep(every)


def test_textual_app_in_tmux_a_typist_over_a_question_that_appears_mid_word(git_repo: Path, script_file: Path,
                                                                              tmp_path: Path) -> None:
    """Issue 32: a typist at 120 ms a key, typing on while the question appears and again once it has the focus,
    answers nothing and loses nothing. Only the digits of lasting choices are typed (they never answer alone),
    so stretched gaps on a loaded machine cannot make a grant (the timing rules: test_tui_choices.py)."""
    tmux = Tmux(tmp_path, coder_command(script_file), git_repo, width=80, height=24)
    try:
        tmux.wait("idle")
        tmux.type("please write notes")
        tmux.send("Enter")
        sentence = "also run lint and fix 2 tests then 3 more"
        typist(tmux, sentence)  # the question appears while this is typed
        tmux.wait("Allow", sentence, "Tab answers this question")  # in the input, whole
        assert not (git_repo / "notes.txt").exists()
        tmux.send("Enter")  # the line is queued; the input is empty, the question takes the focus
        tmux.wait(ARMED)
        typist(tmux, "2 more tests")
        screen = tmux.wait("2 more tests")
        time.sleep(0.5)
        screen = tmux.screen()
        assert "saved:" not in screen and "2 more tests" in screen and not (git_repo / "notes.txt").exists()
        tmux.send("C-u")  # clear the input: the question takes the focus again
        tmux.wait(ARMED)
        tmux.send("1")  # yes, this once
        tmux.wait("Allow bash: wc -c notes.txt")
        assert (git_repo / "notes.txt").exists()
        tmux.wait(ARMED)
        tmux.send("Escape")  # deny and stop; the queued line comes back into the input
        screen = tmux.wait("turn stopped: interrupted")
        tmux.wait(sentence)
        tmux.send("C-c")  # clears the input
        tmux.quit_app()
    finally:
        tmux.close()


def test_plain_repl_in_tmux_a_typist_over_a_question_keeps_typing(git_repo: Path, script_file: Path,
                                                                   tmp_path: Path) -> None:
    """The same typist in `--plain`: what is typed while the question is up is the next message's start."""
    tmux = Tmux(tmp_path, coder_command(script_file, "--plain"), git_repo)
    try:
        tmux.wait("ask>")
        tmux.type("please write notes")
        tmux.send("Enter")
        typist(tmux, "also 2 more ")  # the question appears while this is typed
        tmux.wait("Esc: deny and stop the turn >")
        typist(tmux, "and 3 tests")
        time.sleep(0.8)
        screen = tmux.screen()
        assert "❯ 1. Yes, this once" in screen and "Allow bash" not in screen and not (git_repo / "notes.txt").exists()
        tmux.send("1")  # deliberate: the keyboard was quiet
        tmux.wait("Allow bash: wc -c notes.txt")
        time.sleep(0.7)
        tmux.send("Enter")
        tmux.wait("Created notes.txt for you.")
        tmux.wait("ctx ")
        screen = tmux.wait("ask> also 2 more and 3 tests")  # the type-ahead starts the next message
        tmux.send("C-u")
        tmux.type("/quit")
        tmux.send("Enter")
        tmux.wait("EXIT=0")
    finally:
        tmux.close()


def test_plain_repl_in_tmux_echoes_type_ahead_and_renders_markdown(git_repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "md.json"
    script.write_text(json.dumps({"turns": [{"text": "# Title\n\nSome **bold** words.\n\n- one\n- two\n"},
                                            {"text": "Second answer."}]}))
    user_config = Path(os.environ["XDG_CONFIG_HOME"]) / "coder" / "config.toml"
    user_config.parent.mkdir(parents=True, exist_ok=True)
    user_config.write_text("[providers.scripted]\nchunk_delay = 0.7\n")
    tmux = Tmux(tmp_path, coder_command(script, "--plain"), git_repo, width=80, height=30)
    try:
        tmux.wait("ask>")
        tmux.type("talk")
        tmux.send("Enter")
        time.sleep(0.3)
        tmux.type("typed ahead")  # during the turn: shown as typed
        tmux.wait("typed ahead")
        screen = tmux.wait("• two")  # a rendered list, not "- two"
        assert "**bold**" not in screen and "# Title" not in screen and "Title" in screen
        tmux.wait("ctx ")
        screen = tmux.wait("ask> typed ahead")  # and handed to the next prompt
        tmux.send("C-u")
        tmux.type("/quit")
        tmux.send("Enter")
        tmux.wait("EXIT=0")
    finally:
        tmux.close()


def test_textual_app_leaves_the_conversation_in_the_scrollback(git_repo: Path, tmp_path: Path) -> None:
    """Issues 24 and 47: the app's alternate screen vanishes on quit; the conversation is printed where the shell
    keeps it (it was the last turn only), rendered, each call in one line."""
    script = tmp_path / "answer.json"
    script.write_text(json.dumps({"turns": [
        {"text": "First answer.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
        {"text": "Listed."},
        {"text": "## Result\n\nThe **parser** is fixed.\n\n- one\n- two\n"}]}))
    tmux = Tmux(tmp_path, coder_command(script, "--permission-mode", "auto"), git_repo, width=80, height=24)
    try:
        tmux.wait("idle")
        for message in ("hello", "fix the parser"):
            tmux.type(message)
            tmux.send("Enter")
            time.sleep(0.3)
        tmux.wait("The parser is fixed.")
        tmux.wait("idle")
        tmux.quit_app()
        tmux.run("resize-window", "-t", "t", "-y", "60")  # the scrollback's lines come back into the pane
        after = tmux.run("capture-pane", "-p", "-t", "t", "-S", "-200")
        after = after[after.index("› hello"):]  # the shell's screen now: the app is gone
        assert after.index("First answer.") < after.index("▶ bash: ls") < after.index("Listed.")
        assert after.index("Listed.") < after.index("› fix the parser") < after.index("The parser is fixed.")
        assert "Result" in after and "**parser**" not in after and "• one" in after
        assert after.index("The parser is fixed.") < after.index("is saved; `coder --resume")
    finally:
        tmux.close()


def test_textual_app_shows_a_running_commands_last_line(git_repo: Path, tmp_path: Path) -> None:
    """Issue 24: a long command showed nothing until it ended; its latest output line and time now show."""
    script = tmp_path / "slow.json"
    script.write_text(json.dumps({"turns": [
        {"text": "Running it.", "tool_calls": [{"name": "bash", "input": {
            "command": "for i in 1 2 3 4; do echo step$i; sleep 1; done"}}]},
        {"text": "All steps ran."}]}))
    tmux = Tmux(tmp_path, coder_command(script).replace("--permission-mode ask", "--permission-mode auto"),
                git_repo, width=100, height=30)
    try:
        tmux.wait("idle")
        tmux.type("run the steps")
        tmux.send("Enter")
        screen = tmux.wait("│ step2", timeout=20)  # while it runs: the last line so far, in the block's title
        assert "All steps ran." not in screen and "⋯ bash: for i in" in screen
        tmux.wait("All steps ran.", timeout=20)
        screen = tmux.wait("idle")
        assert "✓ step4" in screen or "✓ step1" in screen, screen  # the finished result replaces the live line
        tmux.quit_app()
    finally:
        tmux.close()


def plain_command_turn(tmp_path: Path, git_repo: Path, command: str, then: str, width: int) -> Tmux:
    """`--plain` in auto mode, sent a message whose answer runs `command` (in the real sandbox), then says `then`."""
    script = tmp_path / "command.json"
    script.write_text(json.dumps({"turns": [
        {"text": "Running it.", "tool_calls": [{"name": "bash", "input": {"command": command}}]}, {"text": then}]}))
    line = coder_command(script, "--plain").replace("--permission-mode ask", "--permission-mode auto")
    tmux = Tmux(tmp_path, line, git_repo, width=width, height=30)
    tmux.wait("auto>")
    tmux.type("run it")
    tmux.send("Enter")
    return tmux


def test_plain_repl_shows_a_running_commands_lines_and_time(git_repo: Path, tmp_path: Path) -> None:
    """Issue 24: `--plain` printed nothing while a command ran; its lines now come as they are made, with the
    time the command has run, in the normal scrollback (the real sandbox runs the command)."""
    tmux = plain_command_turn(tmp_path, git_repo, "for i in 1 2 3 4; do echo step$i; sleep 1; done; "
                              "printf 'no newline'; sleep 1", "All steps ran.", 100)
    try:
        screen = tmux.wait("│ step2", timeout=20)  # while it runs: its lines so far
        assert "All steps ran." not in screen and "step4" not in screen, screen
        assert re.search(r"\b[01]s │ step1", screen), screen  # with the time the command had run
        screen = tmux.wait("All steps ran.", timeout=20)
        assert re.search(r"\b[34]s │ step4", screen), screen
        assert "│ no newline" in screen  # a last line without its newline is not lost
        assert screen.index("│ step4") < screen.index("✓ step1")  # then the result line, as before
        tmux.wait("ctx ")
        quit_plain(tmux)
    finally:
        tmux.close()


def test_plain_repl_ctrl_b_sends_the_running_command_to_the_background(git_repo: Path, tmp_path: Path) -> None:
    """Ctrl+B in `--plain` while a command runs: the call comes back at once as a background job, the turn goes
    on, and the REPL says when the job ended (in the real sandbox)."""
    tmux = plain_command_turn(tmp_path, git_repo, "for i in 1 2 3 4 5 6; do echo part$i; sleep 0.5; done; "
                              "echo built > built.txt", "Carrying on meanwhile.", 120)
    try:
        tmux.wait("│ part1", timeout=20)
        tmux.send("C-b")
        screen = tmux.wait("Carrying on meanwhile.", timeout=10)
        assert "⇥ background job bg1" in screen and not (git_repo / "built.txt").exists(), screen
        tmux.wait("ctx ")
        deadline = time.monotonic() + 15
        while not (git_repo / "built.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (git_repo / "built.txt").read_text() == "built\n"  # it ran to its end
        # said at once, above the waiting prompt (issue 32: it waited for the next turn), no key pressed
        tmux.wait("background job bg1 (for i in", "ended with exit code 0")
        quit_plain(tmux)
    finally:
        tmux.close()
