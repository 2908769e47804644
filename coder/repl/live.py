"""The plain REPL's live command output (issue 24): while a command runs, its output lines go to the normal
scrollback as they come, each with the time the command has run, as the app shows them in the running tool
block. A scrollback cannot redraw a "last lines" window, so every line is printed once, up to MAX_LINES a
call (the result line, and `coder sessions show`, have the rest); a partial line waits for its newline, or for
the call's end."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from coder.base import events as ev

MAX_LINES = 200
WIDE = 400  # a single line longer than this is cut: a minified file would fill the screen
PREFIX = len(f"{0:>5.0f}s │ ")  # the columns before each line: the command's terminal is that much narrower


@dataclass
class _Call:
    started: float = field(default_factory=time.monotonic)
    partial: str = ""
    shown: int = 0
    cut: bool = False


class LiveOutput:
    """Turns `ToolOutput` events into dim scrollback lines `  12s │ text`; `say(text)` prints one line."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.calls: dict[str, _Call] = {}
        self.later: list[str] = []  # background jobs that ended, said from their own thread: printed by the REPL's

    def take_later(self) -> list[str]:
        """The lines of background jobs that ended (Ctrl+B), for the REPL's thread to print."""
        lines, self.later = self.later, []
        return lines

    def event(self, event: ev.Event) -> None:
        if isinstance(event, ev.BackgroundEnded):  # list.append: safe from the job's thread
            self.later.append(f"background job {event.id} ({event.command[:60]}) {event.state}")
        elif isinstance(event, ev.ToolCallApproved):
            self.calls[event.id] = _Call()  # the clock starts when the call may run (not while a prompt waits)
        elif isinstance(event, ev.ToolOutput):
            call = self.calls.setdefault(event.id, _Call())
            call.partial += event.text
            *done, call.partial = call.partial.split("\n")
            for line in done:
                self._show(call, line)
        elif isinstance(event, ev.ToolCallFinished):
            call = self.calls.pop(event.id, None)
            if call is not None and call.partial.strip():
                self._show(call, call.partial)

    def _show(self, call: _Call, line: str) -> None:
        """`  12s │ line`: PREFIX columns before the command's own line."""
        line = line.rstrip()
        if not line.strip():
            return
        if call.shown >= MAX_LINES:
            if not call.cut:
                call.cut = True
                self.say(f"{self._clock(call)} │ … more output: the result has the whole text")
            return
        call.shown += 1
        self.say(f"{self._clock(call)} │ {line if len(line) <= WIDE else line[:WIDE] + ' …'}")

    @staticmethod
    def _clock(call: _Call) -> str:
        return f"{time.monotonic() - call.started:>5.0f}s"
