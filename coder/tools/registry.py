"""Contracts (data in `tools/`) joined to the code behind them.

Implementations are named by import string and imported only when a session builds its tool set, so that
`coder --help` stays fast."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from coder.errors import ConfigError
from coder.resources import data_dir
from coder.tools.base import Tool, ToolContract

#: tool name -> "module:Class"; the class takes the contract as its only argument
BUILTIN_IMPLEMENTATIONS: dict[str, str] = {
    "bash": "coder.tools.bash_tool:BashTool",
    "str_replace_based_edit_tool": "coder.tools.edit_tool:EditTool",
    "code_search": "coder.tools.search_tool:CodeSearchTool",
    "apply_patch": "coder.tools.patch_tool:ApplyPatchTool",
    "read_output": "coder.tools.read_output_tool:ReadOutputTool",
    "task": "coder.ext.subagents:TaskTool",
}


def load_contracts(folder: Path | None = None) -> dict[str, ToolContract]:
    folder = folder or data_dir("tools")
    contracts: dict[str, ToolContract] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            contract = ToolContract.load(path)
        except (KeyError, ValueError) as exc:
            raise ConfigError(f"tool contract {path} is invalid: {exc}") from exc
        contracts[contract.name] = contract
    return contracts


def _import(target: str) -> Callable[[ToolContract], Tool]:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


def builtin_tools(names: list[str] | None = None) -> dict[str, Tool]:
    """Instantiate the built-in tools (all, or those in `names`) for one session."""
    contracts = load_contracts()
    tools: dict[str, Tool] = {}
    for name, target in BUILTIN_IMPLEMENTATIONS.items():
        if names is not None and name not in names:
            continue
        if name not in contracts:
            raise ConfigError(f"built-in tool {name!r} has no contract in {data_dir('tools')}")
        tools[name] = _import(target)(contracts[name])
    return tools
