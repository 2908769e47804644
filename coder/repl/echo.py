"""The plain REPL's output with the keys typed during a turn kept on a line of their own (issue 47).

While a turn runs, the REPL echoes what the person types (the next message's start) as they type it. It echoed
at the cursor, so keys typed while a command's output was being printed landed inside that output
(`   3s │ stephello 3`). `EchoingOut` is the stream the REPL prints through: the typed text is drawn on the last
line, below everything printed; before anything else is written it is erased, and once that output has ended a
line it is drawn again. Output that stops in the middle of a line (text streaming in) keeps the typed text back
until the line ends. While a question is asked (`paused`), its reader writes its own lines to the terminal: the
typed line is taken away, keys typed meanwhile are echoed at the cursor as they come (after the question's `>`),
and the typed line comes back under the answer. Writes come from the main thread (the session's events) and from
the key reader's thread, hence the lock.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

ERASE_LINE = "\r\x1b[K"


class EchoingOut:
    """A text stream (what Rich's console and the REPL write to) over `out`, a terminal."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.typed = ""  # the type-ahead the last line shows
        self.drawn = 0  # rows it takes on the screen now (0: not drawn)
        self.at_line_start = True  # the last output ended a line: the typed text may be drawn below it
        self.asking = False  # a question's reader writes to the terminal itself: the typed line stays away
        self.lock = threading.RLock()

    # ---- what a stream offers ---------------------------------------------------------------------------------
    @property
    def encoding(self) -> str:
        return getattr(self.out, "encoding", "utf-8") or "utf-8"

    def isatty(self) -> bool:
        return self.out.isatty()

    def fileno(self) -> int:
        return self.out.fileno()

    def flush(self) -> None:
        self.out.flush()

    def write(self, text: str) -> int:
        if not text:
            return 0
        with self.lock:
            self._erase()
            self.out.write(text)
            self.at_line_start = text.endswith("\n")
            self._draw()
        return len(text)

    # ---- the typed line ---------------------------------------------------------------------------------------
    def show(self, typed: str) -> None:
        """The type-ahead is `typed` now: drawn on its own line (at once, or when the output ends its line)."""
        with self.lock:
            if self.asking:  # at the cursor, after the question's `>`, as a terminal's echo would
                self.out.write(typed[len(self.typed):] if typed.startswith(self.typed) else "")
            else:
                self._erase()
            self.typed = typed
            self._draw()
            self.out.flush()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """A question is asked: its lines and its reader's own writes go out as they are, the typed line after."""
        with self.lock:
            self._erase()
            self.out.flush()
            self.asking = True
        try:
            yield
        finally:
            with self.lock:
                self.asking, self.at_line_start = False, True  # the reader ended its answer's line
                self._draw()
                self.out.flush()

    def clear(self) -> None:
        """Take the typed line away (the prompt is about to show the same text)."""
        with self.lock:
            self._erase()
            self.typed = ""
            self.out.flush()

    def raw(self, text: str) -> None:
        """Write what draws nothing (a notification's escape sequence), leaving the typed line as it is."""
        with self.lock:
            self.out.write(text)
            self.out.flush()

    def _draw(self) -> None:
        if self.typed and self.at_line_start and not self.drawn and not self.asking:
            self.out.write(self.typed)
            width = max(shutil.get_terminal_size((80, 24)).columns, 1)
            # its lines (an Enter typed ahead keeps one apart), each as many rows as it wraps to
            self.drawn = sum(max(1, -(-len(line) // width)) for line in self.typed.split("\n"))

    def _erase(self) -> None:
        if self.drawn:
            self.out.write(ERASE_LINE + "\x1b[1A\x1b[2K" * (self.drawn - 1))
            self.drawn = 0
