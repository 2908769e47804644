"""The `subagents` tool: the caller's view of the agents it started in the background (issue 36): list them,
read one's progress, wait for one or any to end, stop one, and for an agent that wrote in its own isolated tree,
merge its patch (reviewed first) or discard it. The engine does the work behind `ctx.services[AGENT_CONTROL]`.

Permission classes: a merge writes the session's work tree ("write"); everything else only reads or stops what
the caller itself started ("read")."""

from __future__ import annotations

from typing import Any

from coder.tools.agent_control import AGENT_CONTROL, AgentControl
from coder.tools.base import CallFacts, PermissionClass, Tool, ToolContext, ToolContract, ToolResult

ACTIONS = ("list", "read", "wait", "stop", "merge", "discard")
#: longest wait one call may ask for (seconds): the caller polls again after it, and stays interruptible
MAX_WAIT = 600.0


class SubagentsTool(Tool):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def permission_for(self, args: dict[str, Any], ctx: ToolContext) -> PermissionClass:
        return "write" if args.get("action") == "merge" else "read"

    def facts(self, args: dict[str, Any]) -> CallFacts:
        action = str(args.get("action") or "list")
        ident = str(args.get("id") or "").strip()
        what = f"{action} {ident}".strip()
        return CallFacts(f"{self.contract.name}: {what}", what, writes=action == "merge",
                         maskable=self.contract.maskable)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        control: AgentControl | None = ctx.services.get(AGENT_CONTROL)
        if control is None:
            return ToolResult("Subagents are not available in this session.", True)
        action = str(args.get("action") or "list")
        ident = str(args.get("id") or "").strip()
        if action not in ACTIONS:
            return ToolResult(f"Unknown action {action!r}: use one of {', '.join(ACTIONS)}.", True)
        if action == "list":
            return control.listing()
        if action == "wait":
            timeout = args.get("timeout", 120)
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
                return ToolResult(f"`timeout` must be a number of seconds, not {timeout!r}.", True)
            return control.wait([ident] if ident else [], min(float(timeout), MAX_WAIT), ctx.cancel)
        if not ident:
            return ToolResult(f"`{action}` needs the agent's `id` (`list` shows them).", True)
        if action == "read":
            return control.read(ident)
        if action == "stop":
            return control.stop(ident)
        if action == "merge":
            return control.merge(ident, despite_review=args.get("despite_review") is True)
        return control.discard(ident)
