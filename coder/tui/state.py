"""What the app's parts share, declared in one place (issue 34: the app was six mixins reading each other's
undeclared attributes). Each part (coder/tui/app.py lists them) owns its own state; what more than one part reads
is here, and the part named beside each field is the one that writes it."""

from __future__ import annotations

import argparse
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coder.frontend.workspace import workspace_of

if TYPE_CHECKING:  # the engine loads in a worker after the first paint; its types are all the app needs here
    from concurrent.futures import Future

    from coder.engine.builder import Opened
    from coder.engine.session import Session
    from coder.frontend.notify import Notifier
    from coder.tui.prompts import ChoicePrompt, PermissionPrompt


@dataclass
class StatusInfo:
    """What the status bar shows besides the mode and the git state (coder/tui/status.py draws it)."""

    model: str = "…"
    sandbox: str = "…"
    tokens: int = 0  # every token of every request, as `/cost` counts them
    cost: float = 0.0
    ctx: int = 0  # the context the next request starts from
    window: int = 0
    state: str = "starting"  # starting | idle | working | interrupting | no session | /command
    streamed: int = 0  # characters of model text streamed in this turn
    retry_until: float = 0.0  # monotonic time a wait before a retried request ends

    def count_usage(self, tokens: int, cost: float, ctx: int, window: int) -> None:
        self.tokens += tokens
        self.cost, self.ctx, self.window = cost, ctx, window


@dataclass
class AppState:
    args: argparse.Namespace | Any  # the parsed `coder` flags (tests pass a namespace of the same fields)
    info: StatusInfo = field(default_factory=StatusInfo)
    opened: Opened | None = None  # SessionControl
    busy: bool = False  # a turn runs (SessionControl)
    queued: list[str] = field(default_factory=list)  # messages sent while busy or starting (SessionControl)
    requeue: bool = False  # the turn was interrupted: queued messages go back into the input (SessionControl)
    work_started: float = 0.0  # when the running turn or command began (SessionControl, CommandRunner)
    question: ChoicePrompt | None = None  # the question on screen (Questions)
    #: what the engine thread (or the opening worker) waiting on a question reads its answer from (Questions)
    answer: Future[Any] | None = None
    asker: str = ""  # the agent whose question waits now ("": the session's own, or none) (Questions)
    reason_for: PermissionPrompt | None = None  # "deny, say why": the next line typed is the reason (Questions)
    folded: int = 0  # blocks folded out of the conversation; Ctrl+T shows them (Transcript)
    #: engine events, a ("replay", events) pair and ("question", request) pairs, from any thread (SessionControl,
    #: Questions); EventFeed drains it
    queue: deque[Any] = field(default_factory=deque)
    shell_calls: set[str] = field(default_factory=set)  # running calls that are shell commands (Transcript)
    agent_costs: list[tuple[str, float]] = field(default_factory=list)  # live cost per running agent (AgentsPart)
    notifier: Notifier | None = None  # the desktop notifier while a session is open (SessionControl)

    @property
    def session(self) -> Session | None:
        return self.opened.session if self.opened is not None else None

    @property
    def workspace(self) -> Path:
        return self.opened.workspace if self.opened is not None else workspace_of(self.args)

    @property
    def asking(self) -> bool:
        """A question waits for the person (the status bar says so)."""
        return self.question is not None

    @property
    def waiting(self) -> bool:
        """The session waits for an answer now (its permission request, the plan question; not an agent's)."""
        return self.answer is not None and not self.answer.done() and not self.asker

    @property
    def running(self) -> bool:
        """A turn or a slash command runs (the status bar's spinner)."""
        return self.busy or self.info.state.startswith("/")
