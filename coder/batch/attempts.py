"""Best of N by evidence (issue 49): `--attempts N` runs N independent attempts per instance and submits the one with
the strongest evidence.

Each attempt is a whole instance run (instance_run.process_instance with its attempt number: its own workspace,
its own folder `instances/<id>/attempts/<k>/`, a scripted run's `DIR/<id>.<k>.json` when there is one), and the
attempts of every instance share the batch's `--workers` slots: at most that many agents run at once, whatever
the mix of instances and attempts. The choice, in order: an attempt that made a patch; the strongest evidence
(verified over failed over unverified, coder/evidence/record.py); the reviewer's mechanical verdict on the patch
(pass over warn over fail: apply, parse, lint, hygiene, gaming; its tests are the evidence already); the smaller
patch; the earlier attempt. `attempts.json` records every attempt and why the chosen one won; the instance's own
status, patch and trajectory are the chosen attempt's, with the cost, tokens and turns of all of them.
"""

from __future__ import annotations

import json
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from coder.batch.ahead import WorkspacesAhead
from coder.batch.instance_run import InstanceOutcome, RunConfig, attempt_ref, branch_ref, process_instance
from coder.batch.instances import Instance
from coder.batch.outputs import atomic_write
from coder.batch.workspace import git
from coder.evidence.record import STRENGTH

#: the artefacts of the chosen attempt that the instance's own folder gets (besides status and patch)
CHOSEN_FILES = ("events.jsonl", "result.json", "prompt.md", "agent.log")
VERDICTS = {"pass": 2, "warn": 1, "fail": 0}
_SLOTS: dict[int, ThreadPoolExecutor] = {}
_SLOTS_LOCK = threading.Lock()


def run_instance(inst: Instance, cfg: RunConfig, work_root: Path | None = None,
                 ahead: WorkspacesAhead | None = None) -> InstanceOutcome:
    """One instance, once or best of `cfg.attempts` (what the schedulers call)."""
    if cfg.attempts <= 1:
        return process_instance(inst, cfg, work_root, ahead)
    pool = _pool(cfg.workers)
    futures = [pool.submit(process_instance, inst, cfg, work_root, ahead if k == 1 else None, k)
               for k in range(1, cfg.attempts + 1)]
    outcomes = [f.result() for f in futures]
    return choose(inst, cfg, outcomes, Path(work_root or cfg.run_dir) / "instances" / inst.instance_id)


def _pool(workers: int) -> ThreadPoolExecutor:
    """The attempts' slots: one pool of `workers` threads for the whole process, so N attempts of several
    instances never run more agents at once than `--workers`."""
    with _SLOTS_LOCK:
        if workers not in _SLOTS:
            _SLOTS[workers] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="coder-attempt")
        return _SLOTS[workers]


@dataclass
class Attempt:
    number: int
    state: str  # done | crashed | interrupted
    exit_reason: str
    evidence: str  # verified | failed | unverified | none (no code changed)
    verdict: str  # the reviewer's: pass | warn | fail | none
    added: int
    removed: int
    cost_usd: float
    submitted: bool

    def rank(self) -> tuple[int, int, int, int, int]:
        return (int(self.state == "done" and self.added + self.removed > 0), STRENGTH.get(self.evidence, -1),
                VERDICTS.get(self.verdict, -1), -(self.added + self.removed), -self.number)


def _attempt(number: int, outcome: InstanceOutcome) -> Attempt:
    st = outcome.status
    evidence = (st.evidence or {}).get("state") or "none"
    return Attempt(number, st.state, st.exit_reason, str(evidence), st.verdict or "none", st.patch_added,
                   st.patch_removed, st.cost_usd, st.submitted)


def why(best: Attempt, others: list[Attempt]) -> str:
    """Why `best` won over the strongest of the others, by the first rule that tells them apart."""
    if not others:
        return "the only attempt"
    second = max(others, key=Attempt.rank)
    rules = (("a patch", lambda a: "a patch" if a.rank()[0] else "no patch"),
             ("the strongest evidence", lambda a: a.evidence), ("the reviewer's verdict", lambda a: a.verdict),
             ("the smaller patch", lambda a: f"+{a.added}/-{a.removed}"))
    for k, (rule, shown) in enumerate(rules):
        if best.rank()[k] != second.rank()[k]:
            return f"{rule}: {shown(best)} over {shown(second)} (attempt {second.number})"
    return f"as strong as attempt {second.number} on every count: the earlier one"


def choose(inst: Instance, cfg: RunConfig, outcomes: list[InstanceOutcome], inst_dir: Path) -> InstanceOutcome:
    """The instance's outcome: the best attempt's, with every attempt's spend, and `attempts.json` saying why."""
    rows = [_attempt(k, o) for k, o in enumerate(outcomes, 1)]
    best = max(rows, key=Attempt.rank)
    reason = why(best, [r for r in rows if r is not best])
    chosen = outcomes[best.number - 1]
    everyone = [o.status for o in outcomes]
    status = replace(chosen.status, cost_usd=sum(s.cost_usd for s in everyone),
                     turns=sum(s.turns for s in everyone),
                     input_tokens=sum(s.input_tokens for s in everyone),
                     output_tokens=sum(s.output_tokens for s in everyone),
                     cache_read_tokens=sum(s.cache_read_tokens for s in everyone),
                     cache_write_tokens=sum(s.cache_write_tokens for s in everyone),
                     duration_s=max(s.duration_s for s in everyone), attempts=len(rows), chosen_attempt=best.number,
                     choice=reason)
    if not any(s.state == "done" for s in everyone):
        status.state = "crashed"  # no attempt made a prediction: the instance is run again on resume
    record = {"instance_id": inst.instance_id, "chosen": best.number, "why": reason,
              "attempts": [{**r.__dict__, "turns": o.status.turns, "session_id": o.status.session_id,
                            "error": o.status.error}
                           for r, o in zip(rows, outcomes, strict=True)]}
    atomic_write(inst_dir / "attempts.json", json.dumps(record, indent=1))
    if cfg.branches and cfg.source_repo is not None:
        _branch(Path(cfg.source_repo), inst, best.number if (chosen.patch or "").strip() else 0, len(rows))
    files = _lift(inst_dir, best.number, inst.instance_id)
    remote = inst_dir.parent.parent.resolve() != Path(cfg.run_dir).resolve()
    return InstanceOutcome(status, chosen.patch, {**(files if remote else {}),
                                                  **({"attempts.json": json.dumps(record, indent=1)}
                                                     if remote else {})})


def _branch(source_repo: Path, inst: Instance, chosen: int, attempts: int) -> None:
    """`--branches`: the chosen attempt's commit becomes branch coder/<id> (none when no attempt made a patch),
    and the attempts' own refs go."""
    if chosen:
        git(source_repo, "update-ref", branch_ref(inst), attempt_ref(inst, chosen))
    for k in range(1, attempts + 1):
        git(source_repo, "update-ref", "-d", attempt_ref(inst, k), check=False)


def _lift(inst_dir: Path, number: int, instance_id: str) -> dict[str, str]:
    """Copy the chosen attempt's trajectory and logs into the instance's folder (where a run of one attempt has
    them); returns them by name."""
    source = inst_dir / "attempts" / str(number)
    out: dict[str, Any] = {}
    for name in (*CHOSEN_FILES, f"{instance_id}.traj.json"):
        path = source / name
        if path.is_file():
            shutil.copyfile(path, inst_dir / name)
            out[name] = path.read_text(encoding="utf-8", errors="replace")
    return out
