"""The host's own record of a session's checkpoints: which commit coder wrote for each one, and which is current.

The refs under `refs/coder/<session>/` live in the repository's git dir, which the sandboxed shell can write: it
can point a ref (`current` included) at a commit it made itself, whose tree holds `.git/config`, `.coder/` or
an `AGENTS.md`, and `/undo` would then write or delete those. So every checkpoint commit coder writes is also
recorded here, in the session's state folder (`coder.base.paths.session_dir`, on the host, outside every workspace
and never mounted in the sandbox), and only recorded commits are ever restored or taken as the current state.
One small JSON file per repository (a session may checkpoint more than one, e.g. in tests), replaced
atomically on each change.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from coder.base import paths
from coder.base.atomic import write_json_atomic


@dataclass
class CheckpointRecord:
    """Checkpoint id -> commit sha as coder wrote it, and the sha of the current checkpoint."""

    path: Path
    commits: dict[int, str] = field(default_factory=dict)
    current: str = ""

    @classmethod
    def load(cls, session_id: str, root: Path) -> CheckpointRecord:
        """The record of `session_id` in repository `root` (empty when coder wrote nothing there yet)."""
        digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        path = paths.session_dir(session_id) / "checkpoints" / f"{digest}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls(path)
        commits = data.get("commits") if isinstance(data, dict) else None
        if not isinstance(commits, dict):
            return cls(path)
        return cls(path, {int(k): str(v) for k, v in commits.items() if str(k).isdigit()},
                   str(data.get("current") or ""))

    def trusts(self, checkpoint_id: int, commit: str) -> bool:
        """True when coder itself wrote `commit` as checkpoint `checkpoint_id`."""
        return bool(commit) and self.commits.get(checkpoint_id) == commit

    def add(self, checkpoint_id: int, commit: str) -> None:
        """Record a checkpoint coder just wrote, which becomes the current one."""
        self.commits[checkpoint_id] = commit
        self.current = commit
        self.save()

    def move_to(self, commit: str) -> None:
        self.current = commit
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {"commits": {str(k): v for k, v in sorted(self.commits.items())}, "current": self.current}
        write_json_atomic(self.path, data)
