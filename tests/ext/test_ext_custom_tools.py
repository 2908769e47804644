"""Custom command tools from .coder/tools/, run in the real sandbox."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from coder.base.errors import ConfigError
from coder.ext.custom_tools import load_custom_tools
from coder.tools.base import ToolContext


def write_tool(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{data.get('name', 'bad')}.json"
    path.write_text(json.dumps(data))
    return path


def ctx(workspace: Path) -> ToolContext:
    return ToolContext(workspace, workspace, "s", threading.Event(), workspace.parent / "state")


def test_args_are_quoted_and_output_returned(git_repo: Path) -> None:
    write_tool(git_repo / ".coder" / "tools", {
        "name": "count_lines", "description": "Count lines of a file.", "command": "wc -l < {path}",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}})
    tools = load_custom_tools(git_repo, {"bash"}, trusted=True)
    tool = tools["count_lines"]
    assert tool.contract.permission == "execute"
    assert tool.run(tool.parse({"path": "src/app.py"}), ctx(git_repo)).output.strip() == "2"
    injected = tool.run(tool.parse({"path": "x; touch pwned"}), ctx(git_repo))
    assert injected.is_error and not (git_repo / "pwned").exists()


def test_stdin_mode_and_outside_writes_never_reach_the_host(git_repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "escape.txt"
    write_tool(git_repo / ".coder" / "tools", {
        "name": "echo_json", "description": "Echo input.", "input": "stdin",
        "command": f"cat; echo; touch {target} 2>/dev/null; echo done"})
    tool = load_custom_tools(git_repo, set(), trusted=True)["echo_json"]
    result = tool.run(tool.parse({"a": 1}), ctx(git_repo))
    assert json.loads(result.output.splitlines()[0]) == {"a": 1}
    assert "done" in result.output and not target.exists()  # /tmp inside the sandbox is private


def test_nonzero_exit_is_an_error_result(git_repo: Path) -> None:
    write_tool(git_repo / ".coder" / "tools", {"name": "fail", "description": "Fails.", "command": "echo nope; exit 3"})
    tool = load_custom_tools(git_repo, set(), trusted=True)["fail"]
    result = tool.run(tool.parse({}), ctx(git_repo))
    assert result.is_error and "exit code 3" in result.output and "nope" in result.output


def test_project_overrides_user_and_builtin_names_are_reserved(git_repo: Path, isolated_home: Path) -> None:
    write_tool(isolated_home / ".config" / "coder" / "tools", {"name": "t", "description": "user", "command": "true"})
    write_tool(git_repo / ".coder" / "tools", {"name": "t", "description": "project", "command": "true"})
    assert load_custom_tools(git_repo, set(), trusted=True)["t"].contract.description == "project"
    write_tool(git_repo / ".coder" / "tools", {"name": "bash", "description": "x", "command": "true"})
    with pytest.raises(ConfigError, match="built-in tool name"):
        load_custom_tools(git_repo, {"bash"}, trusted=True)


@pytest.mark.parametrize("data, message", [
    ({"name": "x", "description": "d"}, ": needs `command`"),
    ({"name": "x", "description": "d", "command": " "}, ':1: command = " ": must not be empty'),
    ({"name": "bad name", "description": "d", "command": "c"}, ':1: name = "bad name": must be a letter, then'),
    ({"name": "x", "description": "d", "command": "c", "permission": "root"},
     ':1: permission = "root": expected one of "read", "write", "execute", "network"'),
    ({"name": "x", "description": "d", "command": "c", "input_schema": {"type": "string"}},
     ":1: input_schema = an object: must be a JSON schema of type object"),
    ({"name": "x", "description": "d", "command": "c", "input_schema": {"type": "object", "required": "a"}},
     "input_schema = an object: is not a valid JSON schema ('a' is not of type 'array')"),
    ({"name": "x", "description": "d", "command": "c", "timeout": float("nan")}, ":1: timeout = NaN: expected a"),
    ({"name": "x", "description": "d", "command": "c", "sandbox": "false"},
     ':1: sandbox = "false": expected true or false (write it without quotes)'),
    ({"name": "x", "description": "d", "command": "c", "sandbx": False}, ":1: sandbx: unknown key (did you mean"),
])
def test_bad_contracts_name_the_file(git_repo: Path, data: dict, message: str) -> None:
    path = write_tool(git_repo / ".coder" / "tools", data)
    with pytest.raises(ConfigError) as info:
        load_custom_tools(git_repo, set(), trusted=True)
    assert str(path) in str(info.value) and message in str(info.value)
