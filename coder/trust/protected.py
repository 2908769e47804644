"""Protected workspace paths: the files through which a repository configures coder or git.

A write to one of them changes what runs on the host next (git config and hooks, coder's project config, MCP
servers, custom tools and agents, the scripts a trusted command runs) or what the model is told to do (the
instruction files and skills, whichever tool they come from). So the editor and
`apply_patch` always ask before writing them, in every mode, auto included (headless: a denial the model reads),
and the sandbox keeps the ones that exist read-only.

The set, matched on every component of a workspace-relative path (so nested repositories count too):
- `.git` as any component: a repository's git dir (or the `.git` file of a worktree or submodule) and all in it;
- the folders of instructions, rules, settings and commands of the agents people use, as any component:
  `.coder` (coder's project folder: config, tools, agents, commands, permissions, skills), `.claude` (Claude Code's,
  which coder reads too), `.codex`, `.cursor`, `.gemini`, `.windsurf`, `.clinerules`;
- their instruction files by name, at any depth (each tool reads them from the root down to the working folder):
  `AGENTS.md`, `AGENTS.override.md` (Codex), `CLAUDE.md`, `CLAUDE.local.md`, `GEMINI.md`, `.cursorrules`,
  `.windsurfrules`, `CONVENTIONS.md` and `.aider.conf.yml` (Aider reads the one through the other, which also
  names the lint and test commands it runs), and `.mcp.json`;
- Copilot's, by path below a `.github` folder: `copilot-instructions.md`, `instructions/`, `prompts/` (the
  reviewer reads the first);
- per workspace, the files a trusted host command names (`protect_command_files`: an MCP server's
  `tools/server.py`, coder/trust/commands.py), registered when the session starts that command.
Whether or not they exist yet: the editor asks before creating one, and a shell command that creates or changes
one is caught after the command (coder/sandbox/leftovers.py).

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

#: the instruction files coder reads itself (coder/context/instructions.py reads them by these exact names)
INSTRUCTION_FILES: tuple[str, ...] = ("AGENTS.md", "CLAUDE.md")
#: the instruction files of every agent coder knows, by file name at any depth (the sandbox keeps those that exist
#: read-only: coder/sandbox/profile.py and nested.py)
AGENT_FILES: tuple[str, ...] = (*INSTRUCTION_FILES, "AGENTS.override.md", "CLAUDE.local.md", "GEMINI.md",
                                ".cursorrules", ".windsurfrules", "CONVENTIONS.md", ".aider.conf.yml")
#: the project's MCP server file
MCP_FILE = ".mcp.json"
#: instruction files of other tools that coder reads, by workspace-relative path
OTHER_INSTRUCTIONS: tuple[str, ...] = (".github/copilot-instructions.md",)
#: Copilot's instructions below any `.github` folder: a file, and folders of them
GITHUB_FILES: frozenset[str] = frozenset({"copilot-instructions.md"})
GITHUB_DIRS: frozenset[str] = frozenset({"instructions", "prompts"})
#: the extension folders coder reads (its own and Claude Code's): created empty when missing and kept read-only by
#: the sandbox, so a command cannot plant one (coder/sandbox/profile.py)
EXTENSION_DIRS: tuple[str, ...] = (".coder", ".claude")
#: the folders of every agent coder knows, by name at any depth
AGENT_DIRS: tuple[str, ...] = (*EXTENSION_DIRS, ".codex", ".cursor", ".gemini", ".windsurf", ".clinerules")
PROTECTED_DIRS: frozenset[str] = frozenset(name.lower() for name in (".git", *AGENT_DIRS))
PROTECTED_FILES: frozenset[str] = frozenset(name.lower() for name in (MCP_FILE, *AGENT_FILES))


def _parts(rel_path: str) -> list[str]:
    return [p for p in PurePosixPath(rel_path.replace("\\", "/")).parts if p not in ("", ".", "/")]


def instruction_reason(rel_path: str) -> str | None:
    """Why `rel_path` steers an agent (an instruction file or folder of one, at any depth), or None."""
    parts = _parts(rel_path)
    low = [p.lower() for p in parts]
    for i, part in enumerate(low):
        if part in PROTECTED_DIRS and part != ".git":
            return f"it is in {parts[i]}/, a folder of an agent's configuration, extensions and instructions"
        if part == ".github" and i + 1 < len(low) and (low[i + 1] in GITHUB_DIRS and i + 2 < len(low) or
                                                        low[i + 1] in GITHUB_FILES and i + 2 == len(low)):
            return f"it is a Copilot instruction file ({'/'.join(parts[i:])}) that steers Copilot and the reviewer"
    if low and low[-1] in PROTECTED_FILES and low[-1] != MCP_FILE:
        return f"it is a project instruction file ({parts[-1]}) that steers the model"
    return None


def protected_reason(rel_path: str) -> str | None:
    """Why writing the workspace-relative `rel_path` needs the user's say, or None when it does not.

    `rel_path` uses `/` separators and is relative to the workspace root (a resolved path: symlinks followed)."""
    parts = _parts(rel_path)
    if any(part.lower() == ".git" for part in parts):
        return "it is part of a git repository's own files (config and hooks there run on the host)"
    if parts and parts[-1].lower() == MCP_FILE:
        return "it defines MCP servers that coder starts on the host"
    return instruction_reason(rel_path)


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
