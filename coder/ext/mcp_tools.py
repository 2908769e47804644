"""MCP tools as coder tools: contracts built from each server's tool list."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from coder.config.sections import Config
from coder.ext.mcp_client import MCPManager, servers_from_config, tool_name
from coder.store.outputs import clip_output
from coder.tools.base import Tool, ToolContext, ToolContract, ToolResult


class MCPTool(Tool):
    def __init__(self, contract: ToolContract, manager: MCPManager, server: str, tool: str) -> None:
        self.contract = contract
        self.manager = manager
        self.server = server
        self.tool = tool

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        text, is_error, images = self.manager.call_tool(self.server, self.tool, args)
        clipped = clip_output(text, ctx.state_dir)
        return ToolResult(clipped.text, is_error, data={"server": self.server, "output_handle": clipped.handle},
                          images=images)

    def close(self) -> None:
        self.manager.close()  # idempotent: every tool of the session shares the manager


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
