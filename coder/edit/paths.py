"""Resolving the path a model gave into a file inside the workspace.

Symlinks are resolved before the check, so a link that points outside the workspace is refused like `..`
or an absolute path outside it. Writes into `.git/` are refused: history and hooks are not the agent's to
edit with a text editor (commits happen outside, through coder/vcs)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from coder.edit.errors import PathError


def resolve(path: str, workspace: Path, cwd: Path | None = None, *, for_write: bool = False) -> Path:
    """The absolute, symlink-resolved path for `path` (relative paths are taken from `cwd`, default the
    workspace). Raises PathError with the reason when it is empty or leads outside the workspace."""
    if path is None or not str(path).strip():
        raise PathError("path is empty: give a file path relative to the workspace (e.g. src/app.py)")
    if "\x00" in path:
        raise PathError("path contains a NUL byte")
    root = workspace.resolve()
    raw = Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
    base = (cwd or workspace)
    candidate = raw if raw.is_absolute() else base / raw
    resolved = Path(os.path.realpath(candidate))
    if resolved != root and root not in resolved.parents:
        hint = f" (it resolves to {resolved})" if str(resolved) != str(candidate) else ""
        raise PathError(f"{path} is outside the workspace {root}{hint}; edits are limited to the workspace")
    if for_write:
        rel = resolved.relative_to(root)
        if rel.parts and rel.parts[0] == ".git":
            raise PathError(f"{path} is inside .git/; the editor does not write there")
    try:
        st = os.stat(resolved)
    except FileNotFoundError:
        return resolved
    except OSError as exc:
        raise PathError(f"{path}: {exc.strerror}") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise PathError(f"{path} is a device, socket or pipe, not a regular file; refused")
    return resolved


def relative(path: Path, workspace: Path) -> str:
    """Workspace-relative display form (POSIX separators)."""
    try:
        return path.relative_to(workspace.resolve()).as_posix() or "."
    except ValueError:
        return str(path)
