"""Project instructions: AGENTS.md (or CLAUDE.md where a folder has no AGENTS.md) from the repository root down
to the working directory. Closer files come last so they win where they disagree. Only files inside the
repository are read (see `discover`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coder.fs.beneath import EscapeError, WorkspaceFS
from coder.trust.protected import INSTRUCTION_FILES

NAMES = INSTRUCTION_FILES


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
    """The instruction files of the folders from `root` down to `cwd`, as one text for the system prompt.

    Read beneath a handle on the top folder (coder.fs.beneath): a link that stays inside is followed (a
    repository's `AGENTS.md -> CLAUDE.md`), one that leaves is ignored, as is anything but a regular file. The
    text goes to the model's API, so a planted `AGENTS.md -> ~/.ssh/id_rsa` must never bring a host file in;
    and a FIFO, `/dev/zero` or a huge file must not hang or bloat the start of a session."""
    root, cwd = root.resolve(), cwd.resolve()
    folders = _chain(root, cwd)
    top = folders[0]
    found: list[tuple[Path, str]] = []
    try:
        fs = WorkspaceFS(top)
    except OSError:
        return Instructions()
    with fs:
        for folder in folders:
            for name in NAMES:
                rel = (folder / name).relative_to(top).as_posix()
                data = _read_inside(fs, rel, max_bytes * 4)  # enough bytes for `max_bytes` characters
                if data is not None:
                    found.append((folder / name, data.decode("utf-8", errors="replace")))
                    break
    parts: list[str] = []
    used = 0
    truncated = False
    for path, body in found:
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
    return Instructions("\n\n".join(parts), [path for path, _ in found], truncated)


def _read_inside(fs: WorkspaceFS, rel: str, limit: int) -> bytes | None:
    """The file `rel` names when it is a regular file inside (links that stay inside followed), else None."""
    try:
        real = fs.resolve_real(rel)
    except (OSError, EscapeError):
        return None
    return fs.read_if_file(real, limit) if real else None
