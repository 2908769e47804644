"""What the interactive frontends know of the workspace: the git state the status bar shows, and the files and
words an input line completes (`@path`), and the directory the flags name before a session is open."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.host import TimeoutExpired
from coder.host import git as hostgit


@dataclass
class GitState:
    branch: str | None = None
    dirty: bool = False
    known: bool = True  # False until it has been read: the status bar says "…", not "no git"

    def label(self) -> str:
        if not self.known:
            return "…"
        if self.branch is None:
            return "no git"
        return f"⎇ {self.branch}{' *' if self.dirty else ''}"


def git_state(workspace: Path) -> GitState:
    try:
        branch = hostgit.run(workspace, ["rev-parse", "--abbrev-ref", "HEAD"], timeout=5)
        if branch.returncode != 0:
            return GitState()
        status = hostgit.run(workspace, ["status", "--porcelain", "--untracked-files=normal"], timeout=10)
    except (OSError, TimeoutExpired):
        return GitState()
    return GitState(branch.stdout.strip() or "HEAD", bool(status.stdout.strip()))


def project_files(workspace: Path, limit: int = 50_000) -> list[str]:
    """Files `@path` completes: git's list (tracked and untracked, ignored left out), or a bounded walk."""
    from coder.commands.agents_md import repo_files  # lazy: read with the first `@`, not at the app's start-up

    return repo_files(workspace, limit)


def match_paths(files: list[str], prefix: str, limit: int = 12) -> list[str]:
    """Paths starting with `prefix` first, then paths containing it (case-insensitive)."""
    low = prefix.lower()
    starts = [f for f in files if f.lower().startswith(low)]
    contains = [f for f in files if low in f.lower() and not f.lower().startswith(low)] if low else []
    return (starts + contains)[:limit]


def word_at_end(text: str) -> str:
    """The token being typed at the end of `text` (after the last space or newline)."""
    cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"))
    return text[cut + 1:]


def workspace_of(args: Any) -> Path:
    """The directory the flags name (`--cwd`), before any session is open: completion and commands without a
    session work there."""
    return Path(getattr(args, "cwd", ".") or ".")
