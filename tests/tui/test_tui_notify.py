"""Notifications (issue 23): the sequences, the focus rule, the `[[hooks.notification]]` hook run by the real
REPL, and the OSC sequences the real REPL and the real app write to a real terminal (a tmux pane, its raw output
recorded with `pipe-pane`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tui_support import type_at_prompt  # type: ignore[import-not-found]

from coder.base.errors import ConfigError
from coder.config.layers import settings
from coder.frontend.notify import Notifier, detect_method, sequence

REPO = Path(__file__).resolve().parents[2]
EDIT_SCRIPT = {"turns": [
    {"text": "Creating the notes file.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
        "command": "create", "path": "notes.txt", "file_text": "hello\n"}}]},
    {"text": "Created notes.txt."},
]}


def user_config(text: str) -> None:
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "coder"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(text)


def test_sequences_by_method_and_terminal() -> None:
    assert sequence("osc9", "coder", "the turn is done", {}) == "\x1b]9;coder: the turn is done\x07"
    assert sequence("osc777", "coder", "a; b", {}) == "\x1b]777;notify;coder;a, b\x07"
    assert sequence("bell", "coder", "x", {}) == "\x07"
    # a model-written title cannot end the OSC early and run its own sequence
    assert sequence("osc9", "coder", "x\x07\x1b]52;c;evil", {}) == "\x1b]9;coder: x  ]52;c;evil\x07"
    wrapped = sequence("osc9", "coder", "done", {"TMUX": "/tmp/tmux-0/default,1,0"})
    assert wrapped == "\x1bPtmux;\x1b\x1b]9;coder: done\x07\x1b\\"
    assert detect_method({"VTE_VERSION": "7600"}) == "osc777"
    assert detect_method({"TERM_PROGRAM": "iTerm.app"}) == "osc9"
    assert detect_method({"TERM": "xterm-kitty"}) == "osc9"
    assert detect_method({"TERM": "xterm-256color"}) == "bell"
    assert sequence("auto", "coder", "x", {"TERM": "screen"}) == "\x07"


def test_when_and_focus_decide() -> None:
    written: list[str] = []
    unfocused = Notifier(settings({}), written.append, environ={})
    assert unfocused.notify("turn_end", "done")  # focus unknown: notified
    unfocused.focused = True
    assert not unfocused.notify("turn_end", "done")
    unfocused.focused = False
    assert unfocused.notify("permission", "asks")
    always = Notifier(settings({"notifications": {"when": "always", "method": "osc9"}}), written.append, environ={})
    always.focused = True
    assert always.notify("turn_end", "done")
    never = Notifier(settings({"notifications": {"when": "never"}}), written.append, environ={})
    assert not never.notify("turn_end", "done")
    assert not always.turn_ended("interrupted")  # the user stopped it: they are at the keyboard
    assert always.turn_ended("max_turns")
    assert written == ["\x07", "\x07", "\x1b]9;coder: done\x07", "\x1b]9;coder: the turn stopped: max_turns\x07"]


def test_a_wrong_setting_is_a_config_error(git_repo: Path) -> None:
    from coder.config.layers import load_config

    user_config('[notifications]\nwhen = "sometimes"\n')
    with pytest.raises(ConfigError, match=r'config.toml:2: \[notifications\] when = "sometimes": expected one of'):
        load_config(git_repo)


def test_repl_runs_the_notification_hook(git_repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "notified.jsonl"
    user_config(f'[[hooks.notification]]\ncommand = "cat >> {log}; echo >> {log}"\nsandbox = false\n')
    script = tmp_path / "s.json"
    script.write_text(json.dumps(EDIT_SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-m", "coder", "--plain", "--model", f"scripted:{script}",
                          "--permission-mode", "ask"], input="write notes\ny\n/quit\n", cwd=git_repo, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert (git_repo / "notes.txt").read_text() == "hello\n"
    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [(e["event"], e["kind"]) for e in events] == [("notification", "permission"),
                                                         ("notification", "turn_end")]
    assert "notes.txt" in events[0]["message"] and events[1]["message"] == "the turn is done"
    assert "\x1b]" not in run.stdout and "\x07" not in run.stdout  # a pipe is not a terminal: no sequence


class RawPane:
    """A private tmux server with one pane whose raw output (escape sequences included) goes to a file."""

    def __init__(self, tmp: Path, command: str, cwd: Path) -> None:
        if shutil.which("tmux") is None:
            pytest.fail("tmux is not installed: apt-get install tmux")
        self.sock = str(tmp / f"tmux-{uuid.uuid4().hex[:6]}.sock")
        self.raw = tmp / "raw.log"
        self.raw.touch()
        env = {**os.environ, "TERM": "xterm-256color", "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("TMUX", None)
        # the command waits for its go file, so pipe-pane is attached before the first byte is written
        go = tmp / "go"
        self.run("new-session", "-d", "-s", "t", "-x", "110", "-y", "34", "-c", str(cwd),
                 f"while [ ! -e {go} ]; do sleep 0.1; done; {command}; echo EXIT=$?; sleep 30", env=env)
        self.run("pipe-pane", "-t", "t", "-o", f"cat >> {self.raw}")
        go.touch()

    def run(self, *args: str, env: dict[str, str] | None = None) -> str:
        return subprocess.run(["tmux", "-S", self.sock, *args], capture_output=True, text=True, timeout=20,
                              env=env).stdout

    def wait_raw(self, needle: str, timeout: float = 60.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            data = self.raw.read_bytes().decode("utf-8", "replace")
            if needle in data:
                return data
            time.sleep(0.2)
        raise AssertionError(f"{needle!r} never reached the terminal; the screen:\n"
                             + self.run("capture-pane", "-p", "-t", "t"))

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "t")

    def wait_screen(self, needle: str, timeout: float = 60.0) -> None:
        end = time.monotonic() + timeout
        while needle not in self.screen():
            assert time.monotonic() < end, f"{needle!r} never appeared:\n{self.screen()}"
            time.sleep(0.2)

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.run("send-keys", "-t", "t", *(["-l"] if literal else []), *keys)

    def type_at_prompt(self, text: str) -> None:
        type_at_prompt(lambda t: self.keys(t, literal=True), self.screen, lambda: self.keys("C-u"), text)

    def close(self) -> None:
        self.run("kill-server")


def coder_line(script: Path, *extra: str) -> str:
    return " ".join(["env", f"PYTHONPATH={REPO}", sys.executable, "-m", "coder", "--model", f"scripted:{script}",
                     "--permission-mode", "ask", *extra])


def test_repl_in_tmux_writes_osc_777(git_repo: Path, tmp_path: Path) -> None:
    user_config('[notifications]\nwhen = "always"\nmethod = "osc777"\n')
    script = tmp_path / "s.json"
    script.write_text(json.dumps(EDIT_SCRIPT))
    pane = RawPane(tmp_path, coder_line(script, "--plain"), git_repo)
    try:
        pane.wait_screen("ask>")
        pane.type_at_prompt("write notes")
        pane.keys("Enter")
        # inside tmux the OSC goes through tmux's passthrough (its ESC doubled) to the outer terminal
        pane.wait_raw("\x1bPtmux;\x1b\x1b]777;notify;coder;asks to allow edit notes.txt (create)\x07\x1b\\")
        time.sleep(0.7)  # the question takes keys once the keyboard was quiet for a moment
        pane.keys("1", literal=True)  # yes, this once
        pane.wait_raw("]777;notify;coder;the turn is done\x07")
        assert (git_repo / "notes.txt").read_text() == "hello\n"
    finally:
        pane.close()


def test_app_in_tmux_writes_osc_9_when_focus_is_unknown(git_repo: Path, tmp_path: Path) -> None:
    user_config('[notifications]\nmethod = "osc9"\n')  # when = "unfocused": tmux sends no focus report here
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "All done here."}]}))
    pane = RawPane(tmp_path, coder_line(script), git_repo)
    try:
        pane.wait_screen("idle │")
        assert "]9;coder" not in pane.raw.read_text(errors="replace")  # nothing before a turn ends
        pane.keys("hello", literal=True)
        pane.keys("Enter")
        pane.wait_raw("]9;coder: the turn is done\x07")
    finally:
        pane.close()
