"""What a session is made of and what it gives back: the parts the builder assembles (`SessionParts`, with the
protocols of the checkpointer and the evidence watch it holds), the limits of a turn, a turn's outcome, the running
figures, and the headless answer to a permission question (`no_questions`). The loop that uses them is
coder/engine/session.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from coder.base import events as ev
from coder.context.base import ContextManager, Pinned
from coder.engine.hook_steps import Hooks
from coder.models.types import ModelProvider
from coder.policy.base import PermissionAnswer, PermissionPolicy
from coder.stuck.guard import StuckGuard
from coder.tools.base import Tool, ToolContext

if TYPE_CHECKING:
    from coder.evidence.record import Evidence
    from coder.vcs.checkpoints import Checkpoint, RestoreResult
    from coder.vcs.repo import Repo
    from coder.vcs.restore_plan import RestorePlan

AskHandler = Callable[[ev.PermissionRequest], PermissionAnswer]


class Checkpointer(Protocol):
    """Snapshots of the working tree (coder/vcs). `snapshot` returns None when nothing changed; the rest is what
    /undo and /rewind use (coder/commands), declared here so they need no more than the session's parts."""

    def snapshot(self, label: str) -> Checkpoint | None: ...

    def list(self) -> list[Checkpoint]: ...

    def get(self, checkpoint_id: int | str) -> Checkpoint: ...

    def restore(self, checkpoint_id: int | str, force: bool = False) -> RestoreResult: ...

    def undo(self, force: bool = False) -> RestoreResult: ...

    def plan(self, checkpoint_id: int) -> RestorePlan: ...

    def current(self) -> Checkpoint | None: ...

    def delete_all(self) -> None: ...


class EvidenceWatch(Protocol):
    """The evidence of the session's changes (coder/engine/verify.py, issue 49): fed every event; asked once the
    model would end its turn (a note for the model, or None) and when the turn has ended (its record, or None)."""

    def observe(self, event: ev.Event) -> None: ...

    def before_end(self, parts: SessionParts) -> ev.VerifyNudge | None: ...

    def end_turn(self, final_text: str) -> Evidence | None: ...

    def current(self) -> Evidence | None: ...


@dataclass
class Limits:
    """`max_turns` (model requests) and `max_wall_time` (seconds) hold for each user turn, so an interactive
    session left open for hours keeps working; `max_cost` (USD) is the budget of the whole session."""

    max_turns: int = 100
    max_cost: float = 10.0
    max_wall_time: float = 3600.0


@dataclass
class TurnOutcome:
    reason: str  # done | max_turns | max_cost | wall_time | interrupted | error | stuck | hook
    final_text: str = ""
    error: str | None = None
    exit_code: int = 1  # for reason "error": 2 when the API refused the configuration (key, model)
    evidence: dict[str, Any] | None = None  # the turn's evidence record (coder/evidence), when it changed code


@dataclass
class SessionParts:
    session_id: str
    provider: ModelProvider
    tools: dict[str, Tool]
    policy: PermissionPolicy
    context: ContextManager
    tool_ctx: ToolContext
    system_prompt: str
    pinned: Pinned
    limits: Limits
    record: Callable[[ev.Event], None]  # persists (the store) and forwards to the frontend
    ask: AskHandler
    checkpointer: Checkpointer | None = None
    #: the repository the session works in (coder/vcs/repo.py), opened once by the builder; None outside one
    repo: Repo | None = None
    hooks: Hooks | None = None
    max_tokens: int = 8192
    thinking_budget: int | None = None
    #: the stuck detector (coder/stuck, issue 22); None: the defaults, warning only (the builder passes the
    #: configured one: it stops headless runs)
    stuck: StuckGuard | None = None
    #: what the model should hear of work that ran beside it (background subagents that ended, issue 36): asked
    #: after each step, the text is appended to the step's last tool result; empty: nothing new
    news: Callable[[], str] | None = None
    #: called first when the session closes (stopping background agents)
    on_close: list[Callable[[], None]] = field(default_factory=list)
    #: the evidence that the session's changes work (issue 49); None: not tracked
    evidence: EvidenceWatch | None = None


@dataclass
class SessionStats:
    turns: int = 0  # model requests
    cost_usd: float = 0.0
    cost_known: bool = True  # False once a model without a price answered: --max-cost cannot hold
    files_changed: set[str] = field(default_factory=set)
    turn_started: float = field(default_factory=time.monotonic)  # the current user turn's start
    turn_first_request: int = 0  # stats.turns when the current user turn started



def no_questions(request: ev.PermissionRequest) -> PermissionAnswer:
    """The headless answer to `ask`: deny, never block. The model reads why; a call no rule can allow (a protected
    path: the policy offers no rule for it) gets no hint to allow it."""
    why = f": {request.reason}" if request.reason else ""
    hint = (" (allow it with --allow or a [permissions] rule, or use --permission-mode auto)"
            if request.suggested_rule else "")
    return PermissionAnswer(False, message=f"headless run, and the policy asks for approval that nobody can give"
                            f"{why}{hint}")

