"""Finding nested repositories and instruction files in the workspace, fast enough to do before every command.

The persistent shell checks the protected set before each call (coder/sandbox/shell.py), so the walk must cost
little next to the command itself on a Django-size tree (benchmarks/RESULTS.md: ~1.7 ms a call on 20k files
after the first walk). A full `os.scandir` walk costs about
2.5 microseconds an entry (60 ms for 20k files); this one remembers what every folder held, keyed by the folder's
device, inode and ctime, and lists again only the folders whose ctime moved: one `lstat` a folder instead of one
`scandir`. ctime, not mtime: a command can set a folder's mtime back (`touch -d`), never its ctime (that takes
the host's clock). A folder changed in the last `RACY_NS` is listed again next time too, because two changes in
the same clock tick (timestamps are coarse, a few milliseconds) share one ctime: git's "racy index" rule.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from coder.trust.protected import AGENT_DIRS, AGENT_FILES

#: instruction files and folders of every agent, also read from sub-folders (from the root down to the working
#: directory): bound read-only where they exist
NESTED_FILES: frozenset[str] = frozenset((*AGENT_FILES, *AGENT_DIRS))
#: folders the walk never enters: huge, and never part of the workspace's own history
WALK_SKIP: frozenset[str] = frozenset({"node_modules"})
#: the walk stops after this many folders and entries: a pathological tree cannot stall every call
WALK_LIMIT = 250_000
#: a folder whose ctime is younger than this is listed again on the next walk (same-tick changes)
RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class _Listing:
    key: tuple[int, int, int]  # st_dev, st_ino, st_ctime_ns
    subdirs: tuple[str, ...]
    found: tuple[str, ...]
    settled: bool  # ctime old enough to trust the key next time


@dataclass
class NestedScanner:
    """One workspace's walk, remembered between calls."""

    workspace: str
    listings: dict[str, _Listing] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def scan(self) -> list[Path]:
        """Nested `.git` entries (folders, files or links; never entered) and sub-folder instruction files, in
        walk order. Never follows a symlink; skips the top `.git` and WALK_SKIP folders."""
        with self.lock:
            now = time.time_ns()
            found: list[str] = []
            fresh: dict[str, _Listing] = {}
            stack = [self.workspace]
            budget = WALK_LIMIT
            while stack and budget > 0:
                folder = stack.pop()
                try:
                    st = os.lstat(folder)
                except OSError:
                    continue
                key = (st.st_dev, st.st_ino, st.st_ctime_ns)
                listing = self.listings.get(folder)
                if listing is None or not listing.settled or listing.key != key:
                    listing = self._list(folder, key, now - st.st_ctime_ns > RACY_NS)
                    budget -= len(listing.subdirs) + len(listing.found)
                budget -= 1
                fresh[folder] = listing
                found += listing.found
                stack += listing.subdirs
            self.listings = fresh
            return [Path(p) for p in found]

    def _list(self, folder: str, key: tuple[int, int, int], settled: bool) -> _Listing:
        top = folder == self.workspace
        subdirs: list[str] = []
        found: list[str] = []
        try:
            entries = os.scandir(folder)
        except OSError:
            return _Listing(key, (), (), False)
        with entries:
            for entry in entries:
                name = entry.name
                if name == ".git":
                    if not top:
                        found.append(entry.path)
                    continue
                if not top and name in NESTED_FILES:
                    found.append(entry.path)
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False) and name not in WALK_SKIP:
                        subdirs.append(entry.path)
                except OSError:
                    continue
        return _Listing(key, tuple(subdirs), tuple(found), settled)


def read_regular(path: Path, limit: int = 4096) -> bytes | None:
    """The first `limit` bytes of `path` when it is a regular file, else None. Non-blocking: a FIFO planted (or
    swapped in) under a name the host reads must not hang coder; nothing read leaves the caller."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


_SCANNERS: dict[str, NestedScanner] = {}
_SCANNERS_LOCK = threading.Lock()


def nested_entries(workspace: Path) -> list[Path]:
    """What `NestedScanner.scan` finds in `workspace` (a real path), with the scanner kept for the process."""
    key = str(workspace)
    with _SCANNERS_LOCK:
        scanner = _SCANNERS.get(key)
        if scanner is None:
            if len(_SCANNERS) >= 64:  # many workspaces in one process (batch runs): forget the oldest
                _SCANNERS.pop(next(iter(_SCANNERS)))
            scanner = _SCANNERS[key] = NestedScanner(key)
    return scanner.scan()
