"""Every extension file coder reads is parsed through the schema layer (coder/ext/manifests.py): a wrong value is
one line naming the file, the line and the key, through the loader a session uses (issue 48)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from coder.base.errors import ConfigError
from coder.commands.custom import load_custom
from coder.config.sections import Config
from coder.ext.agents import load_agent, load_claude_agent
from coder.ext.claude_settings import load_claude_settings
from coder.ext.custom_tools import load_custom_tool
from coder.ext.mcp_client import servers_from_config
from coder.ext.plugins import read_plugin
from coder.ext.skills import parse_skill


def agent(tmp_path: Path, line: str) -> Callable[[], Any]:
    path = tmp_path / "fix.md"
    path.write_text(f"---\nname: fix\ndescription: fixes\n{line}\n---\nYou fix things.\n")
    return lambda: load_agent(path)


def claude_agent(tmp_path: Path, line: str) -> Callable[[], Any]:
    path = tmp_path / "fix.md"
    path.write_text(f"---\nname: fix\ndescription: fixes\n{line}\n---\nYou fix things.\n")
    return lambda: load_claude_agent(path)


def skill(tmp_path: Path, line: str) -> Callable[[], Any]:
    path = tmp_path / "SKILL.md"
    path.write_text(f"---\nname: pdf\n{line}\n---\nRead PDFs.\n")
    return lambda: parse_skill(path.read_bytes(), str(path), "pdf")


def command(tmp_path: Path, line: str, claude: bool = False) -> Callable[[], Any]:
    path = tmp_path / "explain.md"
    path.write_text(f"---\ndescription: explain\n{line}\n---\nExplain $ARGUMENTS.\n")
    return lambda: load_custom(path, lenient=claude)


def json_file(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path


def custom_tool(tmp_path: Path, **more: Any) -> Callable[[], Any]:
    path = json_file(tmp_path / "t.json", {"name": "t", "description": "d", "command": "true", **more})
    return lambda: load_custom_tool(path)


def mcp(tmp_path: Path, entry: dict[str, Any]) -> Callable[[], Any]:
    json_file(tmp_path / ".mcp.json", {"mcpServers": {"git": {"command": "mcp-server-git", **entry}}})
    config = Config()
    config.trusted = True
    return lambda: servers_from_config(config, tmp_path)


def claude_settings(tmp_path: Path, data: dict[str, Any]) -> Callable[[], Any]:
    json_file(Path.home() / ".claude" / "settings.json", data)
    return lambda: load_claude_settings(tmp_path, False, {})


def plugin(tmp_path: Path, data: dict[str, Any], hooks: dict[str, Any] | None = None) -> Callable[[], Any]:
    root = tmp_path / "plug"
    json_file(root / ".claude-plugin" / "plugin.json", {"name": "plug", **data})
    if hooks is not None:
        json_file(root / "hooks" / "hooks.json", hooks)
    return lambda: read_plugin(root).hooks([])


HOOK = {"type": "command", "command": "true"}
CASES: list[tuple[str, Callable[[Path], Callable[[], Any]], str, str]] = [
    # (what, loader, file name, the message after FILE:LINE: )
    ("agent max_cost nan", lambda t: agent(t, "max_cost: .nan"), "fix.md",
     "max_cost = NaN: expected a number, not NaN"),
    ("agent max_cost 'nan'", lambda t: agent(t, "max_cost: nan"), "fix.md", 'max_cost = "nan": expected a number'),
    ("agent max_turns 2.9", lambda t: agent(t, "max_turns: 2.9"), "fix.md", "max_turns = 2.9: expected a whole number"),
    ("agent max_turns true", lambda t: agent(t, "max_turns: true"), "fix.md",
     "max_turns = true: expected a whole number"),
    ("agent max_turns 0", lambda t: agent(t, "max_turns: 0"), "fix.md", "max_turns = 0: must be greater than 0"),
    ("agent mode", lambda t: agent(t, "permission_mode: root"), "fix.md",
     'permission_mode = "root": expected one of "plan", "ask", "auto-edit", "auto"'),
    ("agent tools type", lambda t: agent(t, "tools: 5"), "fix.md", "tools = 5: expected a list of strings or a string"),
    ("agent unknown tool", lambda t: agent(t, "tools: [bash, nope]"), "fix.md",
     'tools = ["bash", "nope"]: unknown tool(s) nope; built-in tools: '),
    ("agent unknown key", lambda t: agent(t, "max_turn: 3"), "fix.md",
     "max_turn: unknown key (did you mean max_turns?"),
    ("Claude agent tools", lambda t: claude_agent(t, "tools: {Read: yes}"), "fix.md",
     "tools = an object: expected a list of strings or a string"),
    ("Claude agent model", lambda t: claude_agent(t, "model: 4"), "fix.md", "model = 4: expected a string"),
    ("skill description", lambda t: skill(t, "description: [a, b]"), "SKILL.md",
     'description = ["a", "b"]: expected a string'),
    ("skill empty description", lambda t: skill(t, "description: ' '"), "SKILL.md",
     'description = " ": must not be empty (the model chooses skills by it)'),
    ("command allowed-tools", lambda t: command(t, "allowed-tools: 3"), "explain.md",
     "allowed-tools = 3: expected a list of strings or a string"),
    ("command unknown key", lambda t: command(t, "allowed-tool: [bash]"), "explain.md",
     "allowed-tool: unknown key (did you mean allowed-tools?"),
    ("Claude command hint", lambda t: command(t, "argument-hint: {a: b}", claude=True), "explain.md",
     "argument-hint = an object: expected a string or a list"),
    ("custom tool timeout", lambda t: custom_tool(t, timeout="30"), "t.json",
     'timeout = "30": expected a number (write it without quotes)'),
    ("custom tool nan", lambda t: custom_tool(t, timeout=float("nan")), "t.json", "timeout = NaN: expected a number"),
    (".mcp.json args", lambda t: mcp(t, {"args": "--repository ."}), ".mcp.json",
     'mcpServers.git.args = "--repository .": expected a list of strings, like'),
    (".mcp.json timeout", lambda t: mcp(t, {"startup_timeout": -1}), ".mcp.json",
     "mcpServers.git.startup_timeout = -1: must be greater than 0"),
    (".mcp.json both", lambda t: mcp(t, {"url": "http://x"}), ".mcp.json",
     "mcpServers.git.command: needs exactly one of `command` (stdio) or `url` (streamable HTTP)"),
    ("settings hook timeout", lambda t: claude_settings(t, {"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [HOOK, {**HOOK, "timeout": "30"}]}]}}), "settings.json",
     'hooks.PreToolUse[0].hooks[1].timeout = "30": expected a number (write it without quotes)'),
    ("settings hook command", lambda t: claude_settings(t, {"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}}),
     "settings.json", "hooks.Stop[0].hooks[0].command: a command hook needs a non-empty `command`"),
    ("settings rules", lambda t: claude_settings(t, {"permissions": {"allow": "Bash"}}), "settings.json",
     'permissions.allow = "Bash": expected a list of strings, like ["Bash"]'),
    ("settings plugins", lambda t: claude_settings(t, {"enabledPlugins": {"fmt@x": "yes"}}), "settings.json",
     'enabledPlugins.fmt@x = "yes": expected true or false'),
    ("plugin name", lambda t: plugin(t, {"name": "Bad Name"}), "plugin.json",
     'name = "Bad Name": must be in kebab-case'),
    ("plugin paths", lambda t: plugin(t, {"commands": 3}), "plugin.json",
     "commands = 3: expected a "),
    ("plugin hooks.json", lambda t: plugin(t, {}, {"hooks": {"Stop": [{"hooks": [{**HOOK, "timeout": 0}]}]}}),
     "hooks.json", "hooks.Stop[0].hooks[0].timeout = 0: must be greater than 0"),
    ("plugin inline hooks", lambda t: plugin(t, {"hooks": {"Stop": [{"matcher": 3, "hooks": []}]}}), "plugin.json",
     "hooks.Stop[0].matcher = 3: expected a string"),
]


@pytest.mark.parametrize(("what", "make", "name", "says"), CASES, ids=[c[0] for c in CASES])
def test_a_wrong_value_is_one_line_naming_the_file_the_line_and_the_key(
        tmp_path: Path, what: str, make: Callable[[Path], Callable[[], Any]], name: str, says: str) -> None:
    load = make(tmp_path)
    with pytest.raises(ConfigError) as info:
        load()
    message = str(info.value)
    assert "\n" not in message and info.value.exit_code == 2, message
    where, _, rest = message.partition(f"{name}:")
    line, _, problem = rest.partition(": ")
    assert where.endswith("/") or where in ("", "~/.claude/"), message
    assert line.isdigit() and int(line) >= 1, message  # the line where the key is written
    assert problem.startswith(says), message


def test_the_line_is_the_one_the_key_is_on(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"fix\.md:6: max_cost = NaN"):
        agent(tmp_path, "tools: [bash]\nmodel: null\nmax_cost: .nan")()
    path = json_file(tmp_path / "t.json", {"name": "t", "description": "d", "command": "c", "timeout": "9"})
    with pytest.raises(ConfigError, match=r"t\.json:5: timeout"):
        load_custom_tool(path)


def test_right_files_load_with_the_keys_of_other_tools_left_out(tmp_path: Path) -> None:
    loaded = agent(tmp_path, "max_turns: 3\nmax_cost: 0.5\ntools: bash, code_search")()
    assert (loaded.max_turns, loaded.max_cost, loaded.tools) == (3, 0.5, ["bash", "code_search"])
    claude = claude_agent(tmp_path, "tools: Read, Grep\ncolor: blue\nmodel: sonnet")()  # color: Claude Code's own
    assert claude.permission_mode == "plan" and claude.model is None
    explained = command(tmp_path, 'argument-hint: [file]\nmodel: haiku', claude=True)()
    assert explained.usage == "[file]"
    assert custom_tool(tmp_path, timeout=5)().timeout == 5.0
