"""The names one file operation goes by, and whether it touches a protected path.

A path rule must hold for the file that is really written, not just the name the model typed: with
`src/x -> ../.env`, an edit of `src/x` writes `.env`, and `--deny 'edit(**/.env)'` has to see that. So each
path the policy judges is resolved twice, the way the editor resolves it (relative to the session's working
directory, `~` expanded): lexically (`written`, what the model and the user see) and with symlinks followed
(`real`, what the editor's write lands on). Deny and ask rules match when either name matches; an allow rule
must match both, so a rule the user wrote for one name never lends itself to another file through a link.

This is the policy's first line only: a symlink can still be swapped between the decision and the write, and
the editor re-checks at write time beneath the workspace (coder/edit).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from coder.fs.beneath import real_relpath
from coder.sandbox.nested import read_regular
from coder.trust.protected import command_file_reason, protected_reason


@dataclass(frozen=True)
class Target:
    #: workspace-relative, `..` folded, symlinks not followed (absolute when outside the workspace)
    written: str
    #: workspace-relative with symlinks followed; None when the real file lies outside the workspace
    real: str | None
    #: the absolute real path, for messages
    real_abs: str

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the operation goes by (one when no symlink is involved)."""
        if self.real is None or self.real == self.written:
            return (self.written,)
        return (self.written, self.real)


def resolve_target(path: str, workspace: Path | None, cwd: Path | None = None) -> Target:
    """Resolve `path` as the editor will: relative paths from `cwd` (default the workspace). `workspace` must
    already be a real path. Without a workspace there is nothing to resolve against: the name is kept as is."""
    if workspace is None:
        return Target(path, path, path)
    raw = os.path.expanduser(path) if path.startswith("~") else path
    absolute = Path(raw) if os.path.isabs(raw) else (cwd or workspace) / raw
    lexical = os.path.normpath(absolute)
    written = _inside(lexical, workspace)
    if written is None:  # outside: not a path the sandbox can shape; the host's own links decide
        host = _host_realpath(absolute)
        return Target(lexical, _inside(host, workspace) if host else None, host or lexical)
    # inside: resolved as the editor does (coder/edit/paths.py: `..` folded first, then resolved beneath the
    # workspace following only links that stay inside); None when a link leads out (or it cannot be resolved)
    real = real_relpath(workspace, written)
    if real is None:  # the absolute target only names the place in the message
        return Target(written, None, _host_realpath(absolute) or lexical)
    real = real or "."
    return Target(written, real, str(workspace) if real == "." else str(workspace / real))


def _host_realpath(path: Path) -> str | None:
    try:
        return os.path.realpath(path)
    except OSError:  # swapped while resolved (EINVAL: a sandboxed loop flipping a link)
        return None


def _inside(path: str, workspace: Path) -> str | None:
    root = str(workspace)
    if path == root:
        return "."
    if path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1:]
    return None


def protection(target: Target, workspace: Path | None) -> str | None:
    """Why writing `target` needs the user's say (coder.trust.protected's set, matched on both names, plus any git
    directory however it is named, such as the one a `.git` file points to), or None."""
    for name in target.names:
        why = protected_reason(name) or (command_file_reason(workspace, name) if workspace is not None else None)
        if why is not None:
            return f"{name} is a protected path: {why}"
    if workspace is not None and target.real is not None:
        gitdir = _enclosing_git_dir(Path(target.real_abs), workspace)
        if gitdir is not None:
            shown = _inside(str(gitdir), workspace) or str(gitdir)
            return (f"{target.written} is a protected path: it is inside the git directory {shown} "
                    "(config and hooks there run on the host)")
    return None


def _enclosing_git_dir(path: Path, workspace: Path) -> Path | None:
    """The nearest folder above `path` (up to the workspace) that git would take for a git directory (as git's
    own test: a valid `HEAD`, plus `objects/` and `refs/` or a worktree's `commondir`). That catches the git dir
    a `.git` file points to, and a bare repository, whatever their names; a few stats per folder level."""
    for folder in path.parents:
        if folder != workspace and workspace not in folder.parents:
            return None
        if is_git_dir(folder):
            return folder
        if folder == workspace:
            return None
    return None


def is_git_dir(folder: Path) -> bool:
    if not (((folder / "objects").is_dir() and (folder / "refs").is_dir()) or (folder / "commondir").is_file()):
        return False
    data = read_regular(folder / "HEAD", 100)  # never blocks on a planted FIFO
    if data is None:
        return False
    head = data.strip()
    return head.startswith(b"ref: refs/") or re.fullmatch(rb"[0-9a-f]{40}|[0-9a-f]{64}", head) is not None
