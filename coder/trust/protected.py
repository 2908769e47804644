"""Protected workspace paths: the files through which a repository configures coder or git.

A write to one of them changes what runs on the host next (git config and hooks, coder's project config, MCP
servers, custom tools and agents, the scripts a trusted command runs) or what the model is told to do (the
instruction files and skills, whichever tool they come from). So the editor and
`apply_patch` always ask before writing them, in every mode, auto included (headless: a denial the model reads),
and the sandbox keeps the ones that exist read-only.

The set, matched on every component of a workspace-relative path (so nested repositories count too):
- `.git` as any component: a repository's git dir (or the `.git` file of a worktree or submodule) and all in it;
- `.coder` and `.claude` as any component: coder's project folder (config, tools, agents, commands,
  permissions, skills) and Claude Code's, which coder reads too (skills) and a user's other tool runs;
- `.mcp.json`, `AGENTS.md`, `CLAUDE.md` as the file name, at any depth (instructions are read from the root
  down to the working directory), and `.github/copilot-instructions.md` (the reviewer reads it);
- per workspace, the files a trusted host command names (`protect_command_files`: an MCP server's
  `tools/server.py`, coder/trust/commands.py), registered when the session starts that command.

Paths are compared case-insensitively, because a case-insensitive file system (macOS, a mounted volume) makes
`.GIT/config` the same file as `.git/config`. (The readers and the sandbox use the exact names: on the
case-sensitive file systems the sandbox runs on, `agents.md` is no instruction file; guarding its writes too
costs nothing.)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

#: the instruction files (coder/context/instructions.py reads them by these exact names; the sandbox mounts them
#: read-only, coder/sandbox/profile.py and nested.py): the one list all three use
INSTRUCTION_FILES: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md")
#: the project's MCP server file
MCP_FILE = ".mcp.json"
#: instruction files of other tools that coder reads, by workspace-relative path
OTHER_INSTRUCTIONS: tuple[str, ...] = (".github/copilot-instructions.md",)
#: the extension folders coder reads (its own and Claude Code's): created empty when missing and kept read-only by
#: the sandbox, so a command cannot plant one (coder/sandbox/profile.py)
EXTENSION_DIRS: tuple[str, ...] = (".coder", ".claude")
PROTECTED_DIRS: frozenset[str] = frozenset({".git", *EXTENSION_DIRS})
PROTECTED_FILES: frozenset[str] = frozenset(name.lower() for name in (MCP_FILE, *INSTRUCTION_FILES))


def protected_reason(rel_path: str) -> str | None:
    """Why writing the workspace-relative `rel_path` needs the user's say, or None when it does not.

    `rel_path` uses `/` separators and is relative to the workspace root (a resolved path: symlinks followed)."""
    parts = [p for p in PurePosixPath(rel_path.replace("\\", "/")).parts if p not in ("", ".", "/")]
    for part in parts:
        low = part.lower()
        if low == ".git":
            return "it is part of a git repository's own files (config and hooks there run on the host)"
        if low in PROTECTED_DIRS:
            return f"it is in {part}/, a folder of project configuration, extensions and instructions"
    if parts and parts[-1].lower() in PROTECTED_FILES:
        name = parts[-1]
        if name.lower() == ".mcp.json":
            return "it defines MCP servers that coder starts on the host"
        return f"it is a project instruction file ({name}) that steers the model"
    if "/".join(parts).lower() in OTHER_INSTRUCTIONS:
        return f"it is a project instruction file ({'/'.join(parts)}) that steers the reviewer"
    return None


def is_protected(rel_path: str) -> bool:
    return protected_reason(rel_path) is not None


_COMMAND_FILES: dict[str, frozenset[str]] = {}
_COMMAND_FILES_LOCK = threading.Lock()


def protect_command_files(workspace: Path, rels: Iterable[str]) -> None:
    """Keep the workspace files a trusted command names (coder/trust/commands.py) from the sandbox and the editor
    for the rest of this process: read-only in every sandbox on `workspace`, and a write by the editor asks."""
    key = os.path.realpath(workspace)
    with _COMMAND_FILES_LOCK:
        _COMMAND_FILES[key] = _COMMAND_FILES.get(key, frozenset()) | frozenset(rels)


def command_files(workspace: Path) -> frozenset[str]:
    """The workspace-relative paths `protect_command_files` registered for `workspace`."""
    with _COMMAND_FILES_LOCK:
        return _COMMAND_FILES.get(os.path.realpath(workspace), frozenset())


def command_file_reason(workspace: Path, rel_path: str) -> str | None:
    """Why writing `rel_path` asks because a trusted command runs it, or None."""
    if os.path.normpath(rel_path) in command_files(workspace):
        return "a trusted MCP server or hook of this session runs it on start (coder/trust/commands.py)"
    return None
