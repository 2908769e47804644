"""The status bar: mode, model, context, tokens, cost, sandbox, git and, while a turn or a command runs, a spinner,
what runs and for how long. A part of the app (coder/tui/app.py).

Drawn for its width (coder/tui/fit.py) and redrawn only when its text changes, without a layout pass: the bar is
one line whatever it says, and a layout pass measures every block of the conversation (issue 32).
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.app import App

from coder.base.termsafe import visible
from coder.frontend.workspace import GitState, git_state
from coder.tui.fit import SPINNER, StatusParts, status_line
from coder.tui.part import Part
from coder.tui.state import AppState
from coder.tui.widgets import StatusBar


class StatusLine(Part):
    def __init__(self, app: App[Any], state: AppState) -> None:
        super().__init__(app, state)
        self.git = GitState(known=False)  # until read: not "no git" (issue 47)
        self.shown: Text | None = None

    def refresh_git(self) -> None:
        """Read the branch and whether the tree is dirty, in a worker (git can take a moment on a big tree); from
        the first paint on, before a session is open (the workspace the flags name)."""
        workspace = self.state.workspace

        def work() -> None:
            found = git_state(workspace)
            self.app.call_from_thread(self._git_read, found)

        self.app.run_worker(work, thread=True, group="git", exclusive=True)

    def _git_read(self, found: GitState) -> None:
        self.git = found
        self.refresh()

    def refresh(self) -> None:
        text = self.render(self.app.size.width)
        if self.shown is not None and text == self.shown:
            return
        self.shown = text
        bar = self.app.query_one_optional(StatusBar)  # none while the app closes: a late worker callback draws nothing
        if bar is not None:
            bar.update(text, layout=False)

    def render(self, width: int) -> Text:
        state, info = self.state, self.state.info
        session = state.session
        mode = getattr(state.args, "permission_mode", None) or "…"
        if session is not None:
            from coder.commands.modes import current_mode  # lazy: the commands load with the session, not before

            mode = current_mode(session)
        pct = 100 * info.ctx / info.window if info.window else 0.0
        label = info.state
        if state.running:
            took = time.monotonic() - state.work_started
            label = f"{SPINNER[int(took * 8) % len(SPINNER)]} {label} {took:.0f}s"
            wait = info.retry_until - time.monotonic()
            if wait > 0:
                label += f" · retry in {wait:.0f}s"
            elif state.asking:
                label += " · asking you"
            elif state.shell_calls:  # a shell command runs: Ctrl+B can send it on
                label += " · Ctrl+B: background"  # a running command can be sent on (coder/tools/bash/jobs.py)
            elif info.streamed:
                label += f" ↓{short(info.streamed // 4)}"
        parts = StatusParts(label, visible(info.model), mode, pct, short(info.tokens), info.cost,
                            visible(info.sandbox), visible(self.git.label()), state.folded, state.agent_costs)
        styles = {"state": "bold green" if label == "idle" else "bold yellow", "sep": "dim",
                  "mode": "bold magenta" if mode in ("auto", "auto-edit") else "bold",
                  "sandbox": "green" if info.sandbox == "bubblewrap" else "red", "folded": "dim"}
        text = Text()
        for value, part in status_line(parts, max(width - 2, 20)):
            text.append(value, style=styles.get(part, ""))
        return text


def short(n: int) -> str:
    return f"{n / 1_000_000:.1f}M" if n >= 1_000_000 else f"{n / 1000:.1f}k" if n >= 1000 else str(n)
