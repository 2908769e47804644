"""Resource limits for sandboxed processes: no fork bomb, giant file or memory hog takes the machine down.

Two layers, because neither works everywhere:
- rlimits, set before bwrap runs by the door's exec wrapper (coder/host/limits.py; never `preexec_fn`, which can
  hang a child forked from a process with threads): file size, core dumps, data size, and RLIMIT_NPROC. The kernel
  ignores RLIMIT_NPROC for uid 0, and counts it per user across the whole machine, so the limit is "what this
  user runs now + `nproc`".
- a cgroup per sandbox (v1 `pids`/`memory` hierarchies, or a delegated v2 subtree) with `pids.max` and a
  memory limit, when the caller may create one; the same wrapper moves the process into it before bwrap runs.
  That is what contains a fork bomb when coder runs as root (in containers), and it lets `close()` kill every
  process the sandbox left behind.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from coder.host import ProcessLimits

CGROUP_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()
_stale_checked = False


@dataclass
class Limits:
    nproc: int = 512
    file_size_mb: int = 4096
    memory_mb: int = 8192


def _own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path."""
    result: dict[str, str] = {}
    try:
        text = Path("/proc/self/cgroup").read_text()
    except OSError:
        return result
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            result[controller] = parts[2]
    return result


def _user_tasks(uid: int) -> int:
    """Threads owned by `uid` now (what RLIMIT_NPROC counts)."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
        except OSError:
            continue
    return count


@dataclass
class Cgroups:
    """The cgroups of one sandbox. Empty when the machine does not let us create any."""

    dirs: list[Path] = field(default_factory=list)
    pids_limited: bool = False
    memory_limited: bool = False
    _procs_files: list[str] = field(default_factory=list, repr=False)

    @classmethod
    def create(cls, limits: Limits) -> Cgroups:
        groups = cls()
        name = f"coder-{os.getpid()}-{next(_counter)}"
        own = _own_cgroups()
        global _stale_checked
        if not _stale_checked:
            _stale_checked = True
            _remove_stale(own)
        if (CGROUP_ROOT / "cgroup.controllers").exists() and "" in own:  # pure v2
            base = CGROUP_ROOT / own[""].lstrip("/")
            d = groups._make(base / name)
            if d is not None:
                groups.pids_limited = groups._write(d / "pids.max", str(limits.nproc))
                if limits.memory_mb:
                    groups.memory_limited = groups._write(d / "memory.max", str(limits.memory_mb << 20))
            return groups
        if "pids" in own:
            d = groups._make(CGROUP_ROOT / "pids" / own["pids"].lstrip("/") / name)
            if d is not None:
                groups.pids_limited = groups._write(d / "pids.max", str(limits.nproc))
        if "memory" in own and limits.memory_mb:
            d = groups._make(CGROUP_ROOT / "memory" / own["memory"].lstrip("/") / name)
            if d is not None:
                groups.memory_limited = groups._write(d / "memory.limit_in_bytes", str(limits.memory_mb << 20))
        return groups

    def _make(self, path: Path) -> Path | None:
        try:
            path.mkdir()
        except OSError:
            return None
        self.dirs.append(path)
        self._procs_files.append(str(path / "cgroup.procs"))
        return path

    @staticmethod
    def _write(path: Path, value: str) -> bool:
        try:
            path.write_text(value)
            return True
        except OSError:
            return False

    @property
    def procs_files(self) -> tuple[str, ...]:
        """The `cgroup.procs` file of every group: a process joins by writing its pid there."""
        return tuple(self._procs_files)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            try:
                found |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                continue
        return found

    def close(self) -> None:
        """Kill what is still inside, then remove the groups."""
        for attempt in range(100):
            pids = self.pids()
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            remaining = []
            for d in self.dirs:
                try:
                    d.rmdir()
                except OSError:
                    remaining.append(d)
            self.dirs = remaining
            if not self.dirs:
                return
            time.sleep(0.002 * (1 + attempt // 5))


def _remove_stale(own: dict[str, str]) -> None:
    """Remove empty groups that a killed coder process left behind (named after a pid that is gone)."""
    bases = [CGROUP_ROOT / own[""].lstrip("/")] if "" in own else []
    bases += [CGROUP_ROOT / c / own[c].lstrip("/") for c in ("pids", "memory") if c in own]
    for base in bases:
        try:
            entries = list(base.glob("coder-*-*"))
        except OSError:
            continue
        for entry in entries:
            pid = entry.name.split("-")[1]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                try:
                    entry.rmdir()
                except OSError:
                    pass


def process_limits(limits: Limits, groups: Cgroups | None, nproc_base: int | None) -> ProcessLimits:
    """What the door's wrapper sets before bwrap runs: the groups to join and the rlimits."""
    mb = 1024 * 1024
    rlimits = {"core": 0}
    if limits.file_size_mb:
        rlimits["fsize"] = limits.file_size_mb * mb
    if limits.memory_mb and (groups is None or not groups.memory_limited):
        rlimits["data"] = limits.memory_mb * mb
    if nproc_base is not None and limits.nproc:
        rlimits["nproc"] = nproc_base + limits.nproc
    return ProcessLimits(rlimits, groups.procs_files if groups is not None else ())


def prepare(limits: Limits, use_cgroups: bool = True) -> tuple[Cgroups | None, ProcessLimits]:
    """Create the cgroups (when possible) and the limits for one sandbox."""
    groups = Cgroups.create(limits) if use_cgroups else None
    nproc_base = None if os.geteuid() == 0 else _user_tasks(os.getuid())
    return groups, process_limits(limits, groups, nproc_base)
