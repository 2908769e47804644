"""Claude Code's permission rules (`permissions.allow/ask/deny` of its settings files) in coder's rule language.

Where they mean the same, a rule becomes coder's (coder/policy/patterns.py); where they cannot, it is reported and
left out (docs/claude-code.md has the table):

- `Bash` / `Bash(npm run test:*)` / `Bash(git * main)` -> `bash` / `bash(npm run test:*)` / `bash(git * main)`:
  the same prefix (`:*`, at a word boundary) and wildcard matching, on each simple command of a compound line.
- `Read(p)` -> `read(p)`; `Edit(p)`, `Write(p)`, `MultiEdit(p)`, `NotebookEdit(p)` -> `edit(p)` (Claude Code's
  edit rules cover every tool that edits files, as coder's do). Paths: `p` and `./p` start at the project (where
  Claude Code's current directory is), `/p` at the project for the project's settings; `//abs` and `~/p` name
  files outside the project, which coder's rules (relative to the project) cannot.
- a bare name of a Claude Code tool (`Grep`, `Task`, `TodoWrite`) -> coder's tools that do its job, as each
  tool says (`claude_code` in its contract: coder/tools/registry.py `tools_for_claude_name`).
- `mcp__server` -> `mcp__server__*`; `mcp__server__tool` and `mcp__server__*` as they are.
- bare `WebFetch` and `WebSearch` -> `web_fetch` and `web_search` (issue 35), by their contracts like the rest.
- not mapped: `WebFetch(domain:...)` (coder's network is by domain: `[sandbox] allowed_domains`, which
  `web_fetch` obeys), `Task(agent)`, a specifier on any other tool, a name no tool answers to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from coder.tools.registry import tools_for_claude_name

_RULE = re.compile(r"^\s*([A-Za-z0-9_.*?\-]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)
_EDITS = ("Edit", "Write", "MultiEdit", "NotebookEdit")


@dataclass
class Translated:
    """Claude Code rules of one settings file in coder's language, and those that could not be."""

    allow: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    #: "rule (why)" for each rule left out
    unmapped: list[str] = field(default_factory=list)


def translate_rule(text: str, project_file: bool) -> tuple[list[str], str]:
    """coder rules for one Claude Code rule, or ([], why not). `project_file`: the rule is in the project's
    settings (where `/path` starts at the project)."""
    m = _RULE.match(text) if isinstance(text, str) else None
    if m is None:
        return [], "not a rule of the form Tool or Tool(specifier)"
    name, spec = m.group(1), m.group(2)
    spec = None if spec is None or spec.strip() in ("", "*") else spec.strip()
    if name.startswith("mcp__"):
        if spec is not None:
            return [], "MCP rules take no specifier"
        return [name if name.count("__") >= 2 else f"{name}__*"], ""
    if name == "Bash":
        return [f"bash({spec})" if spec else "bash"], ""
    if name == "Read" or name in _EDITS:
        word = "read" if name == "Read" else "edit"
        if spec is None:
            return [word], ""
        path, why = _project_path(spec, project_file)
        return ([f"{word}({path})"], "") if path is not None else ([], why)
    tools = tools_for_claude_name(name)
    if not tools:
        return [], f"coder has no tool that does what {name} does"
    return (tools, "") if spec is None else ([], f"coder cannot match a specifier of {name}")


def _project_path(spec: str, project_file: bool) -> tuple[str | None, str]:
    if spec.startswith("//") or spec.startswith("~"):
        return None, "it names files outside the project; coder's path rules start at the project"
    if spec.startswith("/"):
        if not project_file:
            return None, "a /path of your own settings starts at ~/.claude, outside any project"
        return spec.lstrip("/"), ""
    return spec, ""


def translate(permissions: object, source: str, project_file: bool) -> Translated:
    """The `permissions` object of one settings file: each of its allow / ask / deny lists translated."""
    out = Translated()
    if not isinstance(permissions, dict):
        return out
    for kind in ("allow", "ask", "deny"):
        rules = permissions.get(kind) or []
        for text in rules if isinstance(rules, list) else []:
            mapped, why = translate_rule(text, project_file)
            if mapped:
                getattr(out, kind).extend(r for r in mapped if r not in getattr(out, kind))
            else:
                out.unmapped.append(f"{source}: {kind} {text!r} ({why})")
    return out
