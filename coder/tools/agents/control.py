"""The interface between the tools that start and steer subagents and the engine that runs them.

The `task` tool starts a child session (blocking, or in the background) and the `subagents` tool reads, waits for,
stops, merges and discards background ones; the engine (coder/engine/agents.py) implements this protocol and puts
it in `ctx.services[AGENT_CONTROL]` when the session opens, so the tools never import the engine (imports flow one
way) and the engine never names a tool. Every method returns the `ToolResult` the model reads: the wording of
results lives with the engine that knows the agents, the tools only parse their input.
"""

from __future__ import annotations

import threading
from typing import Protocol

from coder.tools.base import PermissionClass, ToolResult

#: `ctx.services` key of the session's `AgentControl` (absent: the session runs no subagents)
AGENT_CONTROL = "agent_control"


class AgentControl(Protocol):
    def permission(self, agent: str) -> PermissionClass:
        """The permission class of starting `agent` (what its child can do under its own mode); "read" for an
        agent nobody defined: nothing starts, the call only lists the agents there are."""
        ...

    def start(self, agent: str, prompt: str, description: str, *, background: bool) -> ToolResult:
        """Run a child session: to its end (its report is the result), or in the background (the result says
        its id at once; the report comes later)."""
        ...

    def listing(self) -> ToolResult:
        ...

    def read(self, ident: str) -> ToolResult:
        """An agent's state and what it did since the caller last looked; its report once it ended."""
        ...

    def wait(self, idents: list[str], timeout: float, cancel: threading.Event) -> ToolResult:
        """Block until one of `idents` (empty: any running agent) ends, `timeout` passes or `cancel` is set."""
        ...

    def stop(self, ident: str) -> ToolResult:
        ...

    def merge(self, ident: str, *, despite_review: bool = False) -> ToolResult:
        """Review the agent's patch and merge it into the session's work tree (all or nothing; conflicts are
        shown, never resolved)."""
        ...

    def discard(self, ident: str) -> ToolResult:
        ...
