"""Custom tools: a contract in `.coder/tools/NAME.json` (or the config dir's `tools/`) plus a command to run in
the sandbox.

    {"name": "run_tests", "description": "Run the test suite, or one test file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
     "permission": "execute",
     "command": "pytest -q {path}",        # {field} is replaced by the shell-quoted input value
     "input": "args",                      # or "stdin": the whole input as JSON on stdin
     "timeout": 120, "sandbox": true}

The project's folder wins over the user's for the same name; a built-in name cannot be taken. The tool itself (its
input checked against `input_schema` at the door, its command run in a fresh sandbox): coder/tools/external.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from coder.base.errors import ConfigError
from coder.base.paths import config_dir
from coder.ext.manifests import CustomToolFile, read_json
from coder.tools.base import Tool, ToolContract
from coder.tools.external import CommandTool
from coder.trust.decisions import inspect


def load_custom_tool(path: Path, raw: bytes | None = None) -> CommandTool:
    """One contract file (or `raw`, its bytes already read), a CustomToolFile (coder/ext/manifests.py); ConfigError
    names the file, the line and the key."""
    data = read_json(CustomToolFile, path, raw)
    contract = ToolContract(data.name, data.description, data.input_schema, data.permission)
    return CommandTool(contract, data.command, data.input, data.timeout, data.sandbox)


def custom_tool_dirs(workspace: Path, trusted: bool = False) -> list[Path]:
    """User folder first, project folder last (it wins); the project's only in a trusted workspace."""
    return [config_dir() / "tools"] + ([workspace / ".coder" / "tools"] if trusted else [])


def load_custom_tools(workspace: Path, reserved: set[str], trusted: bool = False,
                      report: Callable[[str], None] | None = None,
                      repo_files: dict[str, bytes] | None = None) -> dict[str, Tool]:
    """Custom tools by name: the user's, then (trusted workspace only) the repository's.

    A repository's tool is read from the bytes the trust check fingerprinted (`repo_files`; else beneath the
    workspace, never through a symlink), is always classed `execute` whatever it declares (its command may run
    files the model can change, so "read" would let it run unasked in plan mode), and one that asks for
    `sandbox = false` is left out and reported: running outside the sandbox is the user's decision."""
    tools: dict[str, Tool] = {}
    user_dir = config_dir() / "tools"
    if user_dir.is_dir():
        for path in sorted(user_dir.glob("*.json")):
            _add(tools, load_custom_tool(path), path, reserved)
    if not trusted:
        return tools
    if repo_files is None:
        repo_files = inspect(workspace).files
    for rel, raw in sorted(repo_files.items()):
        if not (rel.startswith(".coder/tools/") and rel.endswith(".json")):
            continue
        path = workspace / rel
        tool = load_custom_tool(path, raw)
        if not tool.sandbox:
            if report:
                report(f"custom tool {path} left out: `sandbox = false` is only honoured in your own config "
                       f"dir ({user_dir}), never in a repository")
            continue
        tool.contract = dataclasses.replace(tool.contract, permission="execute")
        _add(tools, tool, path, reserved)
    return tools


def _add(tools: dict[str, Tool], tool: CommandTool, path: Path, reserved: set[str]) -> None:
    if tool.contract.name in reserved:
        raise ConfigError(f"custom tool {path}: {tool.contract.name!r} is a built-in tool name.")
    tools[tool.contract.name] = tool
