"""A running call's output as the frontends see it while it runs (`ToolOutput` events), bounded (issue 32).

A 5-second `yes` and a 10 MB line put 35 MB on `coder run --output-format stream-json`: what the model reads is
cut (head and tail, the whole text behind an output handle), what a CI log or an editor got was not. Every
frontend (stream-json, ACP, the app, `--plain`) reads these events, so the bound is kept here, once:

- throttled: output is gathered and emitted at most every INTERVAL seconds (a burst of small writes is one event);
- a cap per call: the first HEAD characters are shown as they come, then one line says the rest is not shown
  live. The call's result, which every frontend shows when it ends, carries the model's view of the output: its
  head and tail and the handle of the whole text (`read_output`, `coder sessions show`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

HEAD = 16_000  # characters of a call's output shown as they come
INTERVAL = 0.1  # seconds between two live events of one call, at least
CUT_NOTE = ("\n[… live output stops here ({head:,} characters); the result shows the head and the tail of the output "
            "and names the handle of the whole text …]\n")


class LiveOutput:
    """The `progress` callback of one tool call: takes the tool's output from any thread, emits bounded pieces.
    `close()` before the call's result is emitted: nothing is emitted after it."""

    def __init__(self, emit: Callable[[str], None], head: int = HEAD, interval: float = INTERVAL) -> None:
        self.emit = emit
        self.head = head
        self.interval = interval
        self.shown = 0  # characters emitted or waiting to be
        self.pending = ""
        self.last = 0.0  # when the last piece was emitted (monotonic)
        self.cut = False
        self.noted = False  # the note that the rest is not shown live was emitted
        self.closed = False
        self.lock = threading.Lock()
        self.timer: threading.Timer | None = None

    def __call__(self, text: str) -> None:
        with self.lock:
            if self.closed or self.cut or not text:
                return
            room = self.head - self.shown
            if len(text) > room:
                text, self.cut = text[:room], True
            self.pending += text
            self.shown += len(text)
            wait = self.last + self.interval - time.monotonic()
            if wait <= 0 or self.cut:
                self._flush()
            elif self.timer is None:  # the rest of a burst goes out a moment later, even if the tool goes quiet
                self.timer = threading.Timer(wait, self._flush_later)
                self.timer.daemon = True
                self.timer.start()

    def _flush_later(self) -> None:
        with self.lock:
            self.timer = None
            if not self.closed:
                self._flush()

    def _flush(self) -> None:
        """Emit what waits (the lock is held)."""
        if self.pending:
            self.emit(self.pending)
            self.pending = ""
            self.last = time.monotonic()
        if self.cut and not self.noted:
            self.emit(CUT_NOTE.format(head=self.head))
            self.noted = True

    def close(self) -> None:
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            if not self.closed:
                self._flush()
                self.closed = True
