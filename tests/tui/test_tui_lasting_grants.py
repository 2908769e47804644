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


#: the plan question at once: an Enter or a `1` typed as it appears once approved the plan in auto-edit (every
#: edit of the session without asking) in both frontends
PLAN_SCRIPT = {"turns": [{"text": "Planning.", "tool_calls": [{"name": "exit_plan", "input": {
                             "plan": "# Plan\nmake it"}}]},
                         {"text": "Making it.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
                             "command": "create", "path": "made.txt", "file_text": "hi\n"}}]},
                         {"text": "Made."}]}
AUTO_EDIT = "Yes, save: go on in auto-edit"
APPROVED = "plan approved by the user; mode auto-edit"


@pytest.fixture
def plan_script(tmp_path: Path) -> Path:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(PLAN_SCRIPT))
    return path


def typist_at_the_plan(tmux: Tmux, keys: str) -> None:
    """Keys as the plan question appears (no pause): Enter, `1` and Enter, Enter held, a paste."""
    if keys == "held":
        held_enter(tmux, count=20)
    elif keys == "paste":
        paste(tmux, "1\r")
    else:
        tmux.type(keys)


@pytest.mark.parametrize("keys", ["\r", "1\r", "held", "paste"])
def test_app_no_typing_approves_a_plan_in_auto_edit(git_repo: Path, plan_script: Path, tmp_path: Path,
                                                    keys: str) -> None:
    """The plan screen focused its auto-edit button and took `1` at once: an Enter or a `1` typed as it
    appeared switched the session to auto-edit. Now its keys count only once it has been up a moment, and
    auto-edit only through its confirmation; the deliberate way (control) still approves in auto-edit."""
    command = coder_command(plan_script).replace("--permission-mode ask", "--permission-mode plan")
    tmux = Tmux(tmp_path, command, git_repo, width=110, height=50)
    try:
        tmux.wait("idle │")
        tmux.type("make it")
        tmux.send("Enter")
        tmux.wait("Keep planning")
        typist_at_the_plan(tmux, keys)
        time.sleep(1.5)
        screen = tmux.screen()
        assert "mode auto-edit" not in screen and "auto-edit │" not in screen and APPROVED not in screen, screen
        if keys == "held":  # Enter held on past the moment the question counts keys: approved in ask mode at most
            return  # (and the edit then allowed once)
        assert not (git_repo / "made.txt").exists()
        if keys != "\r":  # a lone Enter was not typing; the rest went to the feedback box, which took the focus
            while ARMED in tmux.screen():  # the question gave the focus away (polled: drawn a moment later)
                time.sleep(0.1)
            tmux.send("Tab")  # from the feedback box back to the question (the way a person goes)
        tmux.wait(ARMED)
        tmux.send("1")  # the deliberate way: number, Enter, read it, Down, Enter
        tmux.send("Enter")
        tmux.wait(AUTO_EDIT, DELIBERATE)
        tmux.send("Down")
        tmux.wait("Enter saves it · ↑")
        tmux.send("Enter")
        tmux.wait(APPROVED, "Made.")
        assert (git_repo / "made.txt").exists()  # in auto-edit: the edit ran without asking
    finally:
        tmux.close()


@pytest.mark.parametrize("keys", ["1\r", "held"])
def test_plain_no_typing_approves_a_plan_in_auto_edit(git_repo: Path, plan_script: Path, tmp_path: Path,
                                                      keys: str) -> None:
    """`--plain` read the plan's answer as a line: `1` and Enter typed as it appeared approved it in auto-edit."""
    command = coder_command(plan_script, "--plain").replace("--permission-mode ask", "--permission-mode plan")
    tmux = Tmux(tmp_path, command, git_repo, width=110, height=50)
    try:
        tmux.wait("plan>")
        tmux.type_at_prompt("make it")
        tmux.send("Enter")
        tmux.wait("Plan proposed", "auto-edit")  # the question (on main: "[1] approve, auto-edit")
        typist_at_the_plan(tmux, keys)
        time.sleep(1.5)
        screen = tmux.screen()
        assert APPROVED not in screen, screen
        if keys == "held":  # Enter held on past the moment the question counts keys: approved in ask mode at most
            return  # (and the edit then allowed once)
        assert not (git_repo / "made.txt").exists(), screen
        time.sleep(0.7)  # the question takes keys once the keyboard was quiet for a moment
        tmux.type("1")  # the deliberate way (control)
        tmux.send("Enter")
        tmux.wait(AUTO_EDIT, "Read it first")
        time.sleep(1.3)  # read it
        tmux.send("Down")
        tmux.wait("❯ Yes, save")
        tmux.send("Enter")
        tmux.wait(APPROVED, "Made.")
        assert (git_repo / "made.txt").exists()
        tmux.wait("ctx ")
        tmux.send("C-u")
        quit_plain(tmux)
    finally:
        tmux.close()
