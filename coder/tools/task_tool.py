"""The `task` tool: hand a self-contained job to a subagent with its own context, tools and budget; only its
final report comes back, so wide searches do not fill the caller's context. With `background: true` the call
returns at once and the agent works while the caller goes on (the `subagents` tool follows it; issue 36).

The child session is made by the engine behind `ctx.services[AGENT_CONTROL]` (coder/tools/agent_control.py),
which keeps imports one way: this tool never imports the engine, and the engine never names this tool. The agent
definitions are the session's, read once when it opened: the same ones class a call here and start the child
there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coder.tools.agent_control import AGENT_CONTROL, AgentControl
from coder.tools.base import (
    CallFacts,
    ClaudeCall,
    PermissionClass,
    Tool,
    ToolContext,
    ToolContract,
    ToolResult,
    one_line,
)

DEFAULT_AGENT = "explore"


def agent_name(args: dict[str, Any]) -> str:
    return str(args.get("agent") or DEFAULT_AGENT)


class TaskTool(Tool):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def permission_for(self, args: dict[str, Any], ctx: ToolContext) -> PermissionClass:
        """Classed by the agent it would start (`AgentControl.permission`), not by the contract: a `task` is as
        powerful as the most powerful tool its agent may use, in the background or not."""
        control: AgentControl | None = ctx.services.get(AGENT_CONTROL)
        return "read" if control is None else control.permission(agent_name(args))

    def facts(self, args: dict[str, Any]) -> CallFacts:
        what = str(args.get("description") or args.get("prompt") or "")
        where = " (background)" if args.get("background") is True else ""
        return CallFacts(f"{self.contract.name}: {agent_name(args)}{where}: {one_line(what, 70)}",
                         one_line(str(args.get("prompt", "")), 600), maskable=self.contract.maskable)

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
        control: AgentControl | None = ctx.services.get(AGENT_CONTROL)
        if control is None:
            return ToolResult("Subagents are not available in this session.", True)
        return control.start(agent_name(args), str(args["prompt"]), str(args.get("description", "")),
                             background=args.get("background") is True)
