"""Resolving the path a model gave into a file inside the workspace, and doing file I/O on it safely.

Two steps, because the sandboxed shell can swap any folder of the workspace for a symlink at any moment:

1. `locate`: the path is normalized lexically (`..` that climbs out, or an absolute path outside, is refused),
   then resolved beneath a handle on the workspace (`coder.fs.beneath`): a symlink that stays inside is followed
   (editing `docs/README.md -> ../README.md` edits README.md), one that leaves is refused. The result is the
   REAL workspace-relative path, which contains no symlink.
2. Every read, write and delete after that goes through the strict operations of `coder.fs.beneath` on that real
   path: they follow no symlink at all, so a link planted after step 1 makes the operation fail (or, for the
   final component of a write, be replaced), never redirects it outside or to another file.

Writes into the top-level `.git/` are refused (history and hooks are not the agent's to edit with a text
editor). And when a write's real path is protected (`coder.trust.protected`) but the path the model named is not, a
symlink led there (`src/x -> ../.git/config`): the permission policy asked about the named path only, so the
write is refused here (the backstop)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from coder.edit.errors import PathError
from coder.fs.beneath import EscapeError, WorkspaceFS
from coder.trust.protected import protected_reason


@dataclass(frozen=True)
class Loc:
    """A located workspace file: `rel` is its real workspace-relative path (no symlink in it), `path` the
    absolute form (the key of the edit state and what `relative` displays)."""

    fs: WorkspaceFS
    rel: str
    path: Path


def lexical_rel(path: str, workspace: Path, cwd: Path | None = None) -> str:
    """`path` as a normalized workspace-relative path ("" for the root), without touching the file system.
    Relative paths are taken from `cwd` (default the workspace). PathError when empty or outside."""
    if path is None or not str(path).strip():
        raise PathError("path is empty: give a file path relative to the workspace (e.g. src/app.py)")
    if "\x00" in path:
        raise PathError("path contains a NUL byte")
    root = Path(os.path.realpath(workspace))
    raw = Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
    base = Path(cwd) if cwd is not None else root
    candidate = Path(os.path.normpath(raw if raw.is_absolute() else base / raw))
    for top in (root, Path(os.path.normpath(workspace.absolute()))):
        if candidate == top or top in candidate.parents:
            rel = candidate.relative_to(top).as_posix()
            return "" if rel == "." else rel
    raise PathError(f"{path} is outside the workspace {root}; edits are limited to the workspace")


def locate(fs: WorkspaceFS, path: str, cwd: Path | None = None, *, for_write: bool = False) -> Loc:
    """Resolve `path` beneath the workspace of `fs` (see the module docstring). Raises PathError."""
    given = lexical_rel(path, fs.root, cwd)
    try:
        real = fs.resolve_real(given)
    except EscapeError as exc:
        raise PathError(f"{path} is outside the workspace: {exc}; edits are limited to the workspace") from None
    except NotADirectoryError as exc:
        raise PathError(f"{path}: {exc.filename or 'a parent'} is a file, not a folder") from None
    except OSError as exc:
        raise PathError(f"{path}: {exc.strerror}") from None
    if for_write:
        check_write_target(path, given, real)
    loc = Loc(fs, real, fs.root / real if real else fs.root)
    try:
        st = fs.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        return loc
    except EscapeError as exc:
        raise PathError(f"{path} changed while it was resolved ({exc}); nothing was done") from None
    except OSError as exc:
        raise PathError(f"{path}: {exc.strerror}") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise PathError(f"{path} is a device, socket or pipe, not a regular file; refused")
    return loc


def check_write_target(path: str, given: str, real: str) -> None:
    """Refuse writes into the top-level .git, and protected files reached through a symlink."""
    reason = protected_reason(real)
    if reason and not protected_reason(given):
        raise PathError(f"{path} leads through a symbolic link to {real}, which is a protected path ({reason}); "
                        f"the editor does not write protected files through a link. Name {real} itself if the "
                        "change is intended (the user is asked).")
    if real.split("/")[0].lower() == ".git" or given.split("/")[0].lower() == ".git":
        raise PathError(f"{path} is inside .git/; the editor does not write there")


@contextmanager
def beneath_errors(what: str) -> Iterator[None]:
    """Turn an EscapeError of a strict operation (a symlink planted since the path was resolved) into a
    PathError the model reads."""
    try:
        yield
    except EscapeError as exc:
        raise PathError(f"{what} changed while it was being edited ({exc}); nothing more was done") from None


def relative(path: Path, workspace: Path) -> str:
    """Workspace-relative display form (POSIX separators)."""
    try:
        return path.relative_to(Path(os.path.realpath(workspace))).as_posix() or "."
    except ValueError:
        return str(path)
