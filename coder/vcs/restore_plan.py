"""What a restore of a checkpoint would do, said before it is done (issue 24, bug 13).

`/undo` once restored an older checkpoint and removed a file the user had committed since, without a word. A
checkpoint restore only changes the work tree, never a commit, so a file committed after the checkpoint the
restore goes back to shows up afterwards as deleted or modified against HEAD. The plan names every file the
restore writes or deletes, and which of them are committed as they are now (with the commit), so the person
decides knowing that.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
