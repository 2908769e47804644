"""Isolated trees never outlive their session (issue 36, "A crash leaves nothing behind").

A session's trees live in one folder, `<worktree_dir>/<session id>/`, whose `.owner` file names the process that
made it (pid and start time, as the session store records them). Two things remove it when that process is gone:
- a janitor: a small process started with the first tree, which reads a pipe from the session's process and,
  when the pipe closes (the process ended, however: SIGKILL included), deletes the folder and exits. It runs in a
  session of its own, so the Ctrl+C that stops coder does not stop it first;
- a sweep when the next session starts, for a folder whose janitor could not run (the machine went down, or
  something killed both): any folder whose owner is gone is deleted.
Nothing is registered in the user's repository, so nothing else is left (docs/decisions/36-parallel-agents.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from coder import host
from coder.host.spawn import forget
from coder.store.db import process_token
from coder.vcs.worktrees import remove_tree

OWNER_FILE = ".owner"

#: the janitor's whole program: wait for the pipe to close, then delete the folder (what `remove_tree` does:
#: folders made writable first, links removed, never followed). `python -I` and no import of coder: it must run
#: whatever the session's import path was.
JANITOR = """
import os, shutil, stat, sys
sys.stdin.buffer.read()
def fix(function, failed, _exc):
    for each in (os.path.dirname(failed), failed):
        try:
            st = os.lstat(each)
            if stat.S_ISDIR(st.st_mode):
                os.chmod(each, st.st_mode | stat.S_IRWXU)
        except OSError:
            pass
    try:
        function(failed)
    except OSError:
        pass
if os.path.lexists(sys.argv[1]):
    shutil.rmtree(sys.argv[1], onerror=fix)
"""


def claim(folder: Path) -> None:
    """Make the session's folder and say which process owns it."""
    folder.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    (folder / OWNER_FILE).write_text(f"{pid} {process_token(pid) or ''}\n", encoding="utf-8")


def owner_alive(folder: Path) -> bool:
    try:
        pid_text, _, token = (folder / OWNER_FILE).read_text(encoding="utf-8").strip().partition(" ")
        pid = int(pid_text)
    except (OSError, ValueError):
        return False
    now = process_token(pid)
    return now is not None and (not token or now == token)


def sweep(root: Path) -> list[Path]:
    """Delete the session folders under `root` whose owner process is gone (and folders nobody owns); returns
    them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        folder = Path(entry.path)
        if entry.is_dir(follow_symlinks=False) and not owner_alive(folder):
            remove_tree(folder)
            removed.append(folder)
    return removed


class Janitor:
    """The process that deletes `folder` once this one ends (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        # through the one door for host processes (its own session, a neutral folder, an empty environment), then
        # left out of the door's `stop_all`: a SIGTERM to coder must not take the janitor, whose job comes after
        self.process = host.start([sys.executable, "-I", "-c", JANITOR, str(folder)], purpose="the agents' janitor",
                                  env={}, stdin=host.PIPE, stdout=host.DEVNULL, stderr=host.DEVNULL)
        forget(self.process)

    def close(self) -> None:
        """This session is done with its trees: the janitor deletes what is left and ends."""
        try:
            if self.process.stdin is not None:
                self.process.stdin.close()
            self.process.wait(timeout=30)
        except (OSError, host.TimeoutExpired):
            self.process.kill()
