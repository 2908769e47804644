"""Keys typed during the launch are kept as typed (issue 47).

Between the moment `coder` starts and the moment the app or the REPL reads the terminal (a second and more on a
slow machine), the terminal is in its line mode: it echoes what is typed wherever the cursor is (over the first
screen being drawn) and turns Enter into a line feed, which the frontends read as Ctrl+J, a new line in the
message: `hello` and Enter typed early became a draft of two lines that was never sent. `keys_as_typed` takes the
terminal out of line mode first thing, before the frontend is imported: no echo, no line editing, Enter stays
Enter; the keys wait in the terminal, and the frontend reads them as typed when it starts. Signals stay on (Ctrl+C
still stops the launch). The terminal's own settings are put back when the frontend ends, whatever it left.

What this cannot change: keys typed before the interpreter reached `coder` (its own start, some 50 ms) went through
the line mode, their Enter already a line feed. They are taken out of the terminal here, line feeds back to Enter,
and each frontend takes them first (`take_pending`): the REPL as its first prompt's keys, the app into its input.
"""

from __future__ import annotations

import contextlib
import os
import select
import termios
from collections.abc import Iterator
from typing import Any

#: what was typed before the terminal left its line mode, line feeds back to Enter (`take_pending`)
_pending: list[bytes] = []


@contextlib.contextmanager
def keys_as_typed(stream: Any) -> Iterator[None]:
    """While the block runs, the terminal `stream` reads from keeps keys as typed (nothing when it is not a
    terminal, or for a process in the background, which may not change its terminal); its settings as they were are
    restored afterwards. What is already waiting in it is read now, for the frontend to take first
    (`take_pending`)."""
    try:
        fd = stream.fileno()
        saved = termios.tcgetattr(fd) if os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp() else None
    except (termios.error, OSError, ValueError, AttributeError):
        fd, saved = -1, None
    if saved is None:
        yield
        return
    mode = termios.tcgetattr(fd)
    mode[0] &= ~termios.ICRNL  # iflag: Enter stays a carriage return
    mode[3] &= ~(termios.ICANON | termios.ECHO)  # lflag: no line editing, no echo; ISIG stays (Ctrl+C)
    mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
    with contextlib.suppress(termios.error):
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    while select.select([fd], [], [], 0)[0]:
        data = os.read(fd, 4096)
        if not data:
            break
        _pending.append(data.replace(b"\n", b"\r"))
    try:
        yield
    finally:
        _pending.clear()
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


def take_pending() -> str:
    """The keys typed before the terminal left its line mode (once; empty when none were)."""
    data = b"".join(_pending)
    _pending.clear()
    return data.decode("utf-8", "replace")
