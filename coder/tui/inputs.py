"""The input's helpers: `/command` and `@path` completion, walking the history with Up/Down, and the Ctrl+R
history search. A part of the app (coder/tui/app.py)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from textual.app import App

from coder.frontend.history import InputHistory
from coder.frontend.workspace import match_paths, project_files, word_at_end
from coder.tui.part import Part
from coder.tui.screens import HistorySearch
from coder.tui.state import AppState
from coder.tui.widgets import AttachmentChips, CompletionList, PromptInput


class InputAssist(Part):
    def __init__(self, app: App[Any], state: AppState, history: InputHistory) -> None:
        super().__init__(app, state)
        self.history = history
        self.hist_index: int | None = None  # where Up/Down walking the history is (None: at the draft)
        self.draft = ""  # the text typed before walking the history
        self.files: list[str] | None = None  # `@path` candidates, read once in a worker
        #: modules that completion reads, once imported (`loaded`): they load on a thread, not under a key
        self.modules: dict[str, ModuleType | None] = {}
        self.picked: str | None = None  # the prompt last taken from the history search

    @property
    def box(self) -> PromptInput:
        return self.app.query_one(PromptInput)

    @property
    def completion(self) -> CompletionList:
        return self.app.query_one(CompletionList)

    # ---- completion -------------------------------------------------------------------------------------------
    def changed(self) -> None:
        box, completion = self.box, self.completion
        text = box.text
        items: list[tuple[str, str]] = []
        kind = ""
        if self.picked is not None and text == self.picked:
            pass  # just taken from the history search: a finished prompt, not something to complete
        elif text.startswith("/") and " " not in text and "\n" not in text:
            slash = self.loaded("coder.commands.slash")
            items = [] if slash is None else [(f"/{n}", s) for n, s in slash.completions(self.state.workspace,
                                                                                          text[1:])][:10]
            kind = "command"
            if len(items) == 1 and items[0][0] == text:
                items = []
        else:
            word = word_at_end(text)
            if word.startswith("@"):
                if self.files is None:
                    self.files = []
                    self.app.run_worker(self._load_files, thread=True, group="files")
                items = [(f"@{p}", "") for p in match_paths(self.files, word[1:])]
                kind = "path"
        if text != self.picked:
            self.picked = None
        completion.show(kind, items)
        box.completion_open = completion.is_open
        self.app.query_one(AttachmentChips).show(self.attaching(text))

    def attaching(self, text: str) -> list[str]:
        """What the message would attach once sent (coder/engine/mentions.py `named`: by name, nothing read)."""
        if "@" not in text and "/" not in text:
            return []
        mentions = self.loaded("coder.engine.mentions")
        if mentions is None:
            return []
        opened = self.state.opened
        return mentions.named(text, self.state.workspace,
                              opened.session.parts.tool_ctx.cwd if opened is not None else None)

    def loaded(self, name: str) -> ModuleType | None:
        """The module completion needs, or None while it loads: the commands (the session's and the repository's)
        and the engine's mention reader take most of a second to import before the session has loaded them, and
        a key must not wait for that (issue 47: the first `/` froze the input). The first call imports it on a
        thread and completes again when it is in."""
        if name not in self.modules:
            self.modules[name] = None
            self.app.run_worker(lambda: self._import(name), thread=True, group="completion")
        return self.modules[name]

    def _import(self, name: str) -> None:
        module = importlib.import_module(name)  # waits, on this thread, for an import the opening session started
        self.app.call_from_thread(self._imported, name, module)

    def _imported(self, name: str, module: ModuleType) -> None:
        self.modules[name] = module
        self.changed()

    def _load_files(self) -> None:
        files = project_files(self.state.workspace)
        self.app.call_from_thread(self._files_loaded, files)

    def _files_loaded(self, files: list[str]) -> None:
        self.files = files
        self.changed()

    def close_completion(self) -> None:
        close_completion(self.app)

    def accept_completion(self) -> None:
        box, completion = self.box, self.completion
        value = completion.current() or ""
        text = box.text
        cut = len(text) - len(word_at_end(text)) if completion.kind == "path" else 0
        box.set_text(text[:cut] + value + " ")
        self.close_completion()

    def enter_on_completion(self) -> None:
        """Enter while completions show: a command runs (the highlighted one when the name is not typed out
        whole; a fast `/undo` + Enter runs `/undo`, whatever the list said a moment before); a path is filled in
        (a message is rarely done at its `@path`), and the next Enter sends."""
        box, completion = self.box, self.completion
        text = box.text.strip()
        slash = self.modules.get("coder.commands.slash")  # the list of commands is open: they are in
        if completion.kind == "command" and completion.is_open and text.startswith("/") and " " not in text \
                and slash is not None:
            names = {f"/{n}" for n, _ in slash.completions(self.state.workspace, text[1:])}
            chosen = text if text in names else completion.current() or text
            self.close_completion()
            box.send(chosen)
        elif completion.kind == "path" and completion.is_open:
            self.accept_completion()
        else:
            self.close_completion()
            box.send(box.text)

    # ---- keys the input hands over ----------------------------------------------------------------------------
    def special(self, key: str) -> None:
        """Up, Down, Tab and Enter while completions show; Up/Down walk the history otherwise."""
        box, completion = self.box, self.completion
        if key == "enter":
            self.enter_on_completion()
            return
        if completion.is_open:
            if key in ("up", "down"):
                completion.move(-1 if key == "up" else 1)
            elif key == "tab":
                self.accept_completion()
            return
        entries = self.history.entries
        if key == "up" and entries:
            if self.hist_index is None:
                self.draft, self.hist_index = box.text, len(entries)
            self.hist_index = max(0, self.hist_index - 1)
            box.set_text(entries[self.hist_index])
        elif key == "down" and self.hist_index is not None:
            self.hist_index += 1
            if self.hist_index >= len(entries):
                self.hist_index = None
                box.set_text(self.draft)
            else:
                box.set_text(entries[self.hist_index])

    def submitted(self) -> None:
        """A line left the input (PromptInput.send emptied it: keys typed after Enter are the next line's start)."""
        self.close_completion()
        self.hist_index = None

    # ---- Ctrl+R -----------------------------------------------------------------------------------------------
    def history_search(self) -> None:
        box = self.box

        def chosen(value: str | None) -> None:
            if value is not None:
                self.picked = value  # a whole prompt: Enter sends it, no completion pops up over it
                box.set_text(value)
            self.close_completion()
            box.focus()

        self.app.push_screen(HistorySearch(self.history, box.text), chosen)


def close_completion(app: App[Any]) -> None:
    """Close the completion list (Esc in the input does too: coder/tui/keys.py)."""
    app.query_one(CompletionList).close()
    app.query_one(PromptInput).completion_open = False
