"""The persistent shell's terminal as a wire (coder/sandbox/shell.py): one line sent, followed by an end marker
that carries a per-shell nonce, the call's sequence number, the exit status and `$PWD`; then the output read until
that marker, capped while it is read, with the limits a call has (a deadline, a time without output, the user's
interrupt, the user's Ctrl+B that leaves the command running). What a status means for the shell (a restart, an
interrupt, a note) is the shell's.
"""

from __future__ import annotations

import os
import re
import secrets
import select
import threading
import time
from collections.abc import Callable

from coder.sandbox.text import clean_output

#: what a read ends with: done / timeout / idle / cancel / overflow / eof / detach
Read = tuple[bytes, int | None, str, int]


class Wire:
    """The pty of one bash process. `cwd`: the working directory the last marker reported (at first, where the
    shell was told to start)."""

    def __init__(self, fd: int, max_output_bytes: int, cwd: str) -> None:
        self.fd = fd
        self.max_output_bytes = max_output_bytes
        self.cwd = cwd
        self.nonce = secrets.token_hex(6)
        self.seq = 0
        self.carry = b""  # the last bytes read before a detach: a marker may have begun in them
        self.pattern = re.compile(rb"\n?\x1e" + self.nonce.encode() + rb":(\d+):(-?\d+):([^\x1e]*)\x1e\n")

    def send(self, line: str, sourced: bool = True) -> int:
        self.seq += 1
        marker = f"builtin printf '\\n\\036{self.nonce}:{self.seq}:%s:%s\\036\\n' \"$?\" \"$PWD\""
        os.write(self.fd, (f"{line}; {marker}\n" if sourced else f"{line} {marker}\n").encode())
        return self.seq

    def exchange(self, line: str, timeout: float, idle_timeout: float = 0.0, sourced: bool = True,
                 cancel: threading.Event | None = None, on_output: Callable[[str], None] | None = None,
                 detach: threading.Event | None = None) -> Read:
        """Send `line` and read until its marker. Returns (output, exit code or None, status, dropped bytes)."""
        seq = self.send(line, sourced)
        return self.read_until(seq, timeout, idle_timeout, cancel, on_output, detach)

    def read_until(self, seq: int, timeout: float, idle_timeout: float = 0.0,
                   cancel: threading.Event | None = None, on_output: Callable[[str], None] | None = None,
                   detach: threading.Event | None = None, keep: bool = True) -> Read:
        """Read until the marker of call `seq`. The exit code is that marker's, or the status an earlier
        (interrupted) call's marker carried when one shows up first. `on_output` gets every piece, the one read
        with the marker too. `keep` False: output only goes to `on_output`, with no size limit."""
        pattern = self.pattern
        limit = self.max_output_bytes if keep else 0
        fd = self.fd
        buf = bytearray()  # kept output, at most `limit` bytes
        window, self.carry = bytearray(self.carry), b""  # the latest bytes, where the marker is looked for
        dropped = 0
        earlier: int | None = None
        start = last = time.monotonic()
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        while True:
            now = time.monotonic()
            if now - start >= timeout:
                return bytes(buf), earlier, "timeout", dropped
            if idle_timeout and now - last >= idle_timeout:
                return bytes(buf), earlier, "idle", dropped
            if cancel is not None and cancel.is_set():
                return bytes(buf), earlier, "cancel", dropped
            if dropped and limit:
                return bytes(buf), earlier, "overflow", dropped
            if detach is not None and detach.is_set():
                self.carry = bytes(window)
                return bytes(buf), earlier, "detach", dropped
            polled = cancel is not None or idle_timeout or detach is not None
            wait = min(timeout - (now - start), 0.1 if polled else 1.0)
            if not poller.poll(max(wait, 0.001) * 1000):
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:  # EIO: the pty's other end is gone
                chunk = b""
            if not chunk:
                return bytes(buf), earlier, "eof", dropped
            last = time.monotonic()
            offset = len(window)
            window += chunk
            for m in pattern.finditer(window):
                found = int(m.group(1))
                if found < seq:
                    earlier = int(m.group(2))
                    continue
                if found == seq:
                    before = bytes(window[:m.start()])
                    if on_output is not None and before[offset:]:  # the lines that came with the marker
                        on_output(clean_output(before[offset:]))
                    _keep(buf, before[offset:] if offset <= len(before) else b"", limit)
                    if offset > len(before):  # the marker began in bytes already kept: drop them
                        del buf[len(buf) - (offset - len(before)):]
                    self.cwd = m.group(3).decode(errors="replace") or self.cwd
                    out = pattern.sub(b"", bytes(buf))
                    return out, earlier if earlier is not None else int(m.group(2)), "done", dropped
            dropped += _keep(buf, chunk, limit) if keep else 0
            if on_output is not None:
                on_output(clean_output(pattern.sub(b"", chunk)))
            del window[:-512]


def _keep(buf: bytearray, data: bytes, limit: int) -> int:
    """Append what fits under `limit`; return how many bytes were dropped."""
    room = max(0, limit - len(buf)) if limit else len(data)
    buf += data[:room]
    return len(data) - min(room, len(data))
