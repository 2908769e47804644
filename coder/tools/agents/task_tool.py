"""The `task` tool: hand a self-contained job to a subagent with its own context, tools and budget; only its
final report comes back, so wide searches do not fill the caller's context. With `background: true` the call
returns at once and the agent works while the caller goes on (the `subagents` tool follows it; issue 36).

The child session is made by the engine behind `ctx.services[AGENT_CONTROL]` (coder/tools/agents/control.py),
which keeps imports one way: this tool never imports the engine, and the engine never names this tool. The agent
definitions are the session's, read once when it opened: the same ones class a call here and start the child
there."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.tools.agents.control import AGENT_CONTROL, AgentControl
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
from coder.tools.params import Params, written

DEFAULT_AGENT = "explore"


@dataclass(frozen=True)
class TaskParams(Params):
    """tools/task.json."""

    prompt: str
    description: str | None = None
    agent: str = DEFAULT_AGENT
    background: bool = False


class TaskTool(Tool[TaskParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def permission_for(self, params: TaskParams, ctx: ToolContext) -> PermissionClass:
        """Classed by the agent it would start (`AgentControl.permission`), not by the contract: a `task` is as
        powerful as the most powerful tool its agent may use, in the background or not."""
        control: AgentControl | None = ctx.services.get(AGENT_CONTROL)
        return "read" if control is None else control.permission(params.agent)

    def facts(self, params: TaskParams) -> CallFacts:
        what = params.description or params.prompt
        where = " (background)" if params.background else ""
        return CallFacts(f"{self.contract.name}: {params.agent}{where}: {one_line(what, 70)}",
                         one_line(params.prompt, 600), maskable=self.contract.maskable)

    def claude_call(self, params: TaskParams, cwd: Path) -> ClaudeCall:
        """Claude Code's `Task`: the agent is its `subagent_type`."""
        return ClaudeCall("Task", {"description": params.description or "", "prompt": params.prompt,
                                   "subagent_type": params.agent})

    def from_claude(self, updated: ClaudeCall, params: TaskParams, cwd: Path) -> dict[str, Any]:
        theirs = updated.input
        out = {**written(params), **{k: theirs[k] for k in ("description", "prompt") if k in theirs}}
        if "subagent_type" in theirs:
            out["agent"] = theirs["subagent_type"]
        return out

    def run(self, params: TaskParams, ctx: ToolContext) -> ToolResult:
        control: AgentControl | None = ctx.services.get(AGENT_CONTROL)
        if control is None:
            return ToolResult("Subagents are not available in this session.", True)
        return control.start(params.agent, params.prompt, params.description or "", background=params.background)
