"""Lending one folder of the workspace to a sandbox on another tree (the review's run of the base commit in an
exported copy, coder/review/testing.py, which needs the project's `.venv`: untracked, so not in the copy).

The folder was shaped by the sandboxed code, so its path is never handed to bwrap, which would follow a link the
code put there (or swapped in after a check) and bind whatever it names on the host. It is opened once, relative
to the workspace, without following a link (`O_NOFOLLOW`), checked to be a directory, and bwrap binds that open
descriptor read-only (`--ro-bind-fd`, bubblewrap 0.7 and later) at the folder's own path. A bwrap without it, a
link, or anything but a directory: nothing is lent, and the run goes on without the folder.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from coder.host import run


@dataclass(frozen=True)
class Lent:
    """An open descriptor of the lent folder and the bwrap options that bind it; `close` after the start."""

    fd: int
    args: tuple[str, ...]

    def close(self) -> None:
        os.close(self.fd)


@cache
def bwrap_binds_fds() -> bool:
    """Whether this bwrap has `--ro-bind-fd` (asked once)."""
    try:
        out = run(["bwrap", "--help"], purpose="the sandbox's options", timeout=10)
    except OSError:
        return False
    return b"--ro-bind-fd" in out.stdout + out.stderr


def lend(workspace: Path, name: str) -> Lent | None:
    """`workspace/name` opened for a read-only bind at its own path, or None (not a real directory, a link, a
    name of more than one component, or no `--ro-bind-fd`)."""
    if not name or "/" in name or name in (".", "..") or not bwrap_binds_fds():
        return None
    try:
        root = os.open(workspace, os.O_PATH | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root)
    except OSError:
        return None
    finally:
        os.close(root)
    if not stat.S_ISDIR(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return Lent(fd, ("--ro-bind-fd", str(fd), str(Path(workspace).resolve() / name)))
