"""Commands the user sent to the background (Ctrl+B while the `bash` tool runs one; issue 24).

The decision (docs/decisions/24-the-app-open-all-day.md, "Background commands"): a detached command keeps the
persistent shell it runs in, and with it its sandbox: nothing is moved or re-launched, so it stays exactly as
confined as it was, with its processes, its private /tmp and its loopback. The session's next `bash` call gets a new
shell (same profile, same working directory). A thread per job reads the rest of the command's output into a log in
the session's state folder (outside the workspace; at most LOG_LIMIT bytes, the rest counted), until the command's
end marker; then that shell is closed, and with its sandbox whatever the command left running. The model reads a job
with the `bash_output` tool (what it printed since the last read, and whether it ended) and may stop it; the
session's end stops every job (`Jobs.close`, from the bash tool's `close`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOG_LIMIT = 8 * 1024 * 1024
MAX_JOBS = 4  # running at once: each holds a shell and its sandbox


@dataclass
class Job:
    id: str
    command: str
    shell: Any  # the PersistentShell still running the command
    log: Path
    started: float = field(default_factory=time.monotonic)
    status: str = "running"  # running / done / stopped / lost (the shell died)
    exit_code: int | None = None
    ended: float | None = None
    size: int = 0  # bytes in the log
    dropped: int = 0  # bytes past LOG_LIMIT, not kept
    read_to: int = 0  # how far the model has read
    told: bool = False  # the model has heard that it ended
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def state(self) -> str:
        took = (self.ended or time.monotonic()) - self.started
        if self.status == "running":
            return f"running for {took:.0f}s"
        if self.status == "done":
            return f"ended with exit code {self.exit_code} after {took:.0f}s"
        if self.status == "stopped":
            return f"stopped after {took:.0f}s (its sandbox was closed)"
        return f"lost after {took:.0f}s: its shell ended without an exit status"


class Jobs:
    """The session's background jobs; `on_end(job)` is told when one ends (from the job's thread)."""

    def __init__(self, state_dir: Path, on_end: Callable[[Job], None] | None = None) -> None:
        self.folder = Path(state_dir) / "background"
        self.on_end = on_end
        self.jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def room(self) -> bool:
        return sum(1 for j in self.jobs.values() if j.status == "running") < MAX_JOBS

    def adopt(self, shell: Any, command: str, so_far: str, started: float) -> Job:
        """Take over `shell`, whose `run` just returned detached with `so_far` (which the model has read)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._lock:
            ident = f"bg{len(self.jobs) + 1}"
            job = Job(ident, command, shell, self.folder / f"{ident}.log", started)
            self.jobs[ident] = job
        data = so_far.encode("utf-8", "replace")
        job.log.write_bytes(data)
        job.size = job.read_to = len(data)
        job.thread = threading.Thread(target=self._follow, args=(job,), name=f"coder-{ident}", daemon=True)
        job.thread.start()
        return job

    def _follow(self, job: Job) -> None:
        with job.log.open("ab") as out:
            def write(text: str) -> None:
                data = text.encode("utf-8", "replace")
                room = max(0, LOG_LIMIT - job.size)
                out.write(data[:room])
                out.flush()
                job.size += min(room, len(data))
                job.dropped += len(data) - min(room, len(data))

            try:
                code, status = job.shell.follow(write, job.stop)
            except Exception:  # noqa: BLE001 - a broken shell ends the job, never the session
                code, status = None, "eof"
        job.exit_code = code if status == "done" else None
        job.status = {"done": "done", "cancel": "stopped"}.get(status, "lost")
        job.ended = time.monotonic()
        job.shell.close()  # the command ended: its sandbox goes, with anything it left running
        if self.on_end is not None:
            try:
                self.on_end(job)
            except Exception:  # noqa: BLE001 - telling the frontend must not break the job's end
                pass

    def read(self, job: Job, from_start: bool = False) -> str:
        """What the job printed since the model's last read (or all of it)."""
        start = 0 if from_start else job.read_to
        with job.log.open("rb") as f:
            f.seek(start)
            data = f.read(max(0, job.size - start))
        job.read_to = start + len(data)
        if job.status != "running":
            job.told = True
        return data.decode("utf-8", "replace")

    def stop(self, job: Job) -> None:
        job.stop.set()
        if job.thread is not None:
            job.thread.join(10)

    def ended_notes(self) -> list[str]:
        """One line for each job that ended since the model last heard of it (added to the next bash result)."""
        notes = []
        for job in self.jobs.values():
            if job.status != "running" and not job.told:
                job.told = True
                notes.append(f"[background job {job.id} (`{_short(job.command)}`) {job.state()}; `bash_output` "
                             f"with id {job.id} shows what it printed since you last looked]")
        return notes

    def listing(self) -> str:
        if not self.jobs:
            return "No background jobs in this session."
        return "\n".join(f"{j.id}: `{_short(j.command)}` {j.state()}" for j in self.jobs.values())

    def close(self) -> None:
        """The session ends: every job still running is stopped, its sandbox closed."""
        for job in list(self.jobs.values()):
            if job.status == "running":
                job.stop.set()
        for job in list(self.jobs.values()):
            if job.thread is not None:
                job.thread.join(10)
            job.shell.close()


def _short(command: str) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= 60 else flat[:59] + "…"
