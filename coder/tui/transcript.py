"""The conversation's blocks: adding them in batches, folding the oldest, the model's streamed text and the tool
calls waiting for their results. A part of the app (coder/tui/app.py); coder/tui/feed.py decides which blocks
events become.

Blocks added during a drain are mounted together at its end (one layout pass per batch, not one per block), and
blocks that would be folded at once are never mounted. At most MAX_BLOCKS stay mounted (each mounted widget is
laid out again on every frame that mounts one); a folded block is drawn into the lines of the history above them
(coder/tui/history.py), counted in the status bar and shown whole by Ctrl+T (from the session store).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.screen import Screen
from textual.widget import Widget

from coder.base import events as ev
from coder.base.termsafe import visible
from coder.tui.blocks import NoteBlock, ToolBlock, ToolBody, markdown_block, shown
from coder.tui.part import Part
from coder.tui.state import AppState
from coder.tui.widgets import Conversation

if TYPE_CHECKING:  # markdown-it loads with the first Markdown block, not at start-up (coder/tui/blocks.py)
    from textual.widgets import Markdown
    from textual.widgets.markdown import MarkdownStream

MAX_BLOCKS = 60
#: the values a folded widget keeps when its cycles are broken (Transcript._break_cycles)
FLAGS = (bool, int, float, str, type(None))


class Transcript(Part):
    def __init__(self, app: App[Any], state: AppState) -> None:
        super().__init__(app, state)
        self.pending: list[Widget] = []
        self.batching = False
        self.stream: MarkdownStream | None = None
        self.stream_block: Markdown | None = None
        self.tool_blocks: dict[str, list[ToolBlock]] = {}  # call id -> blocks awaiting a result (ids can repeat)
        self.warning: NoteBlock | None = None  # this turn's stuck warning: later ones update it (one line)
        self.warnings = 0
        self.released: list[Widget] = []  # folded widgets whose reference cycles are broken once they are gone

    @property
    def conversation(self) -> Conversation:
        return self.app.query_one(Conversation)

    # ---- blocks -----------------------------------------------------------------------------------------------
    def add_block(self, widget: Widget) -> None:
        """Add a block to the conversation; inside a drain it waits for the batch's end."""
        self.pending.append(widget)
        if not self.batching:
            self.flush()

    def note(self, text: str, kind: str = "") -> None:
        if text:
            self.add_block(NoteBlock(text, kind))

    def stuck(self, event: ev.StuckEvent) -> None:
        """A stuck warning (or stop): the first of a turn is a line, the ones after it update that line."""
        self.warnings += 1
        from coder.stuck.guard import stuck_warning  # start-up time: the detector's rules load with a warning

        text = stuck_warning(event, self.warnings)
        if self.warning is not None and (self.warning.parent is not None or self.warning in self.pending):
            self.warning.update(shown(text))
            return
        self.warning = NoteBlock(text, "error")
        self.add_block(self.warning)

    def end_turn(self) -> None:
        self.warning, self.warnings = None, 0

    def flush(self) -> None:
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        keep = pending[-MAX_BLOCKS:]
        dropped = pending[: len(pending) - len(keep)]
        for widget in dropped:
            if isinstance(widget, ToolBlock):
                self._forget(widget)
        self.state.folded += len(dropped)
        conversation = self.conversation
        conversation.mount_all(keep)
        # children already on their way out (removal is asynchronous) were counted and must not be again: the
        # status bar said "4446 folded" after 2,500 blocks; an expanded block's output goes with its block
        live = [c for c in conversation.blocks if not c._pruning and not isinstance(c, ToolBody)]
        excess = len(live) - MAX_BLOCKS
        if excess > 0:
            old = [c for c in live[: excess + 1] if c is not self.stream_block][:excess]
            for child in old:
                if isinstance(child, ToolBlock):
                    self._forget(child)
            self.state.folded += len(old)
            conversation.history.keep([w for c in old for w in _with_output(c)])
            self.released.extend(node for c in old for node in c.walk_children(Widget, with_self=True))
            conversation.remove_children(old)
        if self.released:
            self._break_cycles(conversation.screen)
        if dropped:  # after the blocks mounted before them
            conversation.history.skipped(len(dropped))

    def _break_cycles(self, screen: Screen) -> None:
        """Free the folded widgets by reference counting, not by a full collection (issue 32, round 3).

        A widget lives in reference cycles (its styles, message queue, signals and caches point back at it), and by
        the time it is folded it has survived to the collector's oldest generation: ~1,000 folded widgets left
        ~140,000 objects that only a full collection freed, ~470 ms of CPU in one pass of the loop. Once a folded
        widget's removal is over (its message pump closed) and nothing of Textual's still points at it (the
        screen's map and repaints, the mouse, focus), the objects it holds are dropped, its flags kept (a stray
        message finds it closed); what it held is freed as it goes, without a cycle."""
        app = self.app
        held = {*screen._compositor.widgets, *screen._dirty_widgets, screen.focused, app.mouse_over, app.hover_over,
                app.mouse_captured, app._last_focused_on_app_blur}
        waiting: list[Widget] = []
        for node in self.released:
            if not node._closed or node in held:
                waiting.append(node)
                continue
            for name, value in list(vars(node).items()):
                if not isinstance(value, FLAGS):
                    delattr(node, name)
        self.released = waiting

    def clear(self) -> None:
        """/clear and /resume: a new conversation."""
        self.conversation.remove_children(self.conversation.blocks)
        self.conversation.history.clear()
        self.tool_blocks.clear()
        self.state.shell_calls.clear()
        self.pending.clear()
        self.stream, self.stream_block = None, None
        self.state.folded = 0

    # ---- the model's text -------------------------------------------------------------------------------------
    async def stream_text(self, text: str) -> None:
        """Text of a message still being written: into a Markdown block as it comes."""
        if self.stream is None:
            block = markdown_block()
            self.stream_block = block
            self.add_block(block)
            self.flush()  # the stream appends into a mounted widget
            self.stream = type(block).get_stream(block)
        await self.stream.write(visible(text))  # per character: a sequence split across writes is no escape

    async def end_stream(self) -> bool:
        """Finish the streamed block; True when one was streaming."""
        if self.stream is None:
            return False
        stream, self.stream = self.stream, None
        self.stream_block = None
        await stream.stop()
        return True

    # ---- tool calls -------------------------------------------------------------------------------------------
    def start_tool(self, block: ToolBlock, shell: bool) -> None:
        self.tool_blocks.setdefault(block.call_id, []).append(block)
        if shell:
            self.state.shell_calls.add(block.call_id)
        self.add_block(block)

    def running(self, call_id: str) -> ToolBlock | None:
        """The oldest block of `call_id` still waiting for its result. Tool ids are not always unique (a local
        OpenAI-compatible server may repeat them): a block per id lost a result when two were in flight."""
        blocks = self.tool_blocks.get(call_id)
        return blocks[0] if blocks else None

    def take(self, call_id: str) -> ToolBlock | None:
        """The block that gets `call_id`'s result, no longer waiting."""
        blocks = self.tool_blocks.get(call_id)
        if not blocks:
            return None
        block = blocks.pop(0)
        if not blocks:
            del self.tool_blocks[call_id]
            self.state.shell_calls.discard(call_id)
        return block

    def _forget(self, block: ToolBlock) -> None:
        """A block folded out of the conversation no longer waits for a result."""
        blocks = self.tool_blocks.get(block.call_id)
        if blocks and block in blocks:
            blocks.remove(block)
            if not blocks:
                del self.tool_blocks[block.call_id]
                self.state.shell_calls.discard(block.call_id)

    def unfinished(self) -> list[ToolBlock]:
        return [b for blocks in self.tool_blocks.values() for b in blocks if not b.finished]

    def tick(self) -> None:
        """The clocks of running calls move while they print nothing."""
        for blocks in self.tool_blocks.values():
            for block in blocks:
                block.tick()


def _with_output(block: Widget) -> list[Widget]:
    """A block and, when it is an expanded call, its output (mounted after it, removed with it)."""
    body = block.body if isinstance(block, ToolBlock) else None
    return [block] if body is None or body.parent is None else [block, body]
