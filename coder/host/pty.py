"""A process on a pseudo-terminal, started by the door with no Python in the forked child.

The persistent shell (coder/sandbox/shell.py) needs a terminal: bash's interactive mode, programs that line-buffer
only on a tty, a window size. pexpect's spawn forks and then runs Python in the child (window size, echo, chdir,
`preexec_fn`, `os.execvpe`'s path search), which is what can hang in a process with threads (see
coder/host/limits.py). Here the pty is opened and configured in the parent; the child gets its slave side as
stdio through subprocess, and util-linux `setsid --ctty` (an exec, not a fork: the child is no group leader)
makes it a new session with the pty as its controlling terminal, as `pty.fork` did. Without `setsid` on the
machine the child still gets its own session, just without a controlling terminal (bwrap's `--new-session`
drops it inside the sandbox anyway).
"""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import termios
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from coder.host.limits import ProcessLimits
from coder.host.spawn import popen, prepare, which


class PtyChild:
    """What the shell needs of its process: the pty's master side (`child_fd`), liveness, signals, the exit."""

    def __init__(self, proc: subprocess.Popen[Any], master_fd: int) -> None:
        self.proc = proc
        self.child_fd = master_fd

    @property
    def pid(self) -> int:
        return self.proc.pid

    def isalive(self) -> bool:
        return self.proc.poll() is None

    def kill(self, sig: int) -> None:
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def wait(self) -> int:
        return self.proc.wait()

    @property
    def exitstatus(self) -> int | None:
        code = self.proc.returncode
        return code if code is not None and code >= 0 else None

    @property
    def signalstatus(self) -> int | None:
        code = self.proc.returncode
        return -code if code is not None and code < 0 else None

    def close(self, force: bool = True) -> None:
        """Close the master side (the child sees a hang-up); with `force`, kill and reap a child still running."""
        if self.child_fd >= 0:
            try:
                os.close(self.child_fd)
            except OSError:
                pass
            self.child_fd = -1
        if force and self.isalive():
            self.kill(signal.SIGKILL)
            self.proc.wait()


def spawn_pty(argv: Sequence[str], *, purpose: str, workdir: Path | str | None, env: Mapping[str, str],
              dimensions: tuple[int, int] = (24, 80), echo: bool = False,
              limits: ProcessLimits | None = None) -> PtyChild:
    """Start `argv` on a new pty of `dimensions` (rows, columns), the door's rules applied (`prepare`)."""
    launch = prepare(argv, purpose=purpose, workdir=workdir, env=env, limits=limits)
    try:
        setsid = [which("setsid"), "--ctty"]
    except OSError:
        setsid = []
    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", dimensions[0], dimensions[1], 0, 0))
        if not echo:
            attrs = termios.tcgetattr(slave)
            attrs[3] &= ~termios.ECHO
            termios.tcsetattr(slave, termios.TCSANOW, attrs)
        proc = popen(replace(launch, argv=(*setsid, *launch.argv)), stdin=slave, stdout=slave, stderr=slave,
                     new_session=not setsid)
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return PtyChild(proc, master)
