"""The blocks of the conversation view and the input, as Textual widgets.

Kept dumb on purpose: they render what the app hands them; the app owns the session, the event queue and the
decisions. Tool output is capped before it reaches a widget (the full text is in the session store), which is
half of what keeps memory bounded over a long session; the app removes the oldest blocks for the other half.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import ScrollableContainer, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Collapsible, Static, TextArea

from coder.base.termsafe import visible
from coder.tui.common import failure, result_line, tool_title
from coder.tui.permission import PermissionPrompt  # noqa: F401 - where the app's widgets are found

MAX_OUTPUT_LINES = 300
MAX_OUTPUT_CHARS = 20_000
DIFF_OPEN_LINES = 60  # a diff up to this long is shown open; longer ones start collapsed


def shown(text: str) -> Text:
    """Text from the model, a tool or the repository as a widget shows it: control sequences made visible
    (a Rich Text passes ESC to the terminal as it is) and never parsed as markup. Styles go on the Text after."""
    return Text(visible(text))


def shown_title(text: str) -> Content:
    """The same for a Collapsible title, which Textual would otherwise parse as markup: `echo [/x]` would raise a
    MarkupError, and `[@click=app.quit]` would make the title an action link."""
    return Content(visible(text))


def cap_output(text: str) -> str:
    lines = text.splitlines()
    cut = False
    if len(lines) > MAX_OUTPUT_LINES:
        head = MAX_OUTPUT_LINES * 2 // 3
        tail = MAX_OUTPUT_LINES - head
        lines = lines[:head] + [f"… {len(lines) - MAX_OUTPUT_LINES} lines not shown …"] + lines[-tail:]
        cut = True
    out = "\n".join(line if len(line) <= 2000 else line[:2000] + " …" for line in lines)
    if len(out) > MAX_OUTPUT_CHARS:
        out, cut = out[:MAX_OUTPUT_CHARS], True
    return out + ("\n(cut for the screen; `coder sessions show` has the full output)" if cut else "")


class Conversation(VerticalScroll):
    """The scrolling list of blocks. It follows the newest block until the user scrolls up, and follows again
    once they scroll back to the bottom (or send something).

    Following is Textual's anchoring: an anchored container is kept at its bottom by the compositor on every
    layout, so a Markdown table or a diff that gets its height a frame later, or a terminal resize, still ends
    with the newest line on screen (a scroll-after-refresh misses those). Scrolling by the user releases the
    anchor; reaching the bottom again restores it (Widget._check_anchor). The anchor is only set while the
    blocks overflow the view: an anchored view shorter than its container is pushed to the bottom, and a short
    conversation should read from the top.
    """

    def __init__(self) -> None:
        super().__init__(id="conversation")

    @property
    def following(self) -> bool:
        return not self._anchor_released if self.is_anchored else True  # blocks that fit: all seen

    def on_resize(self, event: events.Resize) -> None:
        self._sync_anchor()

    def watch_virtual_size(self, size: object) -> None:
        """The blocks grew or shrank: anchor once they overflow, unanchor once they fit again (after /clear).
        Checked a moment later: the container size of the same layout pass is set after the virtual size."""
        self.call_next(self._sync_anchor)

    def _sync_anchor(self) -> None:
        overflowing = self.max_scroll_y > 0
        if overflowing and not self.is_anchored:
            self.anchor()
        elif not overflowing and self.is_anchored:
            self.anchor(False)
            self._anchor_released = False
            self.scroll_to(y=0, animate=False, immediate=True, release_anchor=False)

    def follow(self, force: bool = False) -> None:
        """Scroll to the end and follow again, even when the user had scrolled up (force); without force the
        anchor already keeps a following view at the bottom, and a reader further up is left alone."""
        if force:
            if self.is_anchored:
                self.scroll_end(animate=False, immediate=False)  # re-anchors a released anchor
            else:
                self.call_after_refresh(self._sync_anchor)


class OutputView(ScrollableContainer):
    """A tool's output: wrapped at the block's width, or, while long lines scroll (/wrap, Alt+Z: the app's
    `nowrap` class, coder/tui/app.py), one line each, scrolled sideways."""

    DEFAULT_CSS = """
    OutputView { height: auto; overflow-x: hidden; overflow-y: hidden; }
    OutputView > Static { width: 1fr; }
    """

    def __init__(self, output: str) -> None:
        super().__init__()
        self.output = output

    def compose(self) -> ComposeResult:
        yield Static(shown(self.output), classes="output")


class UserBlock(Static):
    DEFAULT_CSS = """
    UserBlock { margin: 1 0 0 0; padding: 0 1; background: $boost; color: $text; border-left: thick $accent; }
    """

    def __init__(self, text: str) -> None:
        super().__init__(shown(text))


class NoteBlock(Static):
    """A line from coder itself: errors, checkpoints, command output in plain text."""

    DEFAULT_CSS = """
    NoteBlock { padding: 0 1; color: $text-muted; }
    NoteBlock.error { color: $error; }
    NoteBlock.ok { color: $success; }
    """

    def __init__(self, text: str, kind: str = "") -> None:
        super().__init__(shown(text), classes=kind)


class DiffView(ScrollableContainer):
    """A unified diff, highlighted, scrolling sideways instead of wrapping (a 200-column diff stays readable)."""

    DEFAULT_CSS = """
    DiffView { height: auto; max-height: 40; overflow-x: auto; overflow-y: auto; }
    DiffView > Static { width: auto; }
    """

    def __init__(self, diff: str) -> None:
        super().__init__()
        self.diff = visible(cap_output(diff))

    def compose(self) -> ComposeResult:
        from rich.syntax import Syntax  # pygments' lexers: loaded with the first diff, not at startup

        yield Static(Syntax(self.diff, "diff", theme="ansi_dark", word_wrap=False, background_color="default"))


class ToolBlock(Collapsible):
    """One tool call: a one-line title (the call, then its one-line result) that expands to the full output."""

    DEFAULT_CSS = """
    ToolBlock { margin: 0; padding: 0; border: none; background: transparent; }
    ToolBlock > Contents { padding: 0 0 0 2; }
    ToolBlock.error CollapsibleTitle { color: $error; }
    ToolBlock .output { color: $text-muted; }
    ToolBlock Collapsible.raw { border: none; padding: 0; margin: 0; background: transparent; }
    """

    def __init__(self, call_id: str, tool: str, args: dict) -> None:
        self.call_id = call_id
        self.tool = tool
        self.call_title = tool_title(tool, args)
        self.body: tuple[str, str] | None = None  # (output, diff) not yet turned into widgets
        self.parts = (f"⋯ {self.call_title}", "", "")  # (call, result, duration): the title, fitted to the width
        self.finished = False
        self.ready = False  # composed and mounted: its Contents can take the output widgets
        self.waiting: list[Widget] = []  # output widgets made before the block was ready for them
        self.started = time.monotonic()
        self.tail = ""  # the running command's latest output (its last line shows in the title)
        super().__init__(title=shown_title(f"⋯ {self.call_title}"), collapsed=True)  # type: ignore[arg-type]

    def on_mount(self) -> None:
        self.ready = True
        self._place_body()

    def progress(self, text: str) -> None:
        """Live output of the running call: its last line and the time it has run show in the title (issue 24:
        a long command showed nothing until it ended)."""
        if self.finished:
            return
        self.tail = (self.tail + text)[-4000:]
        lines = [line for line in self.tail.splitlines() if line.strip()]
        if lines:
            took = time.monotonic() - self.started
            self._retitle((f"⋯ {self.call_title}", f"│ {lines[-1].strip()}", f"{took:.0f}s"))

    def note(self, text: str) -> None:
        if not self.finished:  # a late note never hides a result
            self._retitle((f"⋯ {self.call_title}", f"[{text}]", ""))

    def _retitle(self, parts: tuple[str, str, str] | None = None) -> None:
        """The one-line title in the width the block has (coder/tui/fit.py): cut with …, the duration kept."""
        from coder.tui.fit import tool_line

        self.parts = parts or self.parts
        width = self.size.width - 4 if self.size.width else 0  # the ▶ and the padding
        self.title = shown_title(tool_line(*self.parts, width))

    def on_resize(self, event: events.Resize) -> None:
        self._retitle()

    def finish(self, output: str, is_error: bool, duration: float, diff: str = "",
               data: dict[str, Any] | None = None) -> None:
        self.finished = True
        self._retitle((self.call_title, result_line(output, is_error, 0.0, data),
                       f"{duration:.1f}s" if duration >= 0.1 else ""))
        if failure(is_error, data, output) is not None:
            self.add_class("error")
        one_liner = len([line for line in output.splitlines() if line.strip()]) <= 1  # all of it in the title
        self.body = (cap_output(output) if output.strip() and not (diff and one_liner) else "", diff)
        if diff and len(diff.splitlines()) <= DIFF_OPEN_LINES:
            self.collapsed = False
            self._build_body()

    def watch_collapsed(self, collapsed: bool) -> None:
        if not collapsed:
            self._build_body()

    def _build_body(self) -> None:
        """Widgets for the output are made on first expansion only: a collapsed block costs one line of layout
        and no text measuring, which is what keeps a long session fast. With a diff, the diff is what shows; the
        tool's own text (an edit's `cat -n` snippet, which says the same thing again) waits one click further."""
        if self.body is None:
            return
        output, diff = self.body
        self.body = None
        widgets: list[Widget] = []
        if diff:
            widgets.append(DiffView(diff))
        if output and diff:
            lines = len(output.splitlines())
            widgets.append(Collapsible(OutputView(output), collapsed=True,
                                       title=f"tool output ({lines} line{'s' if lines != 1 else ''})",
                                       classes="raw"))
        elif output:
            widgets.append(OutputView(output))
        self.waiting.extend(widgets)
        self._place_body()

    def _place_body(self) -> None:
        """Mount the waiting output once the block is mounted (issue 24, bug 8). A result can come before the
        block is composed, or while it composes; adding to the list `compose` reads lost it in that moment,
        so the output waits here until `on_mount`, when the Contents are surely there."""
        if not self.waiting or not self.ready:
            return
        found = self.query(Collapsible.Contents)
        if found:
            widgets, self.waiting = self.waiting, []
            found.first().mount_all(widgets)


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { dock: bottom; height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    """


class CompletionList(Static):
    """Candidates for `/command` or `@path` above the input; the app moves the highlight and accepts."""

    DEFAULT_CSS = """
    CompletionList { display: none; height: auto; max-height: 10; padding: 0 1; background: $surface;
                     border-top: solid $accent; }
    CompletionList.open { display: block; }
    """

    def __init__(self) -> None:
        super().__init__(id="complete")
        self.items: list[tuple[str, str]] = []  # (value, description)
        self.index = 0
        self.kind = ""  # "command" | "path"

    def show(self, kind: str, items: list[tuple[str, str]]) -> None:
        self.kind, self.items, self.index = kind, items, 0
        self.set_class(bool(items), "open")
        self._draw()

    def close(self) -> None:
        self.items = []
        self.remove_class("open")

    @property
    def is_open(self) -> bool:
        return bool(self.items)

    def move(self, delta: int) -> None:
        if self.items:
            self.index = (self.index + delta) % len(self.items)
            self._draw()

    def current(self) -> str | None:
        return self.items[self.index][0] if self.items else None

    def _draw(self) -> None:
        text = Text()
        for i, (value, desc) in enumerate(self.items):
            style = "reverse" if i == self.index else ""
            text.append(f" {visible(value)} ", style=style)  # a repository's file names and command texts
            if desc:
                text.append(f"  {visible(desc)}", style="dim")
            if i < len(self.items) - 1:
                text.append("\n")
        self.update(text)


PROMPT_PLACEHOLDER = "Ask coder… (Enter sends, Ctrl+J new line, / commands, @ files, Esc back here)"


class PromptInput(TextArea):
    """Multi-line input: Enter sends, Shift+Enter or Ctrl+J adds a line, Up/Down on the first/last line walk
    the history, Tab accepts a completion."""

    DEFAULT_CSS = """
    PromptInput, PromptInput:focus { height: auto; min-height: 2; max-height: 12; padding: 0 1;
                                     border: none; border-top: solid $accent; }
    PromptInput:blur { border-top: solid $panel-lighten-2; }
    """

    class Submitted(Message):
        def __init__(self, text: str, typed: str | None = None) -> None:
            super().__init__()
            self.text = text
            self.typed = text if typed is None else typed  # what the input held (a completion may differ)

    class Special(Message):
        """A key the app decides about (completion navigation, history)."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, **kwargs) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, highlight_cursor_line=False,
                         placeholder=PROMPT_PLACEHOLDER, **kwargs)
        self.completion_open = False
        self.last_edit_at = 0.0

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        if key in ("shift+enter", "ctrl+j", "alt+enter"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if key == "enter" or key == "tab":
            # Tab accepts a completion (or moves to a waiting permission prompt); Enter runs a chosen command
            # (the app decides, from the text as it is now: a fast `/undo` + Enter must run, not complete)
            event.stop()
            event.prevent_default()
            if key == "enter":
                self.post_message(self.Special("enter") if self.completion_open else self.Submitted(self.text))
            else:
                self.post_message(self.Special("tab"))
            return
        if key in ("pageup", "pagedown", "ctrl+home", "ctrl+end"):  # the conversation scrolls from the input
            event.stop()
            event.prevent_default()
            self.post_message(self.Special(key))
            return
        if event.is_printable or key in ("backspace", "delete", "ctrl+u", "ctrl+w"):
            self.last_edit_at = time.monotonic()  # a permission prompt does not take the focus from a typist
        row, _ = self.cursor_location
        if key == "up" and (self.completion_open or row == 0):
            event.stop()
            event.prevent_default()
            self.post_message(self.Special("up"))
            return
        if key == "down" and (self.completion_open or row == self.document.line_count - 1):
            event.stop()
            event.prevent_default()
            self.post_message(self.Special("down"))
            return
        await super()._on_key(event)

    def set_text(self, text: str) -> None:
        self.load_text(text)
        lines = text.split("\n")
        self.move_cursor((len(lines) - 1, len(lines[-1])))
