"""Workspaces made ahead and removed behind, off the instances' own time (the local backend of coder/batch/batch.py).

Per instance, the checkout of its base commit and the removal of the checkout afterwards are the largest costs
outside the agent's session (a repository of 500 files: 0.08 s and 0.05 s of a ~0.3 s instance on a quiet
2-core machine, several times that under load), and neither needs to wait for anything the agent does. So one
housekeeping thread makes the workspaces of the next instances while the current ones run, and another removes
a finished instance's workspace while the next one runs (two, so that a slow removal never delays the next
checkout). With a real model the agent spends its time waiting for
the provider, so this housekeeping costs no instance any time at all; with a model that answers at once it runs
beside the agent process on another core.

The workspaces are the same ones `process_instance` makes itself (`create_workspace`: hardened host git, a shared
clone at the base commit); a workspace made ahead whose instance never starts (cost limit, Ctrl+C, a batch that
stops) is removed by `close()`, which also waits for every removal, so a finished batch leaves no workspace
behind, as before. A failure to make one is the instance's failure, raised where it would have been.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from coder.batch.workspace import Workspace, remove_workspace

#: makes one instance's workspace (instance_run.make_workspace with its instance and place bound)
Maker = Callable[[], Workspace]


class WorkspacesAhead:
    """A thread that makes workspaces before their instance starts, and one that removes them after it ends."""

    def __init__(self) -> None:
        self._making = ThreadPoolExecutor(max_workers=1, thread_name_prefix="coder-batch-workspaces")
        self._removing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="coder-batch-removals")
        self._made: dict[Path, Future[Workspace]] = {}
        self._removals: list[Future[None]] = []
        self._lock = threading.Lock()

    def prepare(self, dest: Path, make: Maker) -> None:
        """Start making the workspace at `dest` (once; a second call for the same place does nothing)."""
        with self._lock:
            if dest not in self._made:
                self._made[dest] = self._making.submit(make)

    def take(self, dest: Path) -> Workspace | None:
        """The workspace made at `dest`, waiting for it if it is still being made; None when none was asked for.
        Raises what making it raised."""
        with self._lock:
            future = self._made.pop(dest, None)
        return None if future is None else future.result()

    def remove(self, dest: Path) -> None:
        """Remove a finished instance's workspace in the background (after it is made, when it is still being
        made for an instance that ended without taking it)."""
        with self._lock:
            making = self._made.pop(dest, None)
            self._removals.append(self._removing.submit(_remove_after, dest, making))

    def close(self) -> None:
        """Remove the workspaces made for instances that never started, and wait for every removal."""
        with self._lock:
            unused, self._made = list(self._made.items()), {}
        for dest, future in unused:
            if not future.cancel():  # being made or made: removed after it
                self._removals.append(self._removing.submit(_remove_after, dest, future))
        self._making.shutdown(wait=True)
        self._removing.shutdown(wait=True)
        with self._lock:
            removals, self._removals = self._removals, []
        for removal in removals:
            removal.result()


def _remove_after(dest: Path, making: Future[Workspace] | None) -> None:
    """Remove `dest` once whatever was making it is done (made, failed or cancelled)."""
    if making is not None and not making.cancel():
        making.exception()
    remove_workspace(dest)
