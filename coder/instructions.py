"""Project instructions: AGENTS.md (or CLAUDE.md where a folder has no AGENTS.md) from the repository root down
to the working directory. Closer files come last so they win where they disagree."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

NAMES = ("AGENTS.md", "CLAUDE.md")


@dataclass
class Instructions:
    text: str = ""
    files: list[Path] = field(default_factory=list)
    truncated: bool = False


def _chain(root: Path, cwd: Path) -> list[Path]:
    """Folders from `root` down to `cwd` (just `cwd` when it is not inside `root`)."""
    try:
        rel = cwd.relative_to(root)
    except ValueError:
        return [cwd]
    folders = [root]
    for part in rel.parts:
        folders.append(folders[-1] / part)
    return folders


def discover(root: Path, cwd: Path, max_bytes: int = 32_000) -> Instructions:
    found: list[Path] = []
    for folder in _chain(root.resolve(), cwd.resolve()):
        for name in NAMES:
            candidate = folder / name
            if candidate.is_file():
                found.append(candidate)
                break
    parts: list[str] = []
    used = 0
    truncated = False
    for path in found:
        body = path.read_text(encoding="utf-8", errors="replace")
        header = f"# From {path.relative_to(root) if path.is_relative_to(root) else path}\n"
        room = max_bytes - used - len(header)
        if room <= 0:
            truncated = True
            break
        if len(body) > room:
            body = body[:room] + f"\n[… cut: instructions over {max_bytes} characters; read {path} for the rest]\n"
            truncated = True
        parts.append(header + body)
        used += len(header) + len(body)
    return Instructions("\n\n".join(parts), found, truncated)
