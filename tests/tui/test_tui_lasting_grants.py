"""Issue 47: no key sequence grants a lasting rule. In a real terminal (tmux), the app and `--plain`: a permission
question up, then a typist answering the model's last question (`3` and Enter 50 ms later; `2` and Enter; a burst
with more words; a paste; Enter held down). None of it saves a rule; the deliberate way (number, Enter, a pause,
Down, Enter) does, and the next call runs without asking. The rules themselves, on a clock the test holds:
test_tui_choices.py."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from terminal_support import ARMED, Tmux, coder_command, quit_plain  # type: ignore[import-not-found]

from coder.policy.rules import remembered_rules_path

CALLS = 6
#: six calls the rule bash(touch*) covers, then the answer: the typists' keys may allow a call once or twice
SCRIPT = {"turns": [*({"text": f"Making file {i}.", "tool_calls": [{"name": "bash", "input": {
    "command": f"touch made{i}.txt"}}]} for i in range(1, CALLS + 1)), {"text": "All files are made."}]}
CONFIRMING = "Yes, save: allow bash(touch*)"
DELIBERATE = "↓ then Enter saves it"  # the confirmation's hint once it counts keys


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "touch.json"
    path.write_text(json.dumps(SCRIPT))
    return path


def saved_anything(git_repo: Path, screen: str) -> bool:
    return "saved:" in screen or remembered_rules_path(git_repo).exists()


def held_enter(tmux: Tmux, count: int = 40, every: float = 0.03) -> None:
    """Enter held down: the terminal's key repeat, one Enter every 30 ms."""
    for _ in range(count):
        tmux.send("Enter")
        time.sleep(every)


def paste(tmux: Tmux, text: str) -> None:
    """A paste, as a terminal sends it (bracketed when the program asked for that)."""
    tmux.run("set-buffer", "--", text)
    tmux.run("paste-buffer", "-p", "-t", "t")


def test_app_no_typing_saves_a_lasting_rule(git_repo: Path, script: Path, tmp_path: Path) -> None:
    tmux = Tmux(tmp_path, coder_command(script), git_repo, width=110, height=60)  # the saved line stays in view
    try:
        tmux.wait("idle │")
        tmux.type("make the files")
        tmux.send("Enter")
        tmux.wait("Allow bash: touch made1.txt", ARMED)
        time.sleep(1.5)  # the question up for a while, as in the trial
        tmux.type("3")
        time.sleep(0.05)
        tmux.send("Enter")  # someone answering "3" to the model
        tmux.wait(CONFIRMING)
        time.sleep(2.0)  # the confirmation, left alone, saves nothing
        screen = tmux.screen()
        assert not saved_anything(git_repo, screen) and not (git_repo / "made1.txt").exists(), screen
        tmux.type("ok thanks")  # typing on: the confirmation goes, the keys go to the input
        screen = tmux.wait("3ok thanks")
        assert CONFIRMING not in screen and not saved_anything(git_repo, screen)
        tmux.send("C-u")
        # bursts: the digit, Enter and more at once; Enter held down after the digit (at most "allow once"); a paste
        for keys in ("2\r", "3\rsure, 3", "3\r\r\r", "held", "paste"):
            tmux.wait(ARMED)
            if keys == "held":
                tmux.type("3")
                held_enter(tmux)
            elif keys == "paste":
                paste(tmux, "3\r")
            else:
                tmux.type(keys)
            time.sleep(1.5)
            screen = tmux.screen()
            assert not saved_anything(git_repo, screen), (keys, screen)
            tmux.send("C-u")  # a confirmation still up goes; then what went to the input
            tmux.send("C-u")

        tmux.wait(ARMED)
        tmux.send("3")  # the deliberate way: number, Enter, read it, Down, Enter
        tmux.send("Enter")
        tmux.wait(DELIBERATE)
        tmux.send("Down")
        tmux.wait("Enter saves it · ↑")  # "Yes, save" highlighted (not "↓ then Enter saves it")
        tmux.send("Enter")
        tmux.wait("saved: allow bash(touch*) in this project")  # at once: the calls it allows may scroll it away
        tmux.wait("All files are made.", "idle │")
        assert remembered_rules_path(git_repo).exists() and (git_repo / f"made{CALLS}.txt").exists()
        tmux.send("C-u")
        tmux.quit_app()
    finally:
        tmux.close()


def wait_count(tmux: Tmux, needle: str, count: int, timeout: float = 30.0) -> str:
    """The screen once `needle` shows `count` times or more."""
    end = time.monotonic() + timeout
    while True:
        screen = tmux.screen()
        if screen.count(needle) >= count:
            return screen
        assert time.monotonic() < end, f"{needle!r} never showed {count} times; the screen was:\n{screen}"
        time.sleep(0.1)


def test_plain_no_typing_saves_a_lasting_rule(git_repo: Path, script: Path, tmp_path: Path) -> None:
    tmux = Tmux(tmp_path, coder_command(script, "--plain"), git_repo, width=110, height=60)
    try:
        tmux.wait("ask>")
        tmux.type_at_prompt("make the files")
        tmux.send("Enter")
        tmux.wait("Allow bash: touch made1.txt?", "Esc: deny and stop the turn >")
        time.sleep(1.5)
        tmux.type("3")
        time.sleep(0.05)
        tmux.send("Enter")
        tmux.wait(CONFIRMING, "Read it first")
        time.sleep(2.0)
        screen = tmux.screen()
        assert not saved_anything(git_repo, screen) and not (git_repo / "made1.txt").exists(), screen
        tmux.type("ok")  # typing on: back to the choices, the keys kept for the next message
        wait_count(tmux, "❯ 1. Yes, this once", 2)
        for keys in ("2\r", "3\rsure, 3", "3\r\r\r", "held"):
            time.sleep(0.7)
            if keys == "held":
                tmux.type("3")
                held_enter(tmux)
            else:
                tmux.type(keys)
            time.sleep(1.5)
            screen = tmux.screen()
            assert not saved_anything(git_repo, screen), (keys, screen)
        time.sleep(0.7)
        tmux.type("3")
        tmux.send("Enter")
        tmux.wait(CONFIRMING, "Read it first")
        time.sleep(1.3)  # read it
        tmux.send("Down")
        tmux.wait("❯ Yes, save")
        tmux.send("Enter")
        tmux.wait("saved: allow bash(touch*) in this project", "All files are made.")
        assert remembered_rules_path(git_repo).exists() and (git_repo / f"made{CALLS}.txt").exists()
        tmux.wait("ctx ")
        tmux.send("C-u")
        quit_plain(tmux)
    finally:
        tmux.close()


def test_rules_path_is_the_users_not_the_repositorys(git_repo: Path) -> None:
    """The file the tests above look for is in the state dir this test run owns (tests/conftest.py)."""
    assert str(remembered_rules_path(git_repo)).startswith(os.environ["XDG_STATE_HOME"])
