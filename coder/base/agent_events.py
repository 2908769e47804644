"""The events of subagents (issue 36): one started, its state as it changes, how it ended, what became of its
patch, what the parent model was told of them, and a child's own events passed up as they happen. Part of the
catalogue of coder/base/events.py, which imports them (frontends read them as `events.AgentStarted`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from coder.base.event_base import Event


@dataclass
class AgentStarted(Event):
    """A subagent started (issue 36): `ident` names it in this session ("a1"), `session_id` is its own stored
    session; `background` when the parent goes on meanwhile; `worktree` the isolated tree it writes in, if any."""

    type: ClassVar[str] = "agent_started"
    ident: str
    agent: str
    description: str
    session_id: str
    background: bool
    by: str = "model"  # model | user (a slash command)
    worktree: str = ""
    base: str = ""  # the commit its isolated tree started from


#: the states of a subagent that has not ended (`AgentUpdate.state`); the others are how it ended
AGENT_LIVE = ("queued", "running")


@dataclass
class AgentUpdate(Event):
    """A subagent's state, as it changes (for views and the status bar; not persisted: `AgentEnded` is). `waiting`
    says what it waits on now: the model, a tool call, a permission answer, a free slot. `session_cost_usd` is the
    whole session's spend, its agents' included."""

    type: ClassVar[str] = "agent_update"
    persist: ClassVar[bool] = False
    ident: str
    state: str  # queued | running | done | error | max_turns | max_cost | wall_time | stuck | stopped
    turns: int
    cost_usd: float
    input_tokens: int
    output_tokens: int
    elapsed_s: float
    waiting: str = ""
    session_cost_usd: float = 0.0


@dataclass
class AgentEnded(Event):
    type: ClassVar[str] = "agent_ended"
    ident: str
    state: str
    turns: int
    cost_usd: float
    report: str = ""
    error: str = ""
    files: list[str] = field(default_factory=list)  # what it changed in its isolated tree
    result: str = ""  # the commit of its isolated tree's result (in the user's repository)


@dataclass
class AgentMerged(Event):
    """What became of an isolated agent's patch: merged, conflict (nothing written), review_failed (nothing
    written), nothing (it changed nothing) or discarded."""

    type: ClassVar[str] = "agent_merged"
    ident: str
    outcome: str
    files: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    verdict: str = ""


@dataclass
class AgentNews(Event):
    """What the parent model was told of its agents (their ends, their reports), appended to the result of tool
    call `tool_id` (as a stuck nudge is): persisted so a resumed session reads what the model read."""

    type: ClassVar[str] = "agent_news"
    tool_id: str
    note: str


@dataclass
class AgentRelay(Event):
    """An event of subagent `ident`, passed to the frontends as it happens (its own session stores it): the
    dict form is the child's event with `agent_id` added, so `stream-json` carries every agent's events tagged."""

    type: ClassVar[str] = "agent_relay"
    persist: ClassVar[bool] = False
    ident: str
    event: Event

    def to_dict(self) -> dict[str, Any]:
        return {**self.event.to_dict(), "agent_id": self.ident}
