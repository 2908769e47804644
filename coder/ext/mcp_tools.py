"""MCP tools as coder tools: contracts built from each server's tool list (the tool itself, its input checked
against the server's schema at the door: coder/tools/external.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from coder.config.sections import Config
from coder.ext.mcp_client import MCPManager, servers_from_config, tool_name
from coder.tools.base import Tool, ToolContract
from coder.tools.external import MCPTool


def contract_for(server: str, tool: Any) -> ToolContract:
    annotations = getattr(tool, "annotations", None)
    read_only = bool(getattr(annotations, "read_only_hint", None) or getattr(annotations, "readOnlyHint", None))
    schema = getattr(tool, "input_schema", None) or {"type": "object", "properties": {}}
    description = (tool.description or f"The {tool.name} tool of the {server} MCP server.").strip()
    # deferred: a server brings dozens of tools; the tool search lists them by name and loads them on demand
    return ToolContract(tool_name(server, tool.name), f"[MCP server {server}] {description}", dict(schema),
                        "read" if read_only else "execute", deferred=True)


def load_mcp_tools(config: Config, workspace: Path,
                   report: Callable[[str], None] | None = None) -> dict[str, Tool]:
    """Start the configured servers and return their tools (none, and no thread, when nothing is configured)."""
    servers = servers_from_config(config, workspace, report)
    if not servers:
        return {}
    manager = MCPManager(servers, workspace, config.sandbox)
    manager.start_all()
    tools: dict[str, Tool] = {}
    for name, state in manager.states.items():
        if state.status != "ready":
            if report:
                report(f"MCP server {name!r} is unavailable: {state.error or state.status}")
            continue
        for tool in state.tools:
            contract = contract_for(name, tool)
            tools[contract.name] = MCPTool(contract, manager, name, tool.name)
    if not tools:
        manager.close()
    return tools
