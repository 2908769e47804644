"""The run directory: one folder per instance, the predictions in the official formats, status lines.

Layout of RUN_DIR:
  run.json                      the configuration of the (last) invocation
  preds.json / preds.jsonl      predictions, official format, rebuilt from the instance folders after each one
  evidence.json                 each prediction's evidence record (issue 49; beside preds: they keep the three
                                official keys the harness and its submission tools read)
  status.jsonl                  one line per finished instance (appended; the last line of an id wins)
  instances/<id>/status.json    the outcome of that instance: written last, atomically; its presence = done
  instances/<id>/patch.diff, <id>.traj.json, events.jsonl, prompt.md, agent.log, state/ (CODER_STATE_DIR)
  workspaces/<id>/              the checkout (deleted after the patch is taken unless --keep-workspaces)

Everything an instance produces lives in its own folder and the shared files are derived from those folders, so
a run killed at any moment loses at most the instances that were running, never a prediction already made.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coder.base.atomic import write_text_atomic
from coder.base.errors import UsageError

_LOCK = threading.Lock()


def atomic_write(path: Path, text: str, durable: bool = True) -> None:
    """Readers see the old file or the new one, never a part. `durable=False` skips the fsync (a few ms, tens
    under load) for files derived from others that a resumed run rewrites anyway (preds.json, preds.jsonl)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text, mode=0o666, durable=durable)  # 0o666 less the umask: what open() gives


@dataclass
class InstanceStatus:
    """The status line of one instance: what happened, what it cost."""

    instance_id: str
    state: str = "done"  # done: a prediction exists; crashed: infrastructure failed, rerun on resume
    exit_reason: str = "error"
    submitted: bool = False  # the agent ended on its own with a non-empty patch
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0
    patch_files: list[str] = field(default_factory=list)
    patch_added: int = 0
    patch_removed: int = 0
    model: str = ""
    session_id: str = ""
    error: str | None = None
    worker: str = ""
    finished_at: float = 0.0
    #: what the agent could reach (coder/batch/reach.py: the workspace's git, hidden paths, network)
    reach: dict[str, Any] = field(default_factory=dict)
    #: where the run was not clean: {flag, turn, evidence} (turn 0: the workspace before the agent)
    flags: list[dict[str, Any]] = field(default_factory=list)
    #: the evidence record the agent's run ended with (coder/evidence: state verified | failed | unverified)
    evidence: dict[str, Any] | None = None
    verdict: str = ""  # the reviewer's mechanical verdict, when attempts were ranked by it
    attempts: int = 1  # `--attempts`: how many ran; the status is the chosen one's (attempts.json says why)
    chosen_attempt: int = 0
    choice: str = ""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InstanceStatus:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def line(self) -> str:
        patch = f"+{self.patch_added}/-{self.patch_removed}" if self.patch_files else "empty"
        err = f" error={self.error[:160]!r}" if self.error else ""
        flags = f" flags={len(self.flags)}" if self.flags else ""
        evidence = f" evidence={self.evidence.get('state')}" if self.evidence else ""
        best = f" best-of={self.attempts} chose={self.chosen_attempt}" if self.attempts > 1 else ""
        return (f"{self.instance_id}  exit={self.exit_reason} submitted={'yes' if self.submitted else 'no'} "
                f"turns={self.turns} tokens={_k(self.tokens)} cost=${self.cost_usd:.4f} "
                f"time={self.duration_s:.1f}s patch={patch}{evidence}{best}{flags}{err}")


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def patch_stats(patch: str) -> tuple[int, int]:
    added = removed = 0
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


class RunDir:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.instances = self.root / "instances"
        self.workspaces = self.root / "workspaces"
        #: the predictions, read from the instance folders once and then kept up to date by `record`, so a
        #: finished instance costs one write of preds.json, not a read of every other instance's files
        self._preds: dict[str, dict[str, str]] | None = None
        self._evidence: dict[str, Any] = {}  # instance id -> its prediction's evidence record (evidence.json)

    def inst_dir(self, instance_id: str) -> Path:
        return self.instances / instance_id

    def status_path(self, instance_id: str) -> Path:
        return self.inst_dir(instance_id) / "status.json"

    def read_status(self, instance_id: str) -> InstanceStatus | None:
        path = self.status_path(instance_id)
        try:
            return InstanceStatus.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError, TypeError):
            return None

    def all_statuses(self) -> list[InstanceStatus]:
        if not self.instances.is_dir():
            return []
        out = []
        for d in sorted(self.instances.iterdir()):
            st = self.read_status(d.name)
            if st is not None:
                out.append(st)
        return out

    def is_done(self, instance_id: str) -> bool:
        st = self.read_status(instance_id)
        return st is not None and st.state == "done"

    def record(self, status: InstanceStatus, patch: str | None) -> None:
        """Write an instance's outcome (patch first, status last), then refresh the shared files."""
        d = self.inst_dir(status.instance_id)
        if patch is not None:
            atomic_write(d / "patch.diff", patch)
        atomic_write(self.status_path(status.instance_id), json.dumps(status.to_dict(), indent=1))
        with _LOCK:
            with open(self.root / "status.jsonl", "a", encoding="utf-8") as fh:
                fh.write(json.dumps(status.to_dict()) + "\n")
            if self._preds is None:
                self._preds = self.predictions()
            elif status.state == "done":
                self._preds[status.instance_id] = _prediction(status, patch or "")
                self._evidence[status.instance_id] = status.evidence
            else:
                self._preds.pop(status.instance_id, None)
            self._write_preds(self._preds)

    def predictions(self) -> dict[str, dict[str, str]]:
        preds: dict[str, dict[str, str]] = {}
        for st in self.all_statuses():
            if st.state != "done":
                continue
            patch_file = self.inst_dir(st.instance_id) / "patch.diff"
            patch = patch_file.read_text(encoding="utf-8") if patch_file.is_file() else ""
            preds[st.instance_id] = _prediction(st, patch)
            self._evidence[st.instance_id] = st.evidence
        return preds

    def write_preds(self) -> None:
        self._preds = self.predictions()
        self._write_preds(self._preds)

    def _write_preds(self, preds: dict[str, dict[str, str]]) -> None:
        ordered = dict(sorted(preds.items()))  # derived from the instance folders, rebuilt when a run starts:
        # no fsync needed (the instances' patch.diff and status.json, which they are made of, have theirs)
        atomic_write(self.root / "preds.json", json.dumps(ordered, indent=2), durable=False)
        atomic_write(self.root / "preds.jsonl", "".join(json.dumps(p) + "\n" for p in ordered.values()),
                     durable=False)
        evidence = {k: self._evidence.get(k) for k in ordered}  # beside the predictions, which keep the three
        atomic_write(self.root / "evidence.json", json.dumps(evidence, indent=1), durable=False)  # official keys


def _prediction(status: InstanceStatus, patch: str) -> dict[str, str]:
    """One prediction in the official format."""
    return {"instance_id": status.instance_id, "model_name_or_path": status.model or "coder", "model_patch": patch}


def load_predictions(path: Path) -> dict[str, dict[str, Any]]:
    """preds.json (dict by id, or a list) or preds.jsonl, as the official harness accepts them."""
    path = Path(path)
    if path.is_dir():
        path = path / "preds.json"
    if not path.is_file():
        raise UsageError(f"predictions file {path} does not exist")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            data = json.loads(text)
            rows = list(data.values()) if isinstance(data, dict) else data
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: invalid JSON ({exc.msg})") from None
    preds = {}
    for row in rows:
        if not isinstance(row, dict) or "instance_id" not in row:
            raise UsageError(f"{path}: every prediction needs instance_id, model_name_or_path, model_patch")
        preds[row["instance_id"]] = row
    return preds
