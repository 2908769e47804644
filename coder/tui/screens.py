"""Modal lists: `Picker` picks a command's argument (`/resume`, `/model`) from a searchable list; Ctrl+R's
`HistorySearch` is a picker over the input history (of every session) that puts the chosen prompt back."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.geometry import Size
from textual.screen import ModalScreen
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
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


class TranscriptView(ScrollView, can_focus=True):
    """A long transcript, read-only, drawn one screen of lines at a time (issue 32: a TextArea measured and wrapped
    all of a 2,000-call transcript before it showed a line, 1.8 s). Each line is styled segments
    (coder/tui/session_text.py: the words rendered, issue 47); lines keep their shape and scroll sideways; the
    mouse selects and Ctrl+C copies, as in the conversation."""

    ALLOW_SELECT = True
    DEFAULT_CSS = "TranscriptView { height: 1fr; overflow: auto; }"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "scroll_up", show=False), Binding("down", "scroll_down", show=False),
        Binding("left", "scroll_left", show=False), Binding("right", "scroll_right", show=False),
        Binding("pageup", "page_up", show=False), Binding("pagedown", "page_down", show=False),
        Binding("home", "scroll_home", show=False), Binding("end", "scroll_end", show=False)]

    def __init__(self) -> None:
        super().__init__(id="transcript")
        self.lines: list[list[Segment]] = []
        self.texts: list[str] = []  # each line's text: widths and selections

    def show(self, lines: list[list[Segment]]) -> None:
        """The lines come safe to draw (their text made visible where it was built)."""
        self.lines = lines
        self.texts = ["".join(segment.text for segment in line) for line in lines]
        # exactly the widest line: any more and lines that fit drew a needless scrollbar (the trial's stray `▋`)
        self.virtual_size = Size(max(map(cell_len, self.texts), default=0), len(self.lines))
        self.refresh()

    def say(self, text: str) -> None:
        self.show([[Segment(text)]])

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        style = self.rich_style
        if index >= len(self.lines):
            return Strip.blank(width, style)
        text = Text.assemble(*((s.text, s.style or "") for s in self.lines[index]), style=style, no_wrap=True)
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(index)) is not None:
            start, end = span
            text.stylize(self.screen.get_component_rich_style("screen--selection"), start,
                         len(text.plain) if end == -1 else end)
        strip = Strip(text.render(self.app.console), cell_len(self.texts[index]))
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, index)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract("\n".join(self.texts)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()


#: the newest events Ctrl+T draws before the whole session (a screen's worth and more)
FIRST_EVENTS = 200


class TranscriptScreen(ModalScreen[None]):
    """Ctrl+T: the whole session as a Markdown transcript (coder/commands/transcript.py, from the store), read-only,
    scrolled with the keyboard or the mouse, and copied from. The conversation keeps only its newest blocks
    mounted (memory stays bounded over thousands of tool calls); the folded ones are here, built only while this
    screen is open: read in a worker, drawn a screen at a time."""

    DEFAULT_CSS = """
    TranscriptScreen { align: center middle; }
    TranscriptScreen > Vertical { width: 100%; height: 100%; border: round $accent; background: $surface; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "close")]

    def __init__(self, read: Callable[[int | None, int], list[list[Segment]]]) -> None:
        """`read(last, width)` builds the lines of the session's newest `last` events (None: all of them) at
        `width`; it runs in a worker thread."""
        super().__init__()
        self.read = read
        self.lines: list[list[Segment]] = []
        self.complete = False  # the whole session is shown, not only its end
        self.placed = False  # the text shown was scrolled to its place

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Content("The whole session (Esc closes; PageUp/PageDown, Home/End, the mouse scroll; "
                                 "select to copy):"))
            yield TranscriptView()

    def on_mount(self) -> None:
        view = self.query_one(TranscriptView)
        view.say("reading the session…")
        view.focus()
        width = max(self.app.size.width - 6, 40)  # the border and the scroll bar
        self.run_worker(lambda: self._read(width), thread=True)

    def _read(self, width: int) -> None:
        """The end first (what is on screen when it opens), then the whole session: building 2,000 calls' text
        costs ~0.2 s of CPU, and the end is what the user looks at first (issue 32, round 3)."""
        self.app.call_from_thread(self._loaded, self.read(FIRST_EVENTS, width), False)
        self.app.call_from_thread(self._loaded, self.read(None, width), True)

    def _loaded(self, lines: list[list[Segment]], complete: bool) -> None:
        view = self.query_one(TranscriptView)
        from_end = view.max_scroll_y - view.scroll_y if self.placed else 0  # where a reader of the end part is
        self.lines, self.complete, self.placed = lines, complete, False
        view.show(lines)

        def place() -> None:
            """The newest part first, as in the conversation (once the new size is laid out: it scrolls that far);
            the whole text keeps a reader of the end part where they were, counted from the end."""
            view.scroll_to(y=max(view.max_scroll_y - from_end, 0), animate=False, immediate=True)
            self.placed = True

        self.call_after_refresh(place)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
