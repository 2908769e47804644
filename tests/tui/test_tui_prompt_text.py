"""Issue 47: prompts that say the right thing, in a real terminal (tmux), the app and `--plain`: a replacement's
diff is numbered where the change is in its file (it read `@@ -1,2 +1,4 @@` for a change at lines 9-10)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from terminal_support import Tmux, coder_command  # type: ignore[import-not-found]


@pytest.mark.parametrize("plain", [False, True])
def test_an_edit_prompts_diff_is_numbered_where_the_change_is(git_repo: Path, tmp_path: Path, plain: bool) -> None:
    (git_repo / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 13)))
    script = tmp_path / "edit.json"
    script.write_text(json.dumps({"turns": [{"text": "Adding two lines.", "tool_calls": [{
        "name": "str_replace_based_edit_tool", "input": {"command": "str_replace", "path": "notes.txt",
                                                         "old_str": "line 9\nline 10\n",
                                                         "new_str": "line 9\nnew a\nnew b\nline 10\n"}}]}]}))
    tmux = Tmux(tmp_path, coder_command(script, *(["--plain"] if plain else [])), git_repo, width=110, height=40)
    try:
        tmux.wait("ask>" if plain else "idle │")
        if plain:
            tmux.type_at_prompt("add them")
        else:
            tmux.type("add them")
        tmux.send("Enter")
        screen = tmux.wait("Allow edit notes.txt", "+new b")
        assert "@@ -9,2 +9,4 @@" in screen and "@@ -1,2 +1,4 @@" not in screen
        time.sleep(0.7)  # a question's keys count once the keyboard was quiet a moment
        tmux.send("Escape")  # deny and stop
        tmux.wait("interrupted")
    finally:
        tmux.close()


def wait_flat(tmux: Tmux, *needles: str, timeout: float = 30.0) -> None:
    """Wait until the screen holds every needle, read as one line (a sentence wraps, and the app's border
    breaks it)."""
    end = time.monotonic() + timeout
    while True:
        flat = " ".join(tmux.screen().replace("│", " ").split())
        if all(needle in flat for needle in needles):
            return
        assert time.monotonic() < end, f"{needles!r} never appeared; the screen was:\n{tmux.screen()}"
        time.sleep(0.1)


@pytest.mark.parametrize("plain", [False, True])
def test_the_trust_question_says_that_deny_and_ask_rules_hold_untrusted(git_repo: Path, tmp_path: Path,
                                                                        plain: bool) -> None:
    """The dialog said an untrusted repository's `.claude` rules were ignored, while its deny and ask rules are
    applied (rightly: they only narrow). It says so now, and "not now" shows it is true: the deny rule refuses."""
    settings = git_repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"deny": ["Bash(touch*)"], "allow": ["Bash(rm*)"]},
                                    "hooks": {"SessionStart": [{"hooks": [{"type": "command",
                                                                           "command": "echo hi >> hook.log"}]}]}}))
    script = tmp_path / "touch.json"
    script.write_text(json.dumps({"turns": [
        {"text": "Touching.", "tool_calls": [{"name": "bash", "input": {"command": "touch denied.txt"}}]},
        {"text": "It was refused."}]}))
    command = coder_command(script, "--permission-mode", "auto", *(["--plain"] if plain else []))
    tmux = Tmux(tmp_path, command, git_repo, width=150, height=45)
    try:
        tmux.wait("This repository is not trusted", "Esc: not now")
        wait_flat(tmux, "except the deny and ask rules, which apply either way",
                  "permissions deny: Bash(touch*) (applied whether you trust it or not",
                  "permissions allow: Bash(rm*) (never applied")
        time.sleep(0.7)
        tmux.send("1")  # not now
        tmux.wait("auto>" if plain else "idle │")
        if plain:
            tmux.type_at_prompt("touch it")
        else:
            tmux.type("touch it")
        tmux.send("Enter")
        tmux.wait("It was refused.")
        assert not (git_repo / "denied.txt").exists() and not (git_repo / "hook.log").exists()
    finally:
        tmux.close()
