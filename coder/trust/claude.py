"""What a repository's `.claude/` folder defines, for the trust check (coder/trust/reader.py).

Claude Code's project files that make coder run or honour something: `.claude/settings.json` and
`.claude/settings.local.json` (hooks, permission rules, enabled plugins), `.claude/agents/*.md` (subagents) and
`.claude/commands/**/*.md` (slash commands; subfolders organise them). Their bytes are fingerprinted like
`.coder/`'s, and so is every workspace file a hook's command runs (`"$CLAUDE_PROJECT_DIR"/.claude/hooks/x.sh`,
`python3 scripts/check.py`): trust covers what runs, so a changed hook script asks again as a changed settings
file does, and a log the hook writes (`echo ran >> hook.log`) does not (coder/trust/commands.py `shell_runs`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from coder.fs.beneath import EscapeError, WorkspaceFS
from coder.trust.commands import shell_runs

#: the repository's Claude Code settings files, in the order Claude Code layers them (the local one wins)
SETTINGS = (".claude/settings.json", ".claude/settings.local.json")
#: folder -> (kind shown in the trust dialog, whether subfolders count)
FOLDERS = {".claude/agents": ("agent", False), ".claude/commands": ("command", True)}
#: the variables a hook finds the project in (Claude Code's and coder's own)
PROJECT_VARS = ("CLAUDE_PROJECT_DIR", "CODER_WORKSPACE")


def folder_files(root: Path, limit: int) -> tuple[list[str], list[str]]:
    """The `.md` files of `.claude/agents` and `.claude/commands` (workspace-relative, never through a symlink),
    and problems (a folder holding more than `limit` entries)."""
    found: list[str] = []
    problems: list[str] = []
    for folder, (_, nested) in FOLDERS.items():
        pending = [folder]
        while pending:
            current = pending.pop()
            try:
                with WorkspaceFS(root) as fs:
                    entries = sorted(fs.listdir(current))
            except (OSError, EscapeError):
                continue
            if len(entries) > limit or len(found) > limit:
                problems.append(f"{folder} holds more than {limit} entries")
                break
            for name, kind in entries:
                rel = f"{current}/{name}"
                if kind == "dir" and nested and not name.startswith("."):
                    pending.append(rel)
                elif kind == "file" and name.endswith(".md"):
                    found.append(rel)
    return sorted(found), problems


def wanted(rel: str, data: bytes) -> list[tuple[str, str, str, str]]:
    """(kind, name, detail, command) lines for one `.claude` file: each hook with its command, the rules and
    plugins (`command` is a hook's, "" for the rest)."""
    for folder, (kind, _) in FOLDERS.items():
        if rel.startswith(folder + "/"):
            return [(kind, rel.rsplit("/", 1)[-1][:-3], rel, "")]
    try:
        table = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return [("config", rel, "not valid JSON", "")]
    if not isinstance(table, dict):
        return [("config", rel, "not a JSON object", "")]
    out = [("hook", f"{event}", f"{command} ({rel})", command) for event, command in hook_commands(table)]
    permissions = table.get("permissions")
    if isinstance(permissions, dict):
        for key in ("allow", "ask", "deny"):
            rules = permissions.get(key)
            if isinstance(rules, list) and rules:
                note = (" (never applied: allow rules are yours to give)" if key == "allow" else
                        " (applied whether you trust it or not: they only make coder ask or refuse more)")
                out.append(("permissions", key, f"{', '.join(map(str, rules[:6]))}{note} ({rel})", ""))
    plugins = table.get("enabledPlugins")
    if isinstance(plugins, dict) and plugins:
        out.append(("plugins", "enabled", f"{', '.join(map(str, plugins))} ({rel})", ""))
    if not out and table:
        out.append(("config", rel, "sets " + ", ".join(sorted(table)), ""))
    return out


def hook_commands(table: dict[str, Any]) -> list[tuple[str, str]]:
    """(event, command) of every hook in a settings object, read leniently (the loader reports mistakes)."""
    hooks = table.get("hooks")
    out: list[tuple[str, str]] = []
    for event, groups in hooks.items() if isinstance(hooks, dict) else []:
        for group in groups if isinstance(groups, list) else []:
            entries = group.get("hooks") if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict) and isinstance(entry.get("command"), str):
                    out.append((str(event), entry["command"]))
    return out


def run_files(root: Path, command: str) -> tuple[str, ...]:
    """The workspace files a hook's command runs (coder/trust/commands.py `shell_runs`), `$CLAUDE_PROJECT_DIR`
    expanded: the trust check fingerprints them. A command whose words only the shell can tell runs none that can
    be pinned; a repository's hook runs in the sandbox all the same."""
    env = {**os.environ, **{var: str(root) for var in PROJECT_VARS}}
    return tuple(shell_runs(command, root, env) or ())
