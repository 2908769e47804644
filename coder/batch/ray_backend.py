"""`--backend ray`: the same instances as Ray tasks, on a local Ray or a cluster (`--address`).

Each task runs `process_instance` on whatever node Ray picks; that node needs coder installed (same version) and
the mirrors at the same `--repos-dir` path (or `--allow-network`). The task works in a scratch directory of its
node and returns the patch, the status and the trajectories as data; the driver writes them into RUN_DIR, so the
run directory only has to exist on the driver's machine. At most `--workers` tasks are in flight, which keeps the
whole-run cost limit as exact as in the local backend. Ray is an optional extra: `pip install 'coder[ray]'`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from coder.base.errors import CoderError, UsageError
from coder.batch.attempts import run_instance
from coder.batch.instance_run import InstanceOutcome, RunConfig
from coder.batch.instances import Instance
from coder.batch.outputs import InstanceStatus
from coder.host.audit import install
from coder.host.bridges import ray_init


def _remote_process(inst: Instance, cfg: RunConfig) -> InstanceOutcome:
    install()  # a Ray worker runs coder from here: held to the door as any coder process (coder/host/audit.py)
    scratch = Path(tempfile.mkdtemp(prefix=f"coder-ray-{inst.instance_id}-"))
    try:
        return run_instance(inst, cfg, work_root=scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _installed() -> bool:
    try:
        version("coder")
        return True
    except Exception:  # noqa: BLE001 - PackageNotFoundError and broken metadata alike
        return False


def _import_ray() -> Any:
    try:
        import ray  # optional (the ray extra), and heavy: loaded only for a run on Ray
    except ImportError:
        raise UsageError("--backend ray needs Ray: `pip install 'ray[default]'` (or `pip install 'coder[ray]'`)") \
            from None
    return ray


def run_on_ray(todo: list[Instance], cfg: RunConfig, on_outcome: Callable[[InstanceOutcome], None], guard: Any,
               progress: Any, summary: Any) -> None:
    ray = _import_ray()
    started_here = False
    if not ray.is_initialized():
        init_kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False}
        if cfg.address:
            init_kwargs["address"] = cfg.address
            if cfg.address.split(":")[0] in ("127.0.0.1", "localhost"):
                init_kwargs["_node_ip_address"] = "127.0.0.1"  # a loopback cluster: stay on loopback
        else:
            init_kwargs.update(num_cpus=max(cfg.workers, 1), include_dashboard=False,
                               _node_ip_address="127.0.0.1")
        if not _installed():
            # Workers must import the same coder the driver runs; a source checkout is not on their path.
            root = str(Path(__file__).resolve().parents[2])
            init_kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": os.pathsep.join(
                p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}}
        try:
            ray_init(ray, **init_kwargs)  # through the door: a local Ray starts its own processes
        except Exception as exc:  # noqa: BLE001 - Ray raises many kinds for "no cluster there"
            raise CoderError(f"could not connect to Ray at {cfg.address or 'a new local instance'}: {exc}") from None
        started_here = True
    task = ray.remote(num_cpus=1, max_retries=0)(_remote_process)
    pending = list(todo)
    running: dict[Any, Instance] = {}
    try:
        while pending or running:
            while pending and len(running) < cfg.workers and not guard.exhausted:
                inst = pending.pop(0)
                running[task.remote(inst, cfg)] = inst
                progress.started_one()
            if guard.exhausted and pending:
                summary.stopped_by_cost, summary.not_started = guard.abort is None, len(pending)
                progress.note = f"total cost limit ${cfg.total_cost:g} reached: {len(pending)} not started"
                pending.clear()
            if not running:
                break
            ready, _ = ray.wait(list(running), num_returns=1, timeout=0.5)
            progress.tick()
            for ref in ready:
                inst = running.pop(ref)
                try:
                    outcome = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a lost node or worker crash
                    outcome = InstanceOutcome(InstanceStatus(instance_id=inst.instance_id, state="crashed",
                                                             error=f"ray task failed: {exc}"), None)
                on_outcome(outcome)
    except KeyboardInterrupt:
        summary.interrupted = True
        for ref in running:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started_here:
            ray.shutdown()
