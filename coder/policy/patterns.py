"""Permission rules as users write them, and how each one matches a call.

Syntax (the Claude Code family, so users can carry rules over):
- `bash(git status*)`: a bash command; `*` matches anything (`git status`, `git status --short`);
  `bash(npm test:*)` is the same as `bash(npm test*)` but only at a word boundary.
- `edit(src/**)`, `edit(**/.env)`: files the calls that write touch (the editor's write commands, apply_patch, a
  shell redirection for deny rules: each tool says which of its calls write, see `CallFacts`); paths
  are relative to the project; `**` spans folders, `*` stays inside one; a pattern without `/` matches the file
  name at any depth.
- `read(**/.env)`: files the read tools look at.
- a bare tool name (`code_search`, `bash`, `edit`) or a glob of names (`mcp__github__*`): every call of it.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import lru_cache

from coder.base.errors import ConfigError
from coder.policy.base import Call

_RULE = re.compile(r"^\s*([A-Za-z0-9_.*?\-]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


@dataclass(frozen=True)
class Rule:
    tool: str  # a tool name, "edit", "read", or a glob of names
    spec: str | None = None  # the part in parentheses

    @classmethod
    def parse(cls, text: str) -> Rule:
        m = _RULE.match(text)
        if not m:
            raise ConfigError(f"permission rule {text!r}: expected `tool` or `tool(pattern)`, "
                              "e.g. `bash(git status*)` or `edit(src/**)`")
        spec = m.group(2)
        if spec is not None:
            spec = spec.strip()
            if not spec or spec == "*":
                spec = None
        return cls(m.group(1), spec)

    def __str__(self) -> str:
        return self.tool if self.spec is None else f"{self.tool}({self.spec})"

    def covers(self, call: Call) -> bool:
        """Whether this rule speaks about `call` at all: `edit` of writes, `read` of reads, `bash` of shell lines,
        any other name (or glob of names) of the tools it names."""
        if self.tool == "edit":
            return call.writes or (call.permission == "write" and not call.shell)
        if self.tool == "read":
            return call.permission == "read"
        if self.tool == "bash":
            return call.shell
        if any(ch in self.tool for ch in "*?["):
            return fnmatch.fnmatchcase(call.tool, self.tool)
        return call.tool == self.tool

    def matches_command(self, command_text: str) -> bool:
        """For bash rules: does this rule's pattern match one simple command's text?"""
        if self.spec is None:
            return True
        return command_regex(self.spec).match(command_text) is not None

    def matches_path(self, rel_path: str) -> bool:
        if self.spec is None:
            return True
        while rel_path.startswith("./"):
            rel_path = rel_path[2:]
        return path_regex(self.spec).match(rel_path) is not None


@lru_cache(maxsize=512)
def command_regex(spec: str) -> re.Pattern[str]:
    spec = re.sub(r"\s+", " ", spec.strip())
    if spec.endswith(":*"):
        base = spec[:-2].rstrip()
        return re.compile(re.escape(base) + r"(?:\s.*)?$", re.DOTALL)
    return re.compile(".*".join(re.escape(piece) for piece in spec.split("*")) + "$", re.DOTALL)


@lru_cache(maxsize=512)
def path_regex(spec: str) -> re.Pattern[str]:
    spec = spec.strip()
    spec = spec.removeprefix("./")
    if "/" not in spec.rstrip("/"):
        spec = "**/" + spec
    out = []
    i = 0
    while i < len(spec):
        if spec.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif spec.startswith("**", i):
            out.append(".*")
            i += 2
        elif spec[i] == "*":
            out.append("[^/]*")
            i += 1
        elif spec[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(spec[i]))
            i += 1
    pattern = "".join(out)
    if spec.endswith("/"):
        pattern += ".*"
    return re.compile(pattern + "$", re.DOTALL)


def parse_rules(texts: list[str] | None, where: str) -> list[Rule]:
    rules = []
    for text in texts or []:
        if not isinstance(text, str):
            raise ConfigError(f"{where}: permission rules must be strings, got {text!r}")
        rules.append(Rule.parse(text))
    return rules
