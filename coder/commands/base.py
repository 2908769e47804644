"""The data of slash commands: what a handler gets (Ctx) and what it returns (CommandResult).

Handlers are typed against the engine's public objects (`Session`, and `Opened` when the frontend has it), so a
command reads the session the way a frontend would and the engine never has to know that commands exist."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from coder.commands.custom import CustomCommand
from coder.config.sections import Config
from coder.engine.session import Session

if TYPE_CHECKING:  # the builder pulls in the store and the config; completion does not need them
    from coder.engine.builder import Opened
    from coder.store.db import SessionStore


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
    #: (command, title, [(value, label)]): the app offers a searchable list and runs `/command VALUE` with the
    #: choice; the REPL prints `text` instead
    pick: tuple[str, str, list[tuple[str, str]]] | None = None


@dataclass
class Command:
    name: str
    summary: str
    usage: str = ""
    handler: Callable[[Ctx, str], CommandResult] | None = None
    custom: CustomCommand | None = None  # set for a custom command (handler None)
    allowed_tools: list[str] = field(default_factory=list)
    source: str = ""


@dataclass
class Ctx:
    """What a handler gets: the session and, when the frontend has it, the whole `Opened` (store, config,
    workspace); `commands` is every command of this workspace (what `/help` lists), found once per line."""

    session: Session
    opened: Opened | None
    commands: dict[str, Command] = field(default_factory=dict)

    @property
    def workspace(self) -> Path:
        if self.opened is not None:
            return Path(self.opened.workspace)
        return Path(self.session.parts.tool_ctx.workspace)

    @property
    def store(self) -> SessionStore | None:
        return self.opened.store if self.opened is not None else None

    @property
    def config(self) -> Config:
        """The session's configuration; a bare Session (no `Opened`) gets the defaults, as it always did."""
        return self.opened.config if self.opened is not None else Config()

    @property
    def is_git(self) -> bool:
        if self.opened is not None:
            return self.opened.is_git
        return self.session.parts.checkpointer is not None
