"""The `task` tool: hand a self-contained job to a subagent with its own context, tools and budget; only its
final report comes back, so wide searches do not fill the caller's context.

The child session is made by the engine (`ctx.services["spawn_subagent"]`, injected by the builder), which keeps
imports one way: this tool never imports the engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coder.tools.base import Tool, ToolContext, ToolResult

#: spawn(agent_name, prompt, description) -> (report, is_error, data)
Spawner = Callable[[str, str, str], tuple[str, bool, dict[str, Any]]]


class TaskTool(Tool):
    def __init__(self, contract) -> None:
        self.contract = contract

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        spawn: Spawner | None = ctx.services.get("spawn_subagent")
        if spawn is None:
            return ToolResult("Subagents are not available in this session.", True)
        report, is_error, data = spawn(str(args.get("agent") or "explore"), args["prompt"],
                                       str(args.get("description", "")))
        return ToolResult(report, is_error, data=data)
