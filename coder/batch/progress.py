"""Live progress of a batch: done / running / failed, cost so far, ETA.

On a terminal one line is redrawn in place (stderr) below the status lines (stdout); in a log file (CI, nohup)
there is no redraw, only the status lines and a summary every few instances, so logs stay readable.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TextIO

from coder.batch.outputs import InstanceStatus


@dataclass
class Progress:
    total: int
    workers: int = 1
    skipped: int = 0
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    enabled: bool = True
    done: int = 0
    failed: int = 0
    running: int = 0
    cost: float = 0.0
    durations: list[float] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    note: str = ""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._live = self.enabled and hasattr(self.err, "isatty") and self.err.isatty()

    def started_one(self) -> None:
        with self._lock:
            self.running += 1
            self._draw()

    def finished(self, st: InstanceStatus) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)
            self.cost += st.cost_usd
            self.durations.append(st.duration_s)
            if st.state == "done" and st.exit_reason in ("done", "max_turns", "max_cost", "wall_time", "stuck"):
                self.done += 1
            elif st.state != "interrupted":  # an interrupted instance is rerun on resume, not a failure
                self.failed += 1
            n = self.done + self.failed
            self._clear()
            if self.enabled:
                print(f"[{n + self.skipped}/{self.total + self.skipped}] {st.state:<11} {st.line()}",
                      file=self.out, flush=True)
                if not self._live and (n % 10 == 0):
                    print(self.summary(), file=self.err, flush=True)
            self._draw()

    def tick(self) -> None:
        """Redraw the live line (elapsed time and ETA move even when nothing finishes)."""
        with self._lock:
            self._draw()

    def eta_s(self) -> float | None:
        remaining = self.total - self.done - self.failed
        if not self.durations or remaining <= 0:
            return None if remaining > 0 else 0.0
        wall = time.monotonic() - self.started
        per = wall / len(self.durations)  # observed throughput already includes the parallelism
        return per * remaining

    def summary(self) -> str:
        eta = self.eta_s()
        eta_s = "?" if eta is None else _dur(eta)
        note = f"  {self.note}" if self.note else ""
        return (f"done {self.done}  running {self.running}  failed {self.failed}  "
                f"left {max(0, self.total - self.done - self.failed - self.running)}  "
                f"skipped {self.skipped}  cost ${self.cost:.4f}  elapsed {_dur(time.monotonic() - self.started)}  "
                f"eta {eta_s}{note}")

    def _clear(self) -> None:
        if self._live:
            self.err.write("\r\x1b[2K")
            self.err.flush()

    def _draw(self) -> None:
        if self._live:
            self.err.write("\r\x1b[2K" + self.summary()[: 200])
            self.err.flush()

    def close(self) -> None:
        with self._lock:
            self._clear()
            if self.enabled:
                print(self.summary(), file=self.err, flush=True)


def _dur(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"
