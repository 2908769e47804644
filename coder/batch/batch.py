"""The batch scheduler: which instances to run, how many at once, when to stop starting new ones.

Local parallelism uses threads, each supervising one `coder run` subprocess: the heavy work is in the
subprocesses, and threads let the scheduler see every result the moment it exists. The whole-run cost limit is
checked after every finished instance: once reached no new instance starts, the running ones finish (their
cost counts, their predictions are kept), and the run ends with exit code 1 and a note saying so.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from coder.base.errors import CoderError, ConfigError, Interrupted, UsageError
from coder.batch.ahead import WorkspacesAhead
from coder.batch.attempts import run_instance
from coder.batch.instance_run import (
    InstanceOutcome,
    RunConfig,
    make_workspace,
    model_for,
    workspace_dir,
)
from coder.batch.instances import Instance
from coder.batch.outputs import RunDir, atomic_write
from coder.batch.progress import Progress
from coder.batch.ray_backend import run_on_ray
from coder.batch.runner import interrupt_all, start_fork_server
from coder.batch.workspace import find_mirror


@dataclass
class BatchSummary:
    total: int = 0
    skipped: int = 0
    finished: int = 0
    crashed: int = 0
    not_started: int = 0
    cost_usd: float = 0.0
    stopped_by_cost: bool = False
    interrupted: bool = False
    statuses: list = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return 130
        return 1 if (self.crashed or self.stopped_by_cost) else 0


class CostGuard:
    """The whole-run budget; the cost of instances finished in earlier (resumed) invocations counts too.

    It also stops the run when the agent cannot even start (exit code 2: bad model name, missing API key) before
    any instance succeeded: every other instance would fail the same way, one by one."""

    def __init__(self, limit: float | None, already_spent: float) -> None:
        self.limit = limit
        self.spent = already_spent
        self.abort: str | None = None
        self._lock = threading.Lock()

    def add(self, cost: float) -> None:
        with self._lock:
            self.spent += cost

    @property
    def exhausted(self) -> bool:
        return self.abort is not None or (self.limit is not None and self.spent >= self.limit)


def plan(instances: list[Instance], run: RunDir, redo: bool) -> tuple[list[Instance], list[Instance]]:
    """(to run, skipped because already done)."""
    if redo:
        return list(instances), []
    todo, skipped = [], []
    for inst in instances:
        (skipped if run.is_done(inst.instance_id) else todo).append(inst)
    return todo, skipped


def run_batch(instances: list[Instance], cfg: RunConfig, progress_out=None, progress_err=None) -> BatchSummary:
    """Run the instances not done yet in cfg.run_dir; every finished one is recorded before the next starts."""
    if not instances:
        raise UsageError("no instances to run (check --instances / --filter / --slice)")
    if cfg.workers < 1:
        raise UsageError("--workers must be at least 1")
    run = RunDir(cfg.run_dir)
    run.root.mkdir(parents=True, exist_ok=True)
    lock = _lock_run_dir(run.root)
    try:
        return _run_batch(instances, cfg, run, progress_out, progress_err)
    finally:
        lock.close()


def _lock_run_dir(root: Path):
    """One invocation per run directory: two would run the same instances twice and race on preds.json."""
    fh = open(root / ".lock", "a+")  # noqa: SIM115 - held for the whole run, closed by the caller
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise UsageError(f"{root} is in use by another `coder swebench run` / `coder batch`; wait for it or pick "
                         "another --output") from None
    return fh


def preflight(instances: list[Instance], cfg: RunConfig, warn: Callable[[str], None]) -> None:
    """Check before anything starts what would make instances fail the same way: missing mirrors (with the
    commands that make them) and missing scripts of a `scripted:DIR` run. When no instance could run, fail once
    with the list; when some could, warn once and run those (the others crash with the same reason)."""
    if not instances:
        return
    problems: list[str] = []
    blocked: set[str] = set()
    if cfg.source_repo is None and not cfg.allow_network:
        cache = Path(cfg.cache_dir).expanduser()
        missing = sorted({i.repo for i in instances if not (cfg.repos_dir and find_mirror(cfg.repos_dir, i.repo))
                          and not find_mirror(cache, i.repo)})
        if missing:
            where = cfg.repos_dir or Path("MIRRORS")
            blocked |= {i.instance_id for i in instances if i.repo in missing}
            problems.append(f"no local mirror of {', '.join(missing)}"
                            + ("" if cfg.repos_dir else " (no --repos-dir given)")
                            + "; make them with:\n" + "\n".join(
                                f"  git clone --mirror https://github.com/{r}.git {where}/{r.replace('/', '__')}"
                                for r in missing)
                            + f"\nand pass --repos-dir {where} (or --allow-network to clone them).")
    no_script = []
    for inst in instances:
        try:
            for attempt in range(1, cfg.attempts + 1) if cfg.attempts > 1 else (0,):
                model_for(inst, cfg.model, attempt)
        except CoderError:
            no_script.append(inst.instance_id)
    if no_script:
        blocked |= set(no_script)
        problems.append(f"no script for {len(no_script)} instance(s) in {cfg.model.split(':', 1)[1]}: "
                        + ", ".join(no_script[:10]) + (" ..." if len(no_script) > 10 else ""))
    if not problems:
        return
    if blocked >= {i.instance_id for i in instances}:
        raise UsageError("no instance can run:\n" + "\n".join(problems))
    warn(f"{len(blocked)} of {len(instances)} instance(s) cannot run and will crash:\n" + "\n".join(problems))


def _run_batch(instances: list[Instance], cfg: RunConfig, run: RunDir, progress_out, progress_err) -> BatchSummary:
    atomic_write(run.root / "run.json", json.dumps({"config": cfg.to_dict(), "started_at": time.time(),
                                                    "instances": [i.instance_id for i in instances]}, indent=1))
    todo, skipped = plan(instances, run, cfg.redo)
    preflight(todo, cfg, lambda text: print(f"coder: warning: {text}", file=progress_err or sys.stderr))
    spent_before = sum(st.cost_usd for st in (run.read_status(i.instance_id) for i in skipped) if st)
    guard = CostGuard(cfg.total_cost, spent_before)
    summary = BatchSummary(total=len(instances), skipped=len(skipped))
    kwargs = {k: v for k, v in (("out", progress_out), ("err", progress_err)) if v is not None}
    progress = Progress(total=len(todo), workers=cfg.workers, skipped=len(skipped), enabled=cfg.progress,
                        **kwargs)
    progress.cost = spent_before
    run.write_preds()  # a resumed run has its preds.json even before the first new instance ends

    def on_outcome(outcome: InstanceOutcome) -> None:
        st = outcome.status
        inst_dir = run.inst_dir(st.instance_id)
        for name, text in outcome.files.items():  # artefacts of a remote (Ray) worker
            atomic_write(inst_dir / name, text)
        run.record(st, outcome.patch)
        guard.add(st.cost_usd)
        summary.cost_usd = guard.spent
        if st.state == "crashed" and re.match(r"coder run exited 2\b", st.error or "") and summary.finished == 0:
            guard.abort = st.error
        summary.finished += st.state == "done"
        summary.crashed += st.state not in ("done", "interrupted")
        summary.statuses.append(st)
        progress.finished(st)

    if guard.exhausted and todo:
        summary.stopped_by_cost, summary.not_started = True, len(todo)
        progress.note = f"total cost limit ${cfg.total_cost:g} already reached"
        progress.close()
        return summary
    backend: Callable[..., None] = _run_ray if cfg.backend == "ray" else _run_local
    try:
        backend(todo, cfg, on_outcome, guard, progress, summary)
    finally:
        progress.close()
    if guard.abort:
        raise ConfigError(f"stopped: the agent cannot start, so no further instance was started: {guard.abort}")
    return summary


def _run_local(todo: list[Instance], cfg: RunConfig, on_outcome: Callable[[InstanceOutcome], None],
               guard: CostGuard, progress: Progress, summary: BatchSummary) -> None:
    pending = list(todo)
    running: dict[Future[InstanceOutcome], Instance] = {}
    previous = _install_sigterm()
    ahead = WorkspacesAhead()  # the next instances' workspaces made while these run (coder/batch/ahead.py)
    if todo and not guard.exhausted:
        start_fork_server(cfg.model)  # (the provider is what counts: every instance's model has the same)
    try:
        with ThreadPoolExecutor(max_workers=cfg.workers, thread_name_prefix="coder-batch") as pool:
            try:
                while pending or running:
                    while pending and len(running) < cfg.workers and not guard.exhausted:
                        inst = pending.pop(0)
                        running[pool.submit(run_instance, inst, cfg, None, ahead)] = inst
                        progress.started_one()
                        for nxt in pending[:cfg.workers] if not guard.exhausted else ():
                            dest = workspace_dir(nxt, cfg)
                            ahead.prepare(dest, partial(make_workspace, nxt, cfg, dest))
                    if guard.exhausted and pending:
                        summary.stopped_by_cost = guard.abort is None
                        summary.not_started = len(pending)
                        progress.note = (f"total cost limit ${cfg.total_cost:g} reached: " if guard.abort is None
                                         else "the agent cannot start: ") + \
                            f"{len(pending)} not started, finishing the running ones"
                        pending.clear()
                    if not running:
                        break
                    finished, _ = wait(list(running), timeout=0.5, return_when=FIRST_COMPLETED)
                    progress.tick()
                    for fut in finished:
                        running.pop(fut)
                        on_outcome(fut.result())
            except KeyboardInterrupt:
                summary.interrupted = True
                summary.not_started += len(pending)
                pending.clear()
                progress.note = "interrupted: stopping the running instances"
                interrupt_all()
                for fut in list(running):
                    on_outcome(fut.result())
                running.clear()
    finally:
        ahead.close()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    if summary.interrupted:
        raise Interrupted(f"batch interrupted: {summary.finished} instances finished in this invocation, the "
                          "interrupted ones are rerun when you run the same command again")


def _install_sigterm():
    """SIGTERM behaves like Ctrl-C: stop the agents cleanly and record what they got to."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise KeyboardInterrupt

    return signal.signal(signal.SIGTERM, handler)


def _run_ray(todo: list[Instance], cfg: RunConfig, on_outcome: Callable[[InstanceOutcome], None],
             guard: CostGuard, progress: Progress, summary: BatchSummary) -> None:
    try:
        run_on_ray(todo, cfg, on_outcome, guard, progress, summary)
    except KeyboardInterrupt:
        raise Interrupted("batch interrupted; the Ray tasks were cancelled; rerun the same command to resume") \
            from None


def default_run_dir(kind: str) -> Path:
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "coder" / kind
    return base / time.strftime("%Y%m%d-%H%M%S")
