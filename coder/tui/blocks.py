"""The blocks of the conversation, as Textual widgets: the person's message, coder's notes, the model's text and one
line per tool call.

What keeps a long session fast (issue 32: 2,000 tool calls took 7.5 times as long in the app as headless): the
compositor lays out every mounted widget on every frame, and a container is measured again each time while a plain
widget's height is cached. So the common blocks are single, plain widgets: a tool call is one line (`ToolBlock`)
whose output becomes widgets only when it is expanded (`ToolBody`, mounted after it); the model's text is a
`TextBlock` unless it uses Markdown, which gets the Markdown widget. Output is capped before it reaches a widget
(the full text is in the session store).

Kept dumb on purpose: they render what they are handed; the app's parts own the session and the decisions.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import ScrollableContainer, Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from coder.base.termsafe import visible
from coder.frontend.calls import failure, result_line
from coder.tui.fit import tool_line

if TYPE_CHECKING:  # markdown-it loads with the first Markdown block (`markdown_block`), not at start-up
    from textual.widgets import Markdown

MAX_OUTPUT_LINES = 300
MAX_OUTPUT_CHARS = 20_000
DIFF_OPEN_LINES = 60  # a diff up to this long is shown open; longer ones start collapsed
#: Markdown the model's text may use: a plain sentence is drawn as plain text (one widget, measured once)
_MARKDOWN = re.compile(r"[*_`\[\]<>|#~\\]|^\s*(\d+[.)]\s|[-+]\s)|^\s*$", re.MULTILINE)


def shown(text: str) -> Text:
    """Text from the model, a tool or the repository as a widget shows it: control sequences made visible
    (a Rich Text passes ESC to the terminal as it is) and never parsed as markup. Styles go on the Text after."""
    return Text(visible(text))


def shown_title(text: str) -> Content:
    """The same for a line Textual would otherwise parse as markup: `echo [/x]` would raise a MarkupError, and
    `[@click=app.quit]` would make the line an action link."""
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


class TextBlock(Static):
    """The model's text when it uses no Markdown: drawn as the Markdown widget would draw its paragraph, in one
    plain widget."""

    DEFAULT_CSS = "TextBlock { margin: 1 0 0 0; padding: 0 1 1 1; }"  # the paragraph's blank line, as Markdown

    def __init__(self, text: str) -> None:
        super().__init__(shown(text.strip()))
        self.source = text


#: the Markdown blocks' CSS, by kind: `AssistantBlock` (the model's text), `CommandBlock` (a command's result)
_MARKDOWN_CSS = {
    "AssistantBlock": "AssistantBlock { margin: 1 0 0 0; padding: 0 1; }",
    "CommandBlock": "CommandBlock { margin: 1 0 0 0; padding: 0 1; border-left: thick $secondary; } "
                    "CommandBlock.error { border-left: thick $error; }",
}
_markdown_classes: dict[str, type[Markdown]] = {}


def markdown_block(text: str = "", kind: str = "assistant") -> Markdown:
    """A Markdown widget (compact tables: no rule between rows, so a 20-row /help fits a screen), its class made on
    first use: markdown-it is not needed for the first paint. The text (the model's, or a command's output quoting
    files) has its control sequences made visible: Textual would pass them to the terminal."""
    name = "AssistantBlock" if kind == "assistant" else "CommandBlock"
    if name not in _markdown_classes:
        from textual.widgets import Markdown  # lazy: see above

        css = _MARKDOWN_CSS[name] + f" {name} MarkdownTableContent {{ grid-gutter: 0 1; keyline: none; }}"
        _markdown_classes[name] = type(name, (Markdown,), {"DEFAULT_CSS": css})
    return _markdown_classes[name](visible(text))


def uses_markdown(text: str) -> bool:
    """Whether the model's text uses any Markdown (then it is rendered, else shown as it is)."""
    return bool(_MARKDOWN.search(text.strip()))


def assistant_block(text: str) -> Widget:
    """The model's finished text: Markdown when it uses any, else a plain TextBlock."""
    return markdown_block(text) if uses_markdown(text) else TextBlock(text)


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
        from rich.syntax import Syntax  # lazy: pygments' lexers load with the first diff, not at start-up

        yield Static(Syntax(self.diff, "diff", theme="ansi_dark", word_wrap=False, background_color="default"))


class ToolBody(Vertical):
    """An expanded tool call's output, mounted right after its line. With a diff, the diff is what shows; the
    tool's own text (an edit's `cat -n` snippet, which says the same thing again) waits one click further."""

    DEFAULT_CSS = """
    ToolBody { height: auto; padding: 0 0 0 2; }
    ToolBody .output { color: $text-muted; }
    ToolBody Collapsible.raw { border: none; padding: 0; margin: 0; background: transparent; }
    """

    def __init__(self, output: str, diff: str) -> None:
        super().__init__()
        self.output = output
        self.diff = diff

    def compose(self) -> ComposeResult:
        if self.diff:
            yield DiffView(self.diff)
        if self.output and self.diff:
            lines = len(self.output.splitlines())
            yield Collapsible(OutputView(self.output), collapsed=True,
                              title=f"tool output ({lines} line{'s' if lines != 1 else ''})", classes="raw")
        elif self.output:
            yield OutputView(self.output)


class ToolBlock(Static, can_focus=True):
    """One tool call as one line: `▶ the call  its one-line result  0.4s`. Enter, a click or Ctrl+O (the newest)
    expands it: its output is made into widgets then (`ToolBody`), never before, which is what keeps a collapsed
    block one plain widget."""

    DEFAULT_CSS = """
    ToolBlock { height: 1; padding: 0 1; }
    ToolBlock:focus { background: $boost; }
    ToolBlock.error { color: $error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "fold", "expand or fold", show=False)]

    def __init__(self, call_id: str, tool: str, title: str) -> None:
        """`title`: the call as its tool names it (`bash: pytest -q`: CallFacts.title)."""
        super().__init__()
        self.call_id = call_id
        self.tool = tool
        self.call_title = title
        self.output = ""  # capped; "" when there is nothing to show beyond the line
        self.diff = ""
        self.parts = (f"⋯ {self.call_title}", "", "")  # (call, result, duration): the line, fitted to the width
        self.finished = False
        self.collapsed = True
        self.body: ToolBody | None = None
        self.started = time.monotonic()
        self.tail = ""  # the running command's latest output (its last line shows in the title)
        self.title: Content = shown_title(f"▶ {self.parts[0]}")

    @property
    def expandable(self) -> bool:
        return bool(self.output or self.diff)

    # ---- the line ---------------------------------------------------------------------------------------------
    def render(self) -> Content:
        return self.title

    def _retitle(self, parts: tuple[str, str, str] | None = None) -> None:
        """The line in the width the block has (coder/tui/fit.py): cut with …, the duration kept."""
        self.parts = parts or self.parts
        width = self.size.width - 4 if self.size.width else 0  # the ▶ and the padding
        mark = "▼" if not self.collapsed else "▶"
        title = shown_title(f"{mark} {tool_line(*self.parts, width)}")
        if title != self.title:
            self.title = title
            self.refresh()  # one line, always: no layout

    def on_resize(self, event: events.Resize) -> None:
        self._retitle()

    def progress(self, text: str) -> None:
        """Live output of the running call: its last line and the time it has run show in the line (issue 24:
        a long command showed nothing until it ended)."""
        if self.finished:
            return
        self.tail = (self.tail + text)[-4000:]
        lines = [line for line in self.tail.splitlines() if line.strip()]
        if lines:
            self._retitle((f"⋯ {self.call_title}", f"│ {lines[-1].strip()}", self.clock()))

    def tick(self) -> None:
        """The running call's clock moves while it prints nothing."""
        if not self.finished and self.parts[1].startswith("│"):
            self._retitle((self.parts[0], self.parts[1], self.clock()))

    def clock(self) -> str:
        return f"{time.monotonic() - self.started:.0f}s"

    def note(self, text: str) -> None:
        if not self.finished:  # a late note never hides a result
            self._retitle((f"⋯ {self.call_title}", f"[{text}]", ""))

    def finish(self, output: str, is_error: bool, duration: float, diff: str = "",
               data: dict[str, Any] | None = None) -> None:
        self.finished = True
        if failure(is_error, data, output) is not None:
            self.add_class("error")
        one_liner = len([line for line in output.splitlines() if line.strip()]) <= 1  # all of it in the line
        self.output = cap_output(output) if output.strip() and not (diff and one_liner) else ""
        self.diff = diff
        if diff and len(diff.splitlines()) <= DIFF_OPEN_LINES:
            self.collapsed = False
            if self.is_mounted:
                self._place_body()
        self._retitle((self.call_title, result_line(output, is_error, 0.0, data),
                       f"{duration:.1f}s" if duration >= 0.1 else ""))

    # ---- expanding --------------------------------------------------------------------------------------------
    def on_mount(self) -> None:
        if not self.collapsed:
            self._place_body()

    def on_click(self, event: events.Click) -> None:
        self.action_fold()

    def action_fold(self) -> None:
        """Expand a folded block, fold an expanded one."""
        self.set_collapsed(not self.collapsed)

    def set_collapsed(self, collapsed: bool) -> None:
        if collapsed == self.collapsed:
            return
        self.collapsed = collapsed
        if self.is_mounted:
            self._place_body()
        self._retitle()

    def _place_body(self) -> None:
        """Mount the output after the line (expanded) or take it away (folded). A result can come before the
        block is mounted: then `on_mount` places it (issue 24, bug 8: a result that came while the block was
        composed was lost)."""
        if self.collapsed or not self.expandable:
            if self.body is not None:
                self.body.remove()
                self.body = None
            return
        if self.body is None and isinstance(self.parent, Widget):
            self.body = ToolBody(self.output, self.diff)
            self.parent.mount(self.body, after=self)

    def on_unmount(self) -> None:
        if self.body is not None and self.body.parent is not None:
            self.body.remove()  # folded out of the conversation: its output goes with it
        self.body = None
