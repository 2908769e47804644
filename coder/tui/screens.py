"""Ctrl+R: search the input history (of every session) and put the chosen prompt back in the input."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from coder.termsafe import visible
from coder.tui.common import InputHistory, one_line


class HistorySearch(ModalScreen[str | None]):
    DEFAULT_CSS = """
    HistorySearch { align: center bottom; }
    HistorySearch > Vertical { width: 100%; height: auto; max-height: 70%; border: round $accent;
                               background: $surface; padding: 0 1; }
    HistorySearch OptionList { height: auto; max-height: 20; }
    """
    BINDINGS = [Binding("escape", "dismiss_none", "cancel"), Binding("ctrl+r", "next", "older match")]

    def __init__(self, history: InputHistory, needle: str = "") -> None:
        super().__init__()
        self.history = history
        self.needle = needle
        self.matches: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("History search (Enter picks, Esc cancels, Ctrl+R next):")
            yield Input(value=self.needle, placeholder="type to filter", id="needle")
            yield OptionList(id="matches")

    def on_mount(self) -> None:
        self._fill(self.needle)
        self.query_one(Input).focus()

    def _fill(self, needle: str) -> None:
        self.matches = self.history.search(needle)
        options = self.query_one(OptionList)
        options.clear_options()
        # literal (an Option's str is markup) and with control characters shown: history can hold pasted text
        options.add_options([Option(Content(visible(one_line(m, 160)))) for m in self.matches])
        if self.matches:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        index = self.query_one(OptionList).highlighted
        self.dismiss(self.matches[index] if self.matches and index is not None else None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.matches[event.option_index])

    def action_next(self) -> None:
        options = self.query_one(OptionList)
        if self.matches:
            options.highlighted = ((options.highlighted or 0) + 1) % len(self.matches)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
