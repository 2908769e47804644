"""The app's frame around the blocks: the scrolling conversation, the status bar, the completion list and the input.

Kept dumb on purpose, like the blocks (coder/tui/blocks.py): the app's parts decide, these draw and report keys.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Static, TextArea

from coder.base.termsafe import visible
from coder.tui.history import History


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

    def compose(self) -> ComposeResult:
        yield History()  # the folded blocks' lines; the blocks are mounted after it (coder/tui/transcript.py)

    @property
    def history(self) -> History:
        return self.query_one(History)

    @property
    def blocks(self) -> list[Widget]:
        """The mounted blocks (an expanded call's output included), without the history above them."""
        return [c for c in self.children if not isinstance(c, History)]

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


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { dock: bottom; height: 1; padding: 0 1; background: $panel; color: $text-muted; }
    """


class AttachmentChips(Static):
    """Under the input, what the message would attach once sent (`@path`, a dropped or pasted image's path), one
    chip each (issue 47: nothing showed until the message was sent)."""

    DEFAULT_CSS = """
    AttachmentChips { display: none; height: auto; padding: 0 1; color: $text-muted; }
    AttachmentChips.shown { display: block; }
    """

    def __init__(self) -> None:
        super().__init__(id="chips")
        self.labels: list[str] = []

    def show(self, labels: list[str]) -> None:
        if labels == self.labels:
            return
        self.labels = labels
        self.set_class(bool(labels), "shown")
        self.update(Text("attaching: " + "  ".join(f"[{visible(label)}]" for label in labels)) if labels else "")


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


NEW_LINE_KEYS = ("shift+enter", "ctrl+j", "alt+enter")  # a new line in the message; Enter sends it
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
        """A message or a command left the input (`send`)."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

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
        if key in NEW_LINE_KEYS:
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
                if self.completion_open:
                    self.post_message(self.Special("enter"))
                else:
                    self.send(self.text)
            else:
                self.post_message(self.Special("tab"))
            return
        if key in ("pageup", "pagedown", "ctrl+home", "ctrl+end"):  # the conversation scrolls from the input
            event.stop()
            event.prevent_default()
            self.post_message(self.Special(key))
            return
        if event.is_printable or key in ("backspace", "delete", "ctrl+u", "ctrl+w"):
            self.last_edit_at = time.monotonic()  # a question does not take the focus from a typist
        if not event.is_printable and key in self._bindings.key_to_bindings and key not in ("up", "down"):
            # the input's own editing keys (Ctrl+U, Ctrl+W, Ctrl+K, arrows, Home, End) act now, in turn with the
            # keys around them: as bindings they ran after a burst typed behind them (issue 32: Ctrl+U, then
            # `/undo` and Enter at once, sent the old draft with `/undo` glued to it to the model)
            event.stop()
            event.prevent_default()
            await self.run_action(self._bindings.key_to_bindings[key][0].action)
            return
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

    def send(self, text: str) -> None:
        """`text` leaves the input now, which is empty at once: what is typed next, however soon, is the next
        message (issue 47: `a`, Enter, `b`, Enter typed in one burst sent `a` and then `ab`)."""
        self.load_text("")
        self.post_message(self.Submitted(text))

    def set_text(self, text: str) -> None:
        self.load_text(text)
        lines = text.split("\n")
        self.move_cursor((len(lines) - 1, len(lines[-1])))
