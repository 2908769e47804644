"""The `task` tool: hand a self-contained job to a subagent with its own context, tools and budget; only its
final report comes back, so wide searches do not fill the caller's context.

The child session is made by the engine (`ctx.services["spawn_subagent"]`, injected by the builder), which keeps
imports one way: this tool never imports the engine. The agent definitions are the session's, read once when it
opened (`ctx.services["subagents"]`): the same ones classify a call here and start the child there."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from coder.ext.agents import AgentDefinition, agent_permission
from coder.tools.base import ClaudeCall, PermissionClass, Tool, ToolContext, ToolResult

#: spawn(agent_name, prompt, description) -> (report, is_error, data)
Spawner = Callable[[str, str, str], tuple[str, bool, dict[str, Any]]]
DEFAULT_AGENT = "explore"


def agent_name(args: dict[str, Any]) -> str:
    return str(args.get("agent") or DEFAULT_AGENT)


class TaskTool(Tool):
    def __init__(self, contract) -> None:
        self.contract = contract

    def permission_for(self, args: dict[str, Any], ctx: ToolContext) -> PermissionClass:
        """Classed by the agent it would start (see `agent_permission`), not by the contract: a `task` is as
        powerful as the most powerful tool its agent may use. An unknown agent is "read": nothing starts, the
        call only reports which agents exist."""
        agents: dict[str, AgentDefinition] = ctx.services.get("subagents") or {}
        agent = agents.get(agent_name(args))
        return "read" if agent is None else agent_permission(agent)

    def claude_call(self, args: dict[str, Any], cwd: Path) -> ClaudeCall:
        """Claude Code's `Task`: the agent is its `subagent_type`."""
        return ClaudeCall("Task", {"description": args.get("description", ""), "prompt": args.get("prompt", ""),
                                   "subagent_type": agent_name(args)})

    def from_claude(self, updated: dict[str, Any], args: dict[str, Any], cwd: Path) -> dict[str, Any]:
        out = {**args, **{k: updated[k] for k in ("description", "prompt") if k in updated}}
        if "subagent_type" in updated:
            out["agent"] = updated["subagent_type"]
        return out

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        spawn: Spawner | None = ctx.services.get("spawn_subagent")
        if spawn is None:
            return ToolResult("Subagents are not available in this session.", True)
        report, is_error, data = spawn(agent_name(args), args["prompt"], str(args.get("description", "")))
        return ToolResult(report, is_error, data=data)
