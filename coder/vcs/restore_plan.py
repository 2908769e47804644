"""What a restore of a checkpoint would do, said before it is done (issue 24, bug 13).

`/undo` once restored an older checkpoint and removed a file the user had committed since, without a word. A
checkpoint restore only changes the work tree, never a commit, so a file committed after the checkpoint the
restore goes back to shows up afterwards as deleted or modified against HEAD. The plan names every file the
restore writes or deletes, and which of them are committed as they are now (with the commit), so the person
decides knowing that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coder.trust.protected import protected_reason
from coder.vcs.repo import changed_paths, run_git


@dataclass
class RestorePlan:
    target_id: int
    current_id: int
    write: list[str] = field(default_factory=list)  # files the restore creates or overwrites
    delete: list[str] = field(default_factory=list)  # files it deletes
    committed: dict[str, str] = field(default_factory=dict)  # path -> "abc1234 subject": committed since
    edited: list[str] = field(default_factory=list)  # changed since the current checkpoint: the restore refuses

    @property
    def paths(self) -> list[str]:
        return sorted(set(self.write) | set(self.delete))

    def describe(self) -> str:
        """Markdown: what the restore touches, the committed files called out with their commit."""
        if not self.paths:
            return "No file changes."
        lines = []
        if self.write:
            lines.append("restores " + _names(self.write))
        if self.delete:
            lines.append("deletes " + _names(self.delete))
        text = "It " + "; it ".join(lines) + "."
        if self.edited:
            text += (f"\n\n**Changed since, and saved nowhere else:** {_names(self.edited)}. The restore refuses to "
                     "overwrite them; add `--force` to save the current state as a checkpoint first.")
        if self.committed:
            notes = [f"`{p}` ({c})" for p, c in sorted(self.committed.items())]
            text += ("\n\n**Committed since:** " + ", ".join(notes) + ". The commit stays as it is; your work "
                     "tree goes back, so git will show these files as changed against HEAD.")
        return text


def _names(paths: list[str]) -> str:
    shown = ", ".join(f"`{p}`" for p in paths[:12])
    return shown + (f" and {len(paths) - 12} more" if len(paths) > 12 else "")


def plan_restore(checkpoints: Any, target_id: int) -> RestorePlan:
    """The plan of bringing the work tree from the current checkpoint of `checkpoints` (a
    coder.vcs.checkpoints.Checkpoints) back to `target_id`; nothing is changed."""
    target = checkpoints.get(target_id)
    current = checkpoints.current()
    if current is None:
        return RestorePlan(target.id, -1)
    root = checkpoints.root
    plan = RestorePlan(target.id, current.id)
    now = checkpoints._tree()  # the work tree as it is (the same snapshot rules as a checkpoint)
    drifted = set(changed_paths(root, current.tree, now))
    for path in changed_paths(root, current.tree, target.tree):
        if protected_reason(path):
            continue
        in_target = _blob(root, target.tree, path)
        (plan.write if in_target else plan.delete).append(path)
        if path in drifted and _blob(root, now, path) != in_target:
            plan.edited.append(path)
        head = _blob(root, "HEAD", path)
        if head and head != in_target and head == _blob(root, current.tree, path):
            plan.committed[path] = _last_commit(root, path)
    return plan


def _blob(root: Any, tree: str, path: str) -> str:
    return run_git(root, "rev-parse", "--verify", "--quiet", f"{tree}:{path}", check=False).stdout.strip()


def _last_commit(root: Any, path: str) -> str:
    out = run_git(root, "log", "-1", "--format=%h %s", "--", path, check=False).stdout.strip()
    return out[:80] or "a commit"
