"""The real `coder` in a real terminal: a private tmux server with one pane (`Tmux`), and the command line of the
tree under test. Shared by the terminal tests of this folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tui_support import type_at_prompt  # type: ignore[import-not-found]


class Tmux:
    """One private tmux server (its own socket, so it gets this test's environment) with one pane."""

    def __init__(self, tmp: Path, command: str, cwd: Path, width: int = 110, height: int = 34) -> None:
        if shutil.which("tmux") is None:
            pytest.fail("tmux is not installed: apt-get install tmux")
        self.sock = str(tmp / f"tmux-{uuid.uuid4().hex[:6]}.sock")
        env = {**os.environ, "TERM": "xterm-256color", "PYTHONDONTWRITEBYTECODE": "1"}
        env.pop("TMUX", None)
        self.run("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), "-c", str(cwd),
                 f"{command}; echo EXIT=$?; sleep 30", env=env)

    def run(self, *args: str, env: dict[str, str] | None = None) -> str:
        out = subprocess.run(["tmux", "-S", self.sock, *args], capture_output=True, text=True, timeout=20, env=env)
        return out.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "t")

    def send(self, *keys: str) -> None:
        self.run("send-keys", "-t", "t", *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", "t", "-l", text)

    def wait(self, *needles: str, timeout: float = 30.0) -> str:
        """The screen once it shows every one of `needles` (polled: no fixed wait)."""
        end = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < end:
            screen = self.screen()
            if all(needle in screen for needle in needles):
                return screen
            time.sleep(0.1)
        size = self.run("display", "-p", "-t", "t", "#{pane_width}x#{pane_height}").strip()
        raise AssertionError(f"{needles!r} never appeared; the screen ({size}) was:\n{screen}")

    def type_at_prompt(self, text: str) -> None:
        type_at_prompt(self.type, self.screen, lambda: self.send("C-u"), text)

    def quit_app(self) -> str:
        """Ctrl+C twice on the idle app (the second once the first was seen), then its exit."""
        self.send("C-c")
        self.wait("again to quit")
        self.send("C-c")
        return self.wait("EXIT=0")

    def close(self) -> None:
        self.run("kill-server")


REPO = Path(__file__).resolve().parents[2]
ARMED = "or ↑↓ and Enter answer"  # the question's hint once it has the focus and its keys answer


def coder_command(script: Path, *extra: str) -> str:
    """The coder command line of the tree under test (not whatever `coder` is installed on PATH)."""
    base = ["env", f"PYTHONPATH={REPO}", sys.executable, "-m", "coder"]
    return " ".join([*base, "--model", f"scripted:{script}", "--permission-mode", "ask", *extra])


def quit_plain(tmux: Tmux) -> None:
    tmux.type_at_prompt("/quit")
    tmux.send("Enter")
    tmux.wait("EXIT=0")
