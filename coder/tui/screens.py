"""Modal lists: `Picker` picks a command's argument (`/resume`, `/model`) from a searchable list; Ctrl+R's
`HistorySearch` is a picker over the input history (of every session) that puts the chosen prompt back."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from coder.base.termsafe import visible
from coder.frontend.calls import one_line
from coder.frontend.history import InputHistory


class Picker(ModalScreen[str | None]):
    """Type to filter (every word must occur), Up/Down or Ctrl+R to move, Enter picks, Esc cancels."""

    DEFAULT_CSS = """
    Picker { align: center bottom; }
    Picker > Vertical { width: 100%; height: auto; max-height: 80%; border: round $accent; background: $surface;
                        padding: 0 1; }
    Picker OptionList { height: auto; max-height: 20; }
    """
    BINDINGS = [Binding("escape", "dismiss_none", "cancel"), Binding("ctrl+r", "next", "next match"),
                Binding("down", "move(1)", show=False), Binding("up", "move(-1)", show=False)]

    def __init__(self, title: str, items: list[tuple[str, str]], needle: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.items = items  # (value, label)
        self.needle = needle
        self.matches: list[tuple[str, str]] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Content(visible(self.title_text)))
            yield Input(value=self.needle, placeholder="type to filter", id="filter")
            yield OptionList(id="choices")

    def on_mount(self) -> None:
        self._fill(self.needle)
        self.query_one(Input).focus()

    def candidates(self, needle: str) -> list[tuple[str, str]]:
        words = needle.lower().split()
        return [(v, label) for v, label in self.items if all(w in label.lower() for w in words)]

    def _fill(self, needle: str) -> None:
        self.matches = self.candidates(needle)
        options = self.query_one(OptionList)
        options.clear_options()
        # literal (an Option's str is markup) and with control characters shown: labels hold pasted text
        options.add_options([Option(Content(visible(one_line(label, 160)))) for _, label in self.matches])
        if self.matches:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self._fill(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        index = self.query_one(OptionList).highlighted
        self.dismiss(self.matches[index][0] if self.matches and index is not None else None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.matches[event.option_index][0])

    def action_move(self, delta: int) -> None:
        options = self.query_one(OptionList)
        if self.matches:
            options.highlighted = ((options.highlighted or 0) + delta) % len(self.matches)

    def action_next(self) -> None:
        self.action_move(1)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class HistorySearch(Picker):
    """Ctrl+R: the input history, newest first, matched as `InputHistory.search` does."""

    def __init__(self, history: InputHistory, needle: str = "") -> None:
        super().__init__("History search (Enter picks, Esc cancels, Ctrl+R next):", [], needle)
        self.history = history

    def candidates(self, needle: str) -> list[tuple[str, str]]:
        return [(m, m) for m in self.history.search(needle)]


class TranscriptScreen(ModalScreen[None]):
    """Ctrl+T: the whole session as a Markdown transcript (coder/engine/transcript.py, from the store), read-only,
    scrolled and searched with the keyboard or the mouse, and copied from. The conversation keeps only its
    newest blocks mounted (memory stays bounded over thousands of tool calls); the folded ones are here, built
    only while this screen is open. A TextArea draws only the lines on screen, so a long session opens fast."""

    DEFAULT_CSS = """
    TranscriptScreen { align: center middle; }
    TranscriptScreen > Vertical { width: 100%; height: 100%; border: round $accent; background: $surface; }
    TranscriptScreen TextArea { height: 1fr; border: none; }
    """
    BINDINGS = [Binding("escape", "dismiss_none", "close")]

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        from textual.widgets import TextArea

        with Vertical():
            yield Static(Content("The whole session (Esc closes; PageUp/PageDown, Home/End, the mouse scroll; "
                                 "select to copy):"))
            yield TextArea(visible(self.text), read_only=True, soft_wrap=True, id="transcript")

    def on_mount(self) -> None:
        from textual.widgets import TextArea

        area = self.query_one(TextArea)
        area.focus()
        area.move_cursor(area.document.end)  # the newest part first, as in the conversation
        area.scroll_cursor_visible()

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
