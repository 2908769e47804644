"""Input helpers of CoderApp: `/command` and `@path` completion, walking the history with Up/Down, and the
Ctrl+R history search. A mixin (see coder/tui/app.py)."""

from __future__ import annotations

from typing import Any

from textual.widgets import TextArea

from coder.engine.options import options_from_args
from coder.tui.common import match_paths, word_at_end
from coder.tui.widgets import CompletionList, PromptInput


class InputHelpers:
    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        box = self.query_one(PromptInput)
        completion = self.query_one(CompletionList)
        text = box.text
        items: list[tuple[str, str]] = []
        kind = ""
        if self.picked is not None and text == self.picked:
            pass  # just taken from the history search: a finished prompt, not something to complete
        elif text.startswith("/") and " " not in text and "\n" not in text:
            from coder.commands.slash import completions

            workspace = self.opened.workspace if self.opened else options_from_args(self.args).cwd
            items = [(f"/{n}", s) for n, s in completions(workspace, text[1:])][:10]
            kind = "command"
            if len(items) == 1 and items[0][0] == text:
                items = []
        else:
            word = word_at_end(text)
            if word.startswith("@"):
                if self.files is None:
                    self.files = []
                    self.run_worker(self._load_files, thread=True, group="files")
                items = [(f"@{p}", "") for p in match_paths(self.files, word[1:])]
                kind = "path"
        if text != self.picked:
            self.picked = None
        completion.show(kind, items)
        box.completion_open = completion.is_open

    def _load_files(self) -> None:
        from coder.tui.common import project_files

        workspace = self.opened.workspace if self.opened else options_from_args(self.args).cwd
        files = project_files(workspace)
        self.call_from_thread(self._files_loaded, files)

    def _files_loaded(self, files: list[str]) -> None:
        self.files = files
        self.on_text_area_changed(None)  # type: ignore[arg-type]

    def on_prompt_input_special(self, message: PromptInput.Special) -> None:
        box = self.query_one(PromptInput)
        completion = self.query_one(CompletionList)
        if message.key in ("pageup", "pagedown", "ctrl+home", "ctrl+end"):
            self.scroll_key(message.key)
            return
        if message.key == "enter":
            self.enter_on_completion(box, completion)
            return
        if message.key == "tab" and not completion.is_open:
            self.focus_prompt_or_next()
            return
        if completion.is_open:
            if message.key in ("up", "down"):
                completion.move(-1 if message.key == "up" else 1)
            elif message.key == "tab":
                self.accept_completion(box, completion)
            return
        entries = self.history.entries
        if message.key == "up" and entries:
            if self.hist_index is None:
                self.draft, self.hist_index = box.text, len(entries)
            self.hist_index = max(0, self.hist_index - 1)
            box.set_text(entries[self.hist_index])
        elif message.key == "down" and self.hist_index is not None:
            self.hist_index += 1
            if self.hist_index >= len(entries):
                self.hist_index = None
                box.set_text(self.draft)
            else:
                box.set_text(entries[self.hist_index])

    def accept_completion(self, box: PromptInput, completion: CompletionList) -> None:
        value = completion.current() or ""
        text = box.text
        cut = len(text) - len(word_at_end(text)) if completion.kind == "path" else 0
        box.set_text(text[:cut] + value + " ")
        completion.close()
        box.completion_open = False

    def enter_on_completion(self, box: PromptInput, completion: CompletionList) -> None:
        """Enter while completions show: a command runs (the highlighted one when the name is not typed out
        whole; a fast `/undo` + Enter runs `/undo`, whatever the list said a moment before); a path is filled in
        (a message is rarely done at its `@path`), and the next Enter sends."""
        text = box.text.strip()
        if completion.kind == "command" and completion.is_open and text.startswith("/") and " " not in text:
            from coder.commands.slash import completions

            names = {f"/{n}" for n, _ in completions(self._workspace(), text[1:])}
            chosen = text if text in names else completion.current() or text
            completion.close()
            box.completion_open = False
            box.post_message(PromptInput.Submitted(chosen, box.text))
        elif completion.kind == "path" and completion.is_open:
            self.accept_completion(box, completion)
        else:
            completion.close()
            box.completion_open = False
            box.post_message(PromptInput.Submitted(box.text))

    def _modal(self) -> Any:
        """The history search or a picker when open: the app's keys are priority bindings, so they reach the app even
        over a modal screen and must hand Esc / Ctrl+R / Ctrl+C to it (or the modal stays up and the next prompt
        typed goes into its filter instead of the input)."""
        from coder.tui.screens import HistorySearch, Picker, TranscriptScreen
        from coder.tui.work_view import PlanScreen  # issue 19: Esc / Ctrl+C on the plan stop the turn

        modals = (HistorySearch, Picker, PlanScreen, TranscriptScreen)
        return self.screen if isinstance(self.screen, modals) else None

    def action_history_search(self) -> None:
        from coder.tui.screens import HistorySearch

        modal = self._modal()
        if modal is not None:
            if hasattr(modal, "action_next"):  # a list moves to its next match; other modals ignore Ctrl+R
                modal.action_next()
            return
        box = self.query_one(PromptInput)

        def chosen(value: str | None) -> None:
            if value is not None:
                self.picked = value  # a whole prompt: Enter sends it, no completion pops up over it
                box.set_text(value)
            self.query_one(CompletionList).close()
            box.completion_open = False
            box.focus()

        self.push_screen(HistorySearch(self.history, box.text), chosen)
