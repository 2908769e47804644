"""The conversation's older part as lines, not widgets (issue 32, round 3).

Every mounted widget is laid out again on each frame that mounts a block (Textual arranges the whole screen), so
the cost of a drain grew with the number of blocks kept (300: ~80 ms of CPU a drain, 340 ms at worst, and a key
waits behind it). The conversation now keeps only its newest MAX_BLOCKS as widgets (coder/tui/transcript.py);
an older block is drawn once, as it looked, into this one widget's lines before it is removed, and these lines
are drawn only when they are on screen (the way Textual's Log draws its lines). They can be scrolled to, read
and selected, not expanded: Ctrl+T has every call whole.
"""

from __future__ import annotations

from collections import deque

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget

#: lines kept (the oldest go first, and Ctrl+T still has them)
MAX_LINES = 5_000


class History(Widget):
    """The lines of the blocks folded out of the conversation, oldest first."""

    ALLOW_SELECT = True
    DEFAULT_CSS = "History { height: auto; }"

    def __init__(self) -> None:
        super().__init__(id="history")
        #: each line its segments, runs of one style merged: a Strip (seven caches of its own) is made only for a
        #: line on screen, so 5,000 kept lines are a few objects each for the collector to walk
        self.lines: deque[tuple[Segment, ...]] = deque(maxlen=MAX_LINES)

    def keep(self, widgets: list[Widget]) -> None:
        """Draw each widget (mounted, laid out) into lines, its vertical margins as blank lines; a widget not yet
        laid out (mounted and folded in one drain) leaves nothing, as before."""
        for widget in widgets:
            width, height = widget.size
            if not width or not height:
                continue
            margin = widget.styles.margin
            self.lines.extend(() for _ in range(margin.top))
            self.lines.extend(tuple(Segment.simplify(strip)) for strip in widget.render_lines(Region(0, 0, width,
                                                                                                     height)))
            self.lines.extend(() for _ in range(margin.bottom))
        self.refresh(layout=True)

    def skipped(self, blocks: int) -> None:
        """Blocks folded in the drain that made them were never drawn: one line says where they are."""
        self.lines.append((Segment(f" … {blocks} blocks not drawn here (Ctrl+T shows them)", Style(dim=True)),))
        self.refresh(layout=True)

    def clear(self) -> None:
        self.lines.clear()
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self.lines)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y >= len(self.lines):
            return Strip.blank(width)
        strip = Strip(self.lines[y])
        selection = self.text_selection
        if selection is not None and (span := selection.get_span(y)) is not None:
            start, end = span
            end = strip.cell_length if end == -1 else end
            style = self.screen.get_component_rich_style("screen--selection")
            strip = Strip.join([strip.crop(0, start),
                                Strip(Segment.apply_style(strip.crop(start, end), post_style=style)),
                                strip.crop(end, strip.cell_length)])
        return strip.crop_extend(0, width, None)

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        text = "\n".join("".join(segment.text for segment in line).rstrip() for line in self.lines)
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()
