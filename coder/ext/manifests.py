"""Every file an extension is written in, declared once as a typed model and read through the schema layer
(coder/base/schema.py): a wrong value is one line naming the file, the line and the key, before anything uses it.

| file | model | whose format |
| --- | --- | --- |
| `agents/*.md` (coder's: the config dir's, `.coder/agents/`) | `AgentFile` | coder's: an unknown key is refused |
| `.claude/agents/*.md`, `~/.claude/agents/`, a plugin's `agents/` | `ClaudeAgentFile` | Claude Code's |
| `SKILL.md` of a skill folder | `SkillFile` | Agent Skills' |
| `commands/*.md` (coder's) | `CommandFile` | coder's: an unknown key is refused |
| `.claude/commands/**/*.md`, a plugin's `commands/` | `ClaudeCommandFile` | Claude Code's |
| `tools/NAME.json` (custom tools) | `CustomToolFile` | coder's: an unknown key is refused |
| `.mcp.json`, a plugin's `.mcp.json` or `mcpServers` | `McpFile` (each server an `[mcp.servers.NAME]`) | shared |
| Claude Code's `settings.json` | `ClaudeSettingsFile` (hooks, permissions, enabledPlugins) | Claude Code's |
| a plugin's `hooks/hooks.json` | `ClaudeHooksFile` | Claude Code's |
| `.claude-plugin/plugin.json` | `PluginManifest` | Claude Code's |

Formats that belong to someone else carry keys coder has no use for (a Claude Code agent's `color`), which are
left out (`__unknown_keys__ = "ignore"`); the keys coder reads are checked all the same. Each file is read with
`read_json` or `read_markdown`, which give the schema the line of every key.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from coder.base.errors import ConfigError
from coder.base.keylines import json_lines, yaml_with_lines
from coder.base.schema import Keys, Source, key, parse
from coder.base.settings import SettingError
from coder.config.programs import McpServer
from coder.tools.registry import BUILTIN_IMPLEMENTATIONS

M = TypeVar("M")
Mode = Literal["plan", "ask", "auto-edit", "auto"]
Permission = Literal["read", "write", "execute", "network"]
TOOL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
PLUGIN_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


class Theirs:
    """A format that belongs to someone else: keys coder does not read are left out, not refused."""

    __unknown_keys__ = "ignore"


def said(value: str) -> None:
    if not value.strip():
        raise ValueError("must not be empty")


def _matches(pattern: re.Pattern[str], words: str) -> Any:
    def check(value: str) -> None:
        if not pattern.match(value):
            raise ValueError(f"must be {words}")
    return check


def names(value: str | list[str] | None) -> list[str] | None:
    """A list of names as a front matter may write it: a YAML list, or one string of comma-separated names."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


# ---- agents ----------------------------------------------------------------------------------------------------
def _builtin_tools(value: list[str] | str | None) -> None:
    unknown = sorted(set(names(value) or []) - set(BUILTIN_IMPLEMENTATIONS))
    if unknown:
        raise ValueError(f"unknown tool(s) {', '.join(unknown)}; built-in tools: "
                         f"{', '.join(sorted(BUILTIN_IMPLEMENTATIONS))}")


@dataclass
class AgentFile:
    """A subagent of coder's own (docs/extending.md): front matter over its prompt."""

    name: str | None = None
    description: str = ""
    tools: list[str] | str | None = key(None, check=_builtin_tools,
                                        doc="Built-in tools, as a list or comma-separated; default explore's.")
    model: str | None = None
    max_turns: int = key(25, above=0)
    max_cost: float = key(1.0, above=0)
    permission_mode: Mode = "plan"


@dataclass
class ClaudeAgentFile(Theirs):
    """A Claude Code subagent (https://docs.claude.com/en/docs/claude-code/sub-agents)."""

    name: str | None = None
    description: str = ""
    tools: list[str] | str | None = None  # Claude Code's tool names
    model: str | None = None


# ---- skills and commands ---------------------------------------------------------------------------------------
@dataclass
class SkillFile(Theirs):
    """A SKILL.md's front matter (the Agent Skills format)."""

    description: str = key(check=lambda v: _skill_description(v))
    name: str | None = None


def _skill_description(value: str) -> None:
    if not value.strip():
        raise ValueError("must not be empty (the model chooses skills by it)")


@dataclass
class ClaudeCommandFile(Theirs):
    """A custom slash command's front matter, Claude Code's keys (https://docs.claude.com/en/docs/claude-code/
    slash-commands)."""

    description: str = ""
    allowed_tools: list[str] | str | None = key(None, name="allowed-tools")
    allowed_tools_: list[str] | str | None = key(None, name="allowed_tools")  # coder's first spelling
    argument_hint: str | list[Any] = key("", name="argument-hint")

    def tools(self) -> list[str]:
        """`allowed-tools` as a list: "a, bash(x, y), b" is split at commas outside parentheses."""
        value = self.allowed_tools if self.allowed_tools is not None else self.allowed_tools_
        if isinstance(value, str):
            return [t.strip() for t in re.split(r",(?![^()]*\))", value) if t.strip()]
        return list(value or [])

    def hint(self) -> str:
        """`argument-hint` as written: `[message]` is a list to YAML."""
        if isinstance(self.argument_hint, list):
            return "[" + ", ".join(str(v) for v in self.argument_hint) + "]"
        return self.argument_hint


@dataclass
class CommandFile(ClaudeCommandFile):
    """A custom slash command of coder's own: the same keys, an unknown one refused."""

    __unknown_keys__ = "refuse"


# ---- custom tools ----------------------------------------------------------------------------------------------
def _object_schema(value: dict[str, Any]) -> None:
    if value.get("type") != "object":
        raise ValueError("must be a JSON schema of type object")
    # start-up time: jsonschema loads only when a custom tool is read
    from jsonschema import SchemaError, validators

    try:
        validators.validator_for(value).check_schema(value)
    except SchemaError as exc:
        raise ValueError(f"is not a valid JSON schema ({exc.message})") from None


@dataclass
class CustomToolFile:
    """A custom tool's contract and command (coder/ext/custom_tools.py, docs/extending.md)."""

    name: str = key(check=_matches(TOOL_NAME, "a letter, then letters, digits, _ or - (64 at most)"))
    description: str = key(check=said)
    command: str = key(check=said)
    input_schema: dict[str, Any] = key(factory=lambda: {"type": "object", "properties": {}}, check=_object_schema)
    permission: Permission = "execute"
    input: Literal["args", "stdin"] = "args"
    timeout: float = key(120.0, above=0)
    sandbox: bool = True


# ---- MCP servers -----------------------------------------------------------------------------------------------
@dataclass
class McpFile(Theirs):
    """`.mcp.json` (and a plugin's): servers by name, each checked as `[mcp.servers.NAME]` is."""

    mcpServers: dict[str, McpServer] = key(factory=dict)  # noqa: N815 - the file's own key


# ---- Claude Code's settings, hooks and plugins ------------------------------------------------------------------
@dataclass
class ClaudeHookEntry(Theirs):
    type: str = "command"
    command: str = ""
    timeout: float = key(60.0, above=0)

    def check(self) -> None:
        if self.type == "command" and not self.command.strip():
            raise SettingError("command", "a command hook needs a non-empty `command`")


@dataclass
class ClaudeHookGroup(Theirs):
    hooks: list[ClaudeHookEntry]
    matcher: str = ""


#: hooks by event: `{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "..."}]}]}`
ClaudeHooks = dict[str, list[ClaudeHookGroup]]


@dataclass
class ClaudeHooksFile(Theirs):
    """A plugin's `hooks/hooks.json`: the hooks under `hooks` (a description beside them)."""

    hooks: ClaudeHooks = key(factory=dict)
    description: str = ""


@dataclass
class ClaudePermissions(Theirs):
    allow: list[str] = key(factory=list)
    ask: list[str] = key(factory=list)
    deny: list[str] = key(factory=list)


@dataclass
class ClaudeSettingsFile(Theirs):
    """What coder reads of a Claude Code settings file (coder/ext/claude_settings.py)."""

    hooks: ClaudeHooks = key(factory=dict)
    permissions: ClaudePermissions = key(factory=ClaudePermissions)
    enabledPlugins: dict[str, bool] = key(factory=dict)  # noqa: N815 - the file's own key


Paths = str | list[str] | None


@dataclass
class PluginManifest(Theirs):
    """`.claude-plugin/plugin.json` (https://docs.claude.com/en/docs/claude-code/plugins-reference): the component
    fields add paths (`./x`, or a list of them) to the default folders; `hooks` and `mcpServers` may be inline."""

    name: str = key(check=_matches(PLUGIN_NAME, "in kebab-case (lowercase letters, digits, hyphens)"))
    version: str = ""
    description: str = ""
    commands: Paths = None
    agents: Paths = None
    skills: Paths = None
    hooks: str | list[str] | dict[str, Any] | None = None
    mcpServers: str | list[str] | dict[str, Any] | None = None  # noqa: N815 - the file's own key

    def paths(self, component: str) -> list[str]:
        value = getattr(self, component)
        return [value] if isinstance(value, str) else value if isinstance(value, list) else []

    def inline(self, component: str) -> dict[str, Any] | None:
        value = getattr(self, component)
        return value if isinstance(value, dict) else None


# ---- reading ---------------------------------------------------------------------------------------------------
def read_text(path: Path, raw: bytes | None = None) -> str:
    try:
        return raw.decode("utf-8") if raw is not None else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc}).") from exc


def read_json(model: type[M], path: Path | str, raw: bytes | None = None, text: str | None = None,
              keys: Keys = ()) -> M:
    """The JSON file `path` (or its bytes `raw`, or its `text`) as `model`, or one ConfigError line naming the file,
    the line and the key. `keys`: the part of the document to read as `model` (`("mcpServers",)`)."""
    text = text if text is not None else read_text(Path(path), raw)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc}).") from exc
    except RecursionError:  # arrays or objects nested thousands deep
        raise ConfigError(f"{path}: not valid JSON (nested too deeply).") from None
    source = Source(str(path), json_lines(text))
    for part in keys:
        data = data.get(part) if isinstance(data, dict) else None
    return parse(model, data, source, keys)


def read_markdown(model: type[M], path: Path | str, raw: bytes | None = None, text: str | None = None,
                  lenient: bool = False) -> tuple[M, str]:
    """(front matter as `model`, body) of a Markdown file with a YAML front matter between `---` lines; a file
    without one reads as an empty front matter. `lenient`: front matter lines that YAML refuses are taken as plain
    `key: value` lines (Claude Code's commands write `argument-hint: [message]`, a YAML list, as text)."""
    text = text if text is not None else read_text(Path(path), raw)
    data: Any = {}
    lines: dict[Keys, int] = {}
    body = text
    if text.startswith("---"):
        head, sep, rest = text[3:].partition("\n---")
        if not sep:
            raise ConfigError(f"{path}: the front matter opened with --- is never closed.")
        body = rest.split("\n", 1)[1] if "\n" in rest else ""
        # start-up time: PyYAML loads only when this runs
        import yaml

        try:
            data, lines = yaml_with_lines(head.removeprefix("\n"), first_line=2)
        except yaml.YAMLError as exc:
            data = _plain_lines(head) if lenient else None
            if data is None:
                raise ConfigError(f"{path}: the front matter is not valid YAML ({exc}).") from exc
        if data is None:
            data = {}
    return parse(model, data, Source(str(path), lines)), body.lstrip("\n")


def _plain_lines(text: str) -> dict[str, Any] | None:
    """`key: value` lines taken as they are; None when a line is not of that form."""
    out: dict[str, Any] = {}
    for line in text.strip("\n").splitlines():
        name, sep, value = line.partition(":")
        if not line.strip():
            continue
        if not sep or not re.fullmatch(r"[A-Za-z][\w-]*", name.strip()):
            return None
        out[name.strip()] = value.strip()
    return out
