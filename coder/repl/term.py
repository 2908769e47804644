"""Terminal helpers of the plain REPL during a turn: Esc interrupting it (KeyWatcher), the keys a terminal sends
(`split_keys`, `KEYS`: a question's reader, coder/repl/reader.py, reads them too), and streamed text wrapped at word
boundaries (StreamWrap).

While `Session.send` runs, nobody reads the terminal: the line discipline echoes Esc as `^[` and keeps it for the
next prompt. `KeyWatcher` takes the terminal for the length of a turn: echo and line buffering off (signals stay
on, so Ctrl+C still raises SIGINT), a thread reading keys. A lone Esc interrupts the session; an escape sequence
(an arrow key, which also starts with ESC) is ignored; printable type-ahead is kept and handed to the next prompt
as its starting text. A permission prompt asked during the turn pauses the watcher (`paused()`), so the prompt
gets every key.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
import threading
from collections.abc import Callable, Iterator
from typing import Any

from rich.cells import cell_len

ESC = b"\x1b"
#: the keys a question takes besides digits, as a terminal sends them
KEYS = {b"\r": "enter", b"\n": "enter", ESC: "escape", b"\x1b[A": "up", b"\x1bOA": "up", b"\x1b[B": "down",
        b"\x1bOB": "down"}
SEQUENCE_GAP = 0.03  # bytes of one escape sequence arrive together; a lone Esc has nothing after it


class KeyWatcher:
    def __init__(self, on_escape: Callable[[], None], stream: Any = None,
                 echo: Callable[[str], None] | None = None,
                 on_background: Callable[[], None] | None = None, typeahead: str = "") -> None:
        self.on_escape = on_escape
        self.on_background = on_background  # Ctrl+B: the running command goes to the background
        self.stream = stream or sys.stdin
        #: shows the type-ahead (all of it) as it is typed (the terminal's own echo is off: it shows Esc as ^[)
        self.echo = echo
        self.typeahead = typeahead  # what was typed before the turn began (with the Enter that sent it) comes first
        self._fd: int | None = None
        self._saved: Any = None
        self._stop = threading.Event()
        self._paused = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    # ---- lifetime ---------------------------------------------------------------------------------------------
    def __enter__(self) -> KeyWatcher:
        try:
            fd = self.stream.fileno()
            if not os.isatty(fd):
                return self
            self._saved = termios.tcgetattr(fd)
        except (ImportError, OSError, ValueError, AttributeError):
            return self  # not a terminal (a pipe, a test's StringIO): Ctrl+C is the way to interrupt
        self._fd = fd
        self._raw()
        self._thread = threading.Thread(target=self._run, name="repl-keys", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        self._restore()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Give the terminal back (echo, line editing) while a prompt asks something during the turn."""
        if self._fd is None:
            yield
            return
        with self._lock:  # the reader holds the lock across select+read: no key is taken from the prompt
            self._paused = True
            self._restore()
        try:
            yield
        finally:
            with self._lock:
                self._raw()
                self._paused = False

    # ---- terminal modes ---------------------------------------------------------------------------------------
    def _raw(self) -> None:
        if self._fd is None or self._saved is None:
            return
        mode = termios.tcgetattr(self._fd)
        mode[3] &= ~(termios.ICANON | termios.ECHO)  # lflags; ISIG stays: Ctrl+C is still SIGINT
        mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
        termios.tcsetattr(self._fd, termios.TCSANOW, mode)

    def _restore(self) -> None:
        if self._fd is not None and self._saved is not None:
            with contextlib.suppress(OSError):
                termios.tcsetattr(self._fd, termios.TCSANOW, self._saved)

    # ---- reading ----------------------------------------------------------------------------------------------
    def _run(self) -> None:
        fd = self._fd
        assert fd is not None
        while not self._stop.is_set():
            with self._lock:
                if self._paused:
                    data = b""
                else:
                    ready, _, _ = select.select([fd], [], [], 0.1)
                    data = os.read(fd, 256) if ready else b""
                    if data == ESC:  # maybe the first byte of a sequence: wait a moment for the rest
                        more, _, _ = select.select([fd], [], [], SEQUENCE_GAP)
                        if more:
                            data += os.read(fd, 256)
            if not data:
                if self._paused:
                    self._stop.wait(0.05)
                continue
            self.feed(data)

    def feed(self, data: bytes) -> None:
        """One read's bytes: a lone Esc interrupts; sequences are dropped; text is kept as type-ahead."""
        if data == ESC:
            self.on_escape()
            return
        if data.startswith(ESC):
            return
        if b"\x02" in data and self.on_background is not None:
            self.on_background()
        before = self.typeahead
        for ch in data.decode("utf-8", "ignore"):
            if ch in "\x7f\b":
                self.typeahead = self.typeahead[:-1]
            elif ch.isprintable():
                self.typeahead += ch
        if self.typeahead != before and self.echo is not None:
            self.echo(self.typeahead)  # all of it: the printer keeps it on its own line (coder/repl/echo.py)

    def take_typeahead(self) -> str:
        text, self.typeahead = self.typeahead, ""
        return text


def split_keys(data: bytes) -> list[bytes]:
    """One read's bytes as keys: an escape sequence whole (an arrow key), every other character alone."""
    keys: list[bytes] = []
    i = 0
    while i < len(data):
        if data[i:i + 1] == ESC and i + 1 < len(data):
            end = i + 3 if data[i + 1:i + 2] in (b"[", b"O") else i + 2
            keys.append(data[i:end])
            i = end
            continue
        text = data[i:].decode("utf-8", "ignore")[:1]
        size = max(len(text.encode("utf-8")), 1)
        keys.append(data[i:i + size])
        i += size
    return keys


class StreamWrap:
    """Streamed text, wrapped at word boundaries to `width` columns: the terminal itself would cut a word at the
    last column. A word is held until the space (or newline) after it shows whether it still fits the line, so a
    stream's end must be `flush()`ed. width 0: no wrapping (a pipe, a file)."""

    def __init__(self, write: Callable[[str], Any], width: int) -> None:
        self.write = write
        self.width = width
        self.col = 0
        self.word = ""
        self.spaces = ""

    def feed(self, text: str) -> None:
        if self.width <= 0:
            self.write(text)
            return
        out: list[str] = []
        for ch in text:
            if ch == "\n":
                self._word(out)
                out.append("\n")
                self.col, self.spaces = 0, ""
            elif ch in " \t":
                self._word(out)
                self.spaces += ch
            else:
                self.word += ch
        self.write("".join(out))

    def _word(self, out: list[str]) -> None:
        if not self.word:
            return
        size = cell_len(self.word)
        if self.col and self.col + len(self.spaces) + size > self.width:
            out.append("\n")
            self.col = 0
        elif self.spaces:
            out.append(self.spaces)
            self.col += len(self.spaces)
        out.append(self.word)
        self.col = (self.col + size) % self.width if size > self.width else self.col + size
        self.word, self.spaces = "", ""

    def flush(self) -> None:
        out: list[str] = []
        self._word(out)
        self.spaces = ""
        self.write("".join(out))
