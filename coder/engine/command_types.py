"""The data of slash commands: what a handler gets (Ctx) and what it returns (CommandResult)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class CommandResult:
    text: str = ""  # Markdown to show
    diff: str = ""  # a unified diff to show highlighted
    error: bool = False
    quit: bool = False
    new_session: bool = False  # /clear: start a fresh session in the same workspace
    resume: str | None = None  # switch to this stored session
    send: str | None = None  # send this as the user's message (custom commands)
    mode: str | None = None  # the permission mode after the command (for the status bar)
    model: str | None = None  # the model after the command


@dataclass
class Command:
    name: str
    summary: str
    usage: str = ""
    handler: Callable[[Ctx, str], CommandResult] | None = None
    custom: Any | None = None  # a CustomCommand
    allowed_tools: list[str] = field(default_factory=list)
    source: str = ""


@dataclass
class Ctx:
    """What a handler gets: the session and, when the frontend has it, the whole `Opened` (store, workspace)."""

    session: Any
    opened: Any | None

    @property
    def workspace(self) -> Path:
        if self.opened is not None:
            return Path(self.opened.workspace)
        return Path(self.session.parts.tool_ctx.workspace)

    @property
    def store(self) -> Any:
        return getattr(self.opened, "store", None)

    @property
    def is_git(self) -> bool:
        return bool(getattr(self.opened, "is_git", self.session.parts.checkpointer is not None))
