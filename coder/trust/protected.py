"""Protected workspace paths: the files through which a repository configures coder or git.

A write to one of them changes what runs on the host next (git config and hooks, coder's project config, MCP
servers, custom tools and agents) or what the model is told to do (the instruction files). So the editor and
`apply_patch` always ask before writing them, in every mode, auto included (headless: a denial the model reads),
and the sandbox keeps the ones that exist read-only.

The set, matched on every component of a workspace-relative path (so nested repositories count too):
- `.git` as any component: a repository's git dir (or the `.git` file of a worktree or submodule) and all in it;
- `.coder` as any component: coder's project folder (config, tools, agents, commands, permissions);
- `.mcp.json`, `AGENTS.md`, `CLAUDE.md` as the file name, at any depth (instructions are read from the root
  down to the working directory).

Paths are compared case-insensitively, because a case-insensitive file system (macOS, a mounted volume) makes
`.GIT/config` the same file as `.git/config`. (The readers and the sandbox use the exact names: on the
case-sensitive file systems the sandbox runs on, `agents.md` is no instruction file; guarding its writes too
costs nothing.)
"""

from __future__ import annotations

from pathlib import PurePosixPath

#: the instruction files (coder/context/instructions.py reads them by these exact names; the sandbox mounts them
#: read-only, coder/sandbox/profile.py and nested.py): the one list all three use
INSTRUCTION_FILES: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md")
#: the project's MCP server file
MCP_FILE = ".mcp.json"
PROTECTED_DIRS: frozenset[str] = frozenset({".git", ".coder"})
PROTECTED_FILES: frozenset[str] = frozenset(name.lower() for name in (MCP_FILE, *INSTRUCTION_FILES))


def protected_reason(rel_path: str) -> str | None:
    """Why writing the workspace-relative `rel_path` needs the user's say, or None when it does not.

    `rel_path` uses `/` separators and is relative to the workspace root (a resolved path: symlinks followed)."""
    parts = [p for p in PurePosixPath(rel_path.replace("\\", "/")).parts if p not in ("", ".", "/")]
    for part in parts:
        low = part.lower()
        if low == ".git":
            return "it is part of a git repository's own files (config and hooks there run on the host)"
        if low == ".coder":
            return "it is coder's project configuration (.coder/)"
    if parts and parts[-1].lower() in PROTECTED_FILES:
        name = parts[-1]
        if name.lower() == ".mcp.json":
            return "it defines MCP servers that coder starts on the host"
        return f"it is a project instruction file ({name}) that steers the model"
    return None


def is_protected(rel_path: str) -> bool:
    return protected_reason(rel_path) is not None
