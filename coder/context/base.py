"""The interface between the engine and the context manager.

The engine keeps the full history (every message, persisted). The context manager decides what of it the next
request carries: it returns the request and any compaction it performed, as events the engine persists, so a
resumed session rebuilds the same view with `restore`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from coder.base.events import CompactionEvent, Event
from coder.models.types import Message, ModelRequest, ToolSpec, Usage


@dataclass
class Pinned:
    """What survives every compaction."""

    task: str = ""
    instructions: str = ""  # AGENTS.md / CLAUDE.md text
    plan: str = ""  # the plan the user approved (issue 19: exit_plan, or `coder run --plan-file`)
    files_touched: list[str] = field(default_factory=list)
    last_test_result: str = ""
    #: the task list of the `todo` tool: items {id, text, status}, as the model last wrote it
    todos: list[dict[str, Any]] = field(default_factory=list)

    def todo_text(self) -> str:
        """The task list as Markdown checkboxes ("" when there is none): what a handoff pins."""
        marks = {"done": "[x]", "in_progress": "[~]"}
        return "\n".join(f"- {marks.get(str(i.get('status')), '[ ]')} {i.get('text', '')}"
                         + (" (in progress)" if i.get("status") == "in_progress" else "") for i in self.todos)


@dataclass
class Compaction:
    """One compaction, persisted as an event so `restore` can replay it."""

    #: "truncate" | "images" (issue 35: old images replaced by notes) | "mask" | "summary" | "breaker" (a
    #: compaction that freed too little; not repeated)
    kind: str
    tokens_before: int
    tokens_after: int
    data: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0  # how long it took (a summary's model call; not persisted: nothing to replay)

    def event(self) -> CompactionEvent:
        return CompactionEvent(self.kind, self.tokens_before, self.tokens_after, self.data, round(self.duration_s, 2))


@dataclass
class Prepared:
    request: ModelRequest
    compactions: list[Compaction] = field(default_factory=list)
    tokens: int = 0


class ContextManager(Protocol):
    #: told when a slow step starts (a summary: CompactionStarted), so the user sees it as it happens; the session
    #: sets it to its own `emit`
    on_event: Callable[[Event], None] | None

    def prepare(self, system: str, history: list[Message], tools: list[ToolSpec], pinned: Pinned) -> Prepared:
        """Shape the next request from the full history, compacting when over budget."""
        ...

    def restore(self, compactions: list[Compaction]) -> None:
        """Re-apply persisted compactions after a resume."""
        ...

    def compact_now(self, history: list[Message], pinned: Pinned, focus: str = "") -> Compaction | None:
        """`/compact [focus]`: summarise now."""
        ...

    def force_compaction(self) -> None:
        """The provider raised ContextOverflowError: compact on the next `prepare` whatever the count says."""
        ...

    def record_usage(self, usage: Usage) -> None:
        """Usage of the answer to the last prepared request (calibrates token estimates, tracks cached share)."""
        ...


class PassthroughContext:
    """Sends the whole history; cache breakpoints on the system prompt and the last two messages.

    The real manager (tiers, budgets, summaries) lives in this package and supersedes it."""

    def __init__(self, max_tokens: int = 8192) -> None:
        self.max_tokens = max_tokens
        self.on_event: Callable[[Event], None] | None = None

    def prepare(self, system: str, history: list[Message], tools: list[ToolSpec], pinned: Pinned) -> Prepared:
        breakpoints = sorted({i for i in (len(history) - 1, len(history) - 3) if i >= 0})
        request = ModelRequest(system, list(history), tools, self.max_tokens, True, breakpoints)
        return Prepared(request)

    def restore(self, compactions: list[Compaction]) -> None:
        return None

    def compact_now(self, history: list[Message], pinned: Pinned, focus: str = "") -> Compaction | None:
        return None

    def force_compaction(self) -> None:
        return None

    def record_usage(self, usage: Usage) -> None:
        return None
