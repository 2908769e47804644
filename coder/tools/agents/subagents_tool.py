"""The `subagents` tool: the caller's view of the agents it started in the background (issue 36): list them,
read one's progress, wait for one or any to end, stop one, and for an agent that wrote in its own isolated tree,
merge its patch (reviewed first) or discard it. The engine does the work behind `ctx.services[AGENT_CONTROL]`.

Permission classes: a merge writes the session's work tree ("write"); everything else only reads or stops what
the caller itself started ("read")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from coder.base.schema import key
from coder.tools.agents.control import AGENT_CONTROL, AgentControl
from coder.tools.base import CallFacts, PermissionClass, Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params

#: longest wait one call may ask for (seconds): the caller polls again after it, and stays interruptible
MAX_WAIT = 600.0


@dataclass(frozen=True)
class SubagentsParams(Params):
    """tools/subagents.json."""

    action: Literal["list", "read", "wait", "stop", "merge", "discard"]
    id: str | None = None
    timeout: float = key(120.0, at_least=0)
    despite_review: bool = False

    @property
    def ident(self) -> str:
        return (self.id or "").strip()


class SubagentsTool(Tool[SubagentsParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def permission_for(self, params: SubagentsParams, ctx: ToolContext) -> PermissionClass:
        return "write" if params.action == "merge" else "read"

    def facts(self, params: SubagentsParams) -> CallFacts:
        what = f"{params.action} {params.ident}".strip()
        return CallFacts(f"{self.contract.name}: {what}", what, writes=params.action == "merge",
                         maskable=self.contract.maskable)

    def run(self, params: SubagentsParams, ctx: ToolContext) -> ToolResult:
        control: AgentControl | None = ctx.services.get(AGENT_CONTROL)
        if control is None:
            return ToolResult("Subagents are not available in this session.", True)
        action, ident = params.action, params.ident
        if action == "list":
            return control.listing()
        if action == "wait":
            return control.wait([ident] if ident else [], min(params.timeout, MAX_WAIT), ctx.cancel)
        if not ident:
            return ToolResult(f"`{action}` needs the agent's `id` (`list` shows them).", True)
        if action == "read":
            return control.read(ident)
        if action == "stop":
            return control.stop(ident)
        if action == "merge":
            return control.merge(ident, despite_review=params.despite_review)
        return control.discard(ident)
