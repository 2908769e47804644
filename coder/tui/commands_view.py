"""Slash commands in the app: run one in a worker, render its result, and open the picker a command offers
(`/resume`, `/model` without an argument: a searchable list instead of a 22-character id to type). A mixin of
CoderApp (coder/tui/app.py); the commands themselves are coder/commands', shared with
the plain REPL, which prints the same result's text instead of a picker.
"""

from __future__ import annotations

import time
from typing import Any

from coder.engine.options import options_from_args
from coder.tui.view import markdown_block
from coder.tui.widgets import DiffView, NoteBlock


class CommandActions:
    def run_command(self, line: str) -> None:
        from coder.commands.base import CommandResult
        from coder.commands.slash import parse, run_slash

        name, arg = parse(line)
        if name == "quit":
            self.exit()
            return
        if name == "wrap":  # the app's own display setting: no session needed (coder/tui/keys.py)
            choice = arg.strip().lower()
            if choice not in ("", "on", "off"):
                self.add_block(NoteBlock("/wrap takes on, off or nothing (switch).", "error"))
            else:
                self.set_wrap(choice == "on" or (choice == "" and self.has_class("nowrap")))
            return
        if self.opened is None and name == "model" and arg.strip():
            self.args.model = arg.strip()
            self.open_session(model=arg.strip())
            return
        if self.opened is None and self.info["state"] == "starting":
            self.add_block(NoteBlock(f"/{name} waits for the session to open (a moment).", "error"))
            return
        opened, busy = self.opened, self.busy
        self.add_block(NoteBlock(f"› {line}"))
        if not busy:  # /review and /commit take seconds: the status bar says what runs, with its time
            self.info["state"] = f"/{name}"
            self.work_started = time.monotonic()
            self.refresh_status()

        def work() -> None:
            from coder.commands.slash import run_without_session

            try:
                if opened is None:  # no session (a broken config): /doctor, /model, /help still answer
                    result = run_without_session(self._workspace(), line)
                else:
                    result = run_slash(opened, line, busy=busy)
            except Exception as exc:  # noqa: BLE001 - a command bug is shown, never ends the session
                result = CommandResult(f"/{name} failed: {type(exc).__name__}: {exc}", error=True)
            self.call_from_thread(self.apply_result, result)

        self.run_worker(work, thread=True, group="command")

    def _workspace(self) -> Any:
        return self.opened.workspace if self.opened is not None else options_from_args(self.args).cwd

    def apply_result(self, result: Any) -> None:
        if self.info["state"].startswith("/"):
            self.info["state"] = "idle" if self.opened is not None else "no session"
        if result.model:
            self.info["model"] = result.model
        if result.pick is not None and result.pick[2]:
            self.open_picker(*result.pick)  # the list is the answer: its text is the REPL's
        elif result.text:
            if result.error:
                self.add_block(NoteBlock(result.text, "error"))
            else:
                self.add_block(markdown_block(result.text, "command"))
        if result.diff:
            self.add_block(DiffView(result.diff))
        if result.quit:
            self.exit()
        elif result.new_session:
            self.switch_session(None)
        elif result.resume:
            self.switch_session(result.resume)
        elif result.send:
            self.submit(result.send)
        self.refresh_status()
        self.refresh_git()

    def open_picker(self, command: str, title: str, items: list[tuple[str, str]]) -> None:
        """A searchable list; the chosen value runs `/command VALUE`, as if typed."""
        from coder.tui.screens import Picker

        def chosen(value: str | None) -> None:
            from coder.tui.widgets import PromptInput

            self.query_one(PromptInput).focus()
            if value:
                self.run_command(f"/{command} {value}")

        self.push_screen(Picker(f"{title} (type to filter, Enter picks, Esc cancels):", items), chosen)
