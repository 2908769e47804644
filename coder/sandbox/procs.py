"""Process-tree helpers for interrupting commands inside the sandbox from the host.

Why from the host: bwrap's `--new-session` leaves the sandboxed shell without a controlling terminal, so a
Ctrl-C byte written to the pty signals nobody. The host still sees every sandboxed process (with host pids) in
/proc, so it signals the shell's descendants directly."""

from __future__ import annotations

import os
import signal


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of `pid`, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # the command name may contain spaces and parentheses: split after the last ')'
    rest = data[data.rfind(b")") + 2:].split()
    return int(rest[1]), rest[0].decode()


def children_map() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        info = _stat(int(name))
        if info is not None:
            tree.setdefault(info[0], []).append(int(name))
    return tree


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (not `pid` itself), parents before children."""
    tree = children_map()
    found: list[int] = []
    stack = list(tree.get(pid, []))
    while stack:
        child = stack.pop()
        found.append(child)
        stack.extend(tree.get(child, []))
    return found


def child_of(pid: int) -> int | None:
    """The first child of `pid`, or None."""
    kids = children_map().get(pid, [])
    return min(kids) if kids else None


def signal_all(pids: list[int], sig: int) -> int:
    """Send `sig` to each pid; returns how many were still there."""
    sent = 0
    for pid in pids:
        try:
            os.kill(pid, sig)
            sent += 1
        except OSError:
            continue
    return sent


def kill_tree(pid: int, include_self: bool = False) -> int:
    """SIGKILL every descendant of `pid` (and `pid` when asked). Stops them first so a fork bomb cannot outrun
    the walk."""
    pids = descendants(pid)
    signal_all(pids, signal.SIGSTOP)
    pids = list(dict.fromkeys(pids + descendants(pid)))
    count = signal_all(pids, signal.SIGKILL)
    if include_self:
        count += signal_all([pid], signal.SIGKILL)
    return count
