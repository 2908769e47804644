"""What the sandbox keeps from the workspace's own commands (coder/sandbox/profile.py binds it): the paths inside
the workspace that are bound onto themselves, read-only (hooks, git config, nested repositories, coder's and
the agents' own files, the instruction files) or pinned in place (the top-level git dir), looked up when a sandbox
starts. They are the files that make code run outside the sandbox later, or steer the model.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from coder.host.gitdir import gitfile_path
from coder.sandbox.aftercheck import checker
from coder.sandbox.nested import nested_entries, read_regular
from coder.trust.protected import (
    AGENT_DIRS,
    AGENT_FILES,
    EXTENSION_DIRS,
    MCP_FILE,
    OTHER_INSTRUCTIONS,
    command_files,
)

#: files at the workspace root that configure coder or steer the model: read-only when they exist
ROOT_FILES: tuple[str, ...] = (MCP_FILE, *AGENT_FILES, *OTHER_INSTRUCTIONS, ".github/instructions", ".github/prompts",
                              *(d for d in AGENT_DIRS if d not in EXTENSION_DIRS))
#: parts of the top-level git dir that make code run or steer another checkout: read-only when present
TOP_GIT_RO: tuple[str, ...] = ("info", "modules", "worktrees", "commondir", "config.worktree")


@dataclass(frozen=True)
class Protected:
    """Paths inside the workspace that the sandbox binds onto themselves: `pinned` read-write (a mount point
    cannot be renamed away), `read_only` read-only. Both are real paths (symlinks followed) inside the
    workspace."""

    pinned: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()

    def covers(self, other: Protected) -> bool:
        """Every mount `other` asks for is already in place here (a shell started with these is still safe)."""
        return set(other.pinned) <= set(self.pinned) and set(other.read_only) <= set(self.read_only)


def protected_paths(workspace: Path) -> Protected:
    """What the sandbox keeps from the workspace's commands, looked up when a sandbox starts (for the persistent
    shell: checked again before every call, see coder/sandbox/shell.py).

    - The top-level git dir (or the one its `.git` file points to, when inside the workspace) is pinned in place
      so it cannot be renamed away and replaced by a fresh one with hooks (a rename of a folder that merely
      *contains* mount points succeeds); its hooks, config and the parts in TOP_GIT_RO are read-only. The rest
      stays writable: git in the sandbox must still write objects, the index and refs (`git add`, `git stash`).
      `.git/hooks`, `info`, `modules` and `worktrees` are created when missing, so nothing can be planted through a
      missing folder (a `commondir` or `config.worktree` planted where none was is the after-command check's:
      coder/sandbox/aftercheck.py).
    - A `.git` *file* is read-only, or it could point git at a planted git dir.
    - Every nested repository (a `.git` folder or file below the top) is read-only as a whole, with the git dir
      a `.git` file points to when that lies in the workspace: coder's own git on the host sees submodules and
      embedded repositories, and their config can run code.
    - `.coder/` and `.claude/` always exist (coder creates them, empty) and are read-only: a project config
      could turn the sandbox off for the next session, a skill steers the model. The root's `.mcp.json`,
      `AGENTS.md`, `CLAUDE.md`, `.github/copilot-instructions.md`, instruction files in sub-folders, and the files
      a trusted host command of this session names (coder/trust/commands.py), are read-only when they exist.
    - Every workspace file the repository's git config includes (`include.path ../.gitconfig`), read-only when it
      exists (a new one is the after-command check's: coder/sandbox/leftovers.py).

    Limits: only what exists when the sandbox starts; a repository created by a command is writable until the
    next call; the walk (coder/sandbox/nested.py) skips `node_modules` and has an upper bound."""
    workspace = workspace.resolve()
    pinned: list[Path] = []
    ro: list[Path] = []
    git = workspace / ".git"
    if git.is_dir() and not git.is_symlink():
        _top_git_dir(git, pinned, ro)
    elif git.is_file() or git.is_symlink():
        ro.append(git)
        target = _git_file_target(git, workspace)
        if target is not None:
            _top_git_dir(target, pinned, ro)
    for name in EXTENSION_DIRS:
        _make_dir(workspace / name)
        ro.append(workspace / name)
    ro += [workspace / name for name in ROOT_FILES]
    ro += [workspace / rel for rel in sorted(command_files(workspace))]
    ro += [workspace / rel for rel in checker(workspace).config_files()]  # `include.path ../.gitconfig`
    for found in nested_entries(workspace):
        ro.append(found)
        if found.name == ".git" and not found.is_dir():
            target = _git_file_target(found, workspace)
            if target is not None:
                ro.append(target)
    kept_pinned = _inside_only(pinned, workspace)
    # a path that is (or holds) a pinned one stays writable: `sub/.git -> ../.git` must not make git read-only
    kept_ro = [p for p in _inside_only(ro, workspace) if not any(p == q or p in q.parents for q in kept_pinned)]
    return Protected(tuple(kept_pinned), tuple(kept_ro))


#: folders of the top-level git dir created (empty) when missing, so that they are always bound read-only: a
#: `modules/x` planted through a missing `modules` would pass for a submodule host git made
TOP_GIT_MADE: tuple[str, ...] = ("hooks", "info", "modules", "worktrees")


def _top_git_dir(git: Path, pinned: list[Path], ro: list[Path]) -> None:
    pinned.append(git)
    for name in TOP_GIT_MADE:
        _make_dir(git / name)
    ro += [git / "hooks", git / "config"] + [git / name for name in TOP_GIT_RO]


def _make_dir(path: Path) -> None:
    """Create a folder that must exist to be bound read-only (nothing can then be planted through it)."""
    if not path.exists() and not path.is_symlink():
        try:
            path.mkdir()
        except OSError:
            pass


def _git_file_target(dot_git: Path, workspace: Path) -> Path | None:
    """The git dir a `.git` file (`gitdir: PATH`) points to, when it is a folder inside the workspace."""
    named = gitfile_path(read_regular(dot_git, 65536) or b"")
    if named is None:
        return None
    target = Path(os.path.realpath(dot_git.parent / named))
    if not target.is_dir() or (target != workspace and workspace not in target.parents):
        return None
    return target


def _inside_only(paths: list[Path], workspace: Path) -> list[Path]:
    """Existing paths, symlinks resolved, kept only when they stay in the workspace, without duplicates. A bind
    whose destination is a symlink would follow it inside the new root, where its target may not exist (and
    bwrap would refuse to start); outside the workspace nothing is writable anyway."""
    out: dict[Path, None] = {}
    for path in paths:
        if not (path.is_dir() or path.is_file()):  # missing, or a FIFO or device bwrap may not bind
            continue
        real = Path(os.path.realpath(path))
        if real != workspace and workspace in real.parents:
            out[real] = None
    return list(out)
