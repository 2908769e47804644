"""What one started persistent shell holds (coder/sandbox/shell.py): its process, its command folder, its cgroups
and the command file's descriptor, released exactly once, by `close()` or by the finalizer when the shell is
garbage-collected or the process exits without closing it."""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.sandbox import limits as limits_mod


@dataclass
class Held:
    """What one started shell holds, released exactly once (by close() or by the finalizer)."""

    child: Any = None
    control_dir: Path | None = None  # only when the shell created it
    cgroups: limits_mod.Cgroups | None = None
    fd: int | None = None

    def release(self) -> None:
        if self.child is not None:
            try:
                # --die-with-parent, the pid namespace and the cgroups take the rest along
                self.child.kill(signal.SIGKILL)
                self.child.wait()
                self.child.close(force=True)
            except Exception:  # noqa: BLE001 - releasing must never raise
                pass
            self.child = None
        if self.cgroups is not None:
            self.cgroups.close()
            self.cgroups = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.control_dir is not None:
            shutil.rmtree(self.control_dir, ignore_errors=True)
            self.control_dir = None
