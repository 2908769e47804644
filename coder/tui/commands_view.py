"""Slash commands in the app: run one in a worker, render its result, and open the picker a command offers
(`/resume`, `/model` without an argument: a searchable list instead of a 22-character id to type). A part of the
app (coder/tui/app.py); the commands themselves are coder/commands', shared with the plain REPL, which prints the
same result's text instead of a picker.
"""

from __future__ import annotations

import time
from typing import Any

from textual.app import App
from textual.widget import Widget

from coder.commands.line import parse
from coder.tui.blocks import DiffView, markdown_block
from coder.tui.messages import CommandDone, Note, OpenSession, SetWrap, StatusChanged, Submit, SwitchSession
from coder.tui.part import Part
from coder.tui.screens import Picker
from coder.tui.state import AppState
from coder.tui.widgets import PromptInput


class CommandRunner(Part):
    """What a command changes of the session goes up as a message (OpenSession, SwitchSession, Submit, SetWrap);
    its text and blocks too (Note, AddBlock), after the events it caused (CommandDone: the app drains first)."""

    def __init__(self, app: App[Any], state: AppState) -> None:
        super().__init__(app, state)

    def run(self, line: str) -> None:
        state = self.state
        name, arg = parse(line)
        if name == "quit":
            self.app.exit()
            return
        if name == "wrap":  # the app's own display setting: no session needed (coder/tui/keys.py)
            choice = arg.strip().lower()
            if choice not in ("", "on", "off"):
                self.app.post_message(Note("/wrap takes on, off or nothing (switch).", "error"))
            else:
                self.app.post_message(SetWrap(choice == "on" or (choice == "" and self.app.has_class("nowrap"))))
            return
        if state.opened is None and name == "model" and arg.strip():
            state.args.model = arg.strip()
            self.app.post_message(OpenSession({"model": arg.strip()}))
            return
        if state.opened is None and state.info.state == "starting":
            self.app.post_message(Submit(line))  # queued with what is typed, run once the session is open
            return
        # lazy: the commands' imports come after the first paint (a command typed before then was queued above)
        from coder.commands.base import CommandResult
        from coder.commands.slash import run_slash, run_without_session

        opened, busy, workspace = state.opened, state.busy, state.workspace
        self.app.post_message(Note(f"› {line}"))
        if not busy:  # /review and /commit take seconds: the status bar says what runs, with its time
            state.info.state = f"/{name}"
            state.work_started = time.monotonic()
            self.app.post_message(StatusChanged())

        def work() -> None:
            try:
                if opened is None:  # no session (a broken config): /doctor, /model, /help still answer
                    result = run_without_session(workspace, line)
                else:
                    result = run_slash(opened, line, busy=busy)
            except Exception as exc:  # noqa: BLE001 - a command bug is shown, never ends the session
                result = CommandResult(f"/{name} failed: {type(exc).__name__}: {exc}", error=True)
            self.app.post_message(CommandDone(name, result))

        self.app.run_worker(work, thread=True, group="command")

    def apply(self, name: str, result: Any) -> list[Widget]:
        """The command's result: the blocks the app adds to the conversation, after the events the command caused
        (a review's stages, the verdict, the commit: they were in the feed's queue still, and the app drained them
        first; issue 32: /commit's findings came first)."""
        state, post = self.state, self.app.post_message
        blocks: list[Widget] = []
        if state.info.state.startswith("/"):
            state.info.state = "idle" if state.opened is not None else "no session"
        if result.model:
            state.info.model = result.model
        if result.pick is not None and result.pick[2]:
            self.open_picker(*result.pick)  # the list is the answer: its text is the REPL's
        elif result.text:  # Markdown (a failing /commit lists its findings): drawn, and marked when it failed
            block = markdown_block(result.text, "command")
            block.set_class(result.error, "error")
            blocks.append(block)
        if result.diff:
            blocks.append(DiffView(result.diff))
        if result.quit:
            self.app.exit()
        elif result.new_session:
            post(SwitchSession(None))
        elif result.resume:
            post(SwitchSession(result.resume))
        elif result.send:
            post(Submit(result.send))
        post(StatusChanged(git=True))
        return blocks

    def open_picker(self, command: str, title: str, items: list[tuple[str, str]]) -> None:
        """A searchable list; the chosen value runs `/command VALUE`, as if typed."""

        def chosen(value: str | None) -> None:
            self.app.query_one(PromptInput).focus()
            if value:
                self.run(f"/{command} {value}")

        self.app.push_screen(Picker(f"{title} (type to filter, Enter picks, Esc cancels):", items), chosen)
