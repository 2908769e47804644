"""How the conversation is drawn from engine events: the drain loop, the Markdown stream, tool blocks, the
bounded list of blocks and the status bar. A mixin of CoderApp (coder/tui/app.py), split out to keep each
module readable; it uses the app's state (queue, blocks, info) and never the engine beyond the events.
"""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual.widget import Widget

from coder.base import events as ev
from coder.base.termsafe import visible
from coder.stuck.guard import stuck_warning
from coder.tui.common import GitState
from coder.tui.widgets import NoteBlock, PermissionPrompt, StatusBar, ToolBlock, UserBlock

MAX_BLOCKS = 300
_markdown_classes: dict[str, type] = {}


def markdown_block(text: str = "", kind: str = "assistant") -> Widget:
    """A Markdown widget. Imported on first use: markdown-it is not needed for the first paint. The text (the
    model's, or a command's output quoting files) has its control sequences made visible: Textual would pass
    them to the terminal."""
    if kind not in _markdown_classes:
        from textual.widgets import Markdown

        name = "AssistantBlock" if kind == "assistant" else "CommandBlock"
        css = {"assistant": "AssistantBlock { margin: 1 0 0 0; padding: 0 1; }",
               "command": "CommandBlock { margin: 1 0 0 0; padding: 0 1; border-left: thick $secondary; }"}[kind]
        # compact tables: no rule between rows (a 20-row /help fits a screen), the header set apart by colour
        css += f" {name} MarkdownTableContent {{ grid-gutter: 0 1; keyline: none; }}"
        _markdown_classes[kind] = type(name, (Markdown,), {"DEFAULT_CSS": css})
    return _markdown_classes[kind](visible(text))


class ConversationView:
    """Mixin: everything that turns events into blocks."""

    # ---- events -----------------------------------------------------------------------------------------------
    async def drain(self) -> None:
        """Hand the queued events to `handle`, one drain at a time: the interval timer and `_opened` both drain,
        and two drains interleaving at an await (a stream write) could take events out of order."""
        async with self.drain_lock:
            await self._drain()

    async def _drain(self) -> None:
        if not self.queue:
            if self.busy or str(self.info["state"]).startswith("/"):
                self.refresh_status()  # the spinner and the elapsed time move while nothing arrives
            self.offer_prompt()
            return
        text: list[str] = []
        self.batching = True
        try:
            while self.queue:
                item = self.queue.popleft()
                if isinstance(item, ev.TextDelta):
                    text.append(item.text)
                    self.info["streamed"] = self.info.get("streamed", 0) + len(item.text)
                    continue
                if text:
                    await self.stream_text("".join(text))
                    text = []
                await self.handle(item)
            if text:
                await self.stream_text("".join(text))
        finally:
            self.batching = False
            self.flush_blocks()
        self.refresh_status()
        self.conversation.follow(force=self.offer_prompt())  # a question must be seen, even by someone reading up

    def offer_prompt(self) -> bool:
        """Give a waiting permission prompt the focus when the person is not typing (coder/tui/permission.py);
        True when it just took it. Checked on every drain, so a prompt that came mid-word takes the focus once
        the typing stops and the input is empty again."""
        from coder.tui.permission import QUIET
        from coder.tui.widgets import PromptInput

        prompt = self.prompt_widget
        if prompt is None or prompt.answered or prompt.has_focus or not prompt.is_mounted or \
                self.reason_for is not None:
            return False
        box = self.query_one(PromptInput)
        if self.focused is not box and self.focused is not None:
            return False  # reading a block, or in a modal: leave the focus alone
        if box.text.strip() or time.monotonic() - box.last_edit_at < QUIET:
            return False  # typing, or a draft in the input: Tab answers; the prompt waits for a quiet, empty input
        prompt.focus()
        return True

    async def stream_text(self, text: str) -> None:
        if self.stream is None:
            self.stream_block = markdown_block()
            self.add_block(self.stream_block)
            self.flush_blocks()  # the stream appends into a mounted widget
            self.stream = type(self.stream_block).get_stream(self.stream_block)
        await self.stream.write(visible(text))  # per character: a sequence split across writes is no escape

    async def end_stream(self) -> bool:
        """Finish the streamed block; True when one was streaming."""
        if self.stream is None:
            return False
        stream, self.stream = self.stream, None
        await stream.stop()
        return True

    async def handle(self, item: Any, replay: bool = False) -> None:
        if isinstance(item, tuple):
            for event in item[1][:-MAX_BLOCKS * 2]:  # not drawn, but counted: the tokens are the whole session's
                if isinstance(event, ev.UsageEvent):
                    self._count_usage(event)
            for event in item[1][-MAX_BLOCKS * 2:]:
                await self.handle(event, replay=True)
            if item[1]:
                self.add_block(NoteBlock("── resumed: earlier conversation above ──"))
            return
        if isinstance(item, ev.SessionStart):
            self.info.update(model=item.model, sandbox=item.sandbox)
            self.work_event(item, replay)  # a new session has no task list yet (issue 19)
            if not replay:
                self.add_block(NoteBlock(f"session {item.session_id} · {_home(item.workspace)}" +
                                         (" (resumed)" if item.resumed else "")))
        elif isinstance(item, ev.UserMessage):
            self.add_block(UserBlock(item.text))
            if item.attachments:  # `@path`: the file went along (coder/engine/mentions.py)
                self.add_block(NoteBlock("attached " + ", ".join(_attached(a) for a in item.attachments)))
        elif isinstance(item, ev.AssistantMessage):
            streamed = await self.end_stream()
            texts = [b.get("text", "") for b in item.message.get("content", []) if b.get("type") == "text"]
            if not streamed and any(t.strip() for t in texts):
                self.add_block(markdown_block("\n\n".join(texts)))
        elif isinstance(item, ev.ToolCallRequested):
            await self.end_stream()
            block = ToolBlock(item.id, item.tool, item.input)
            self.tool_blocks.setdefault(item.id, []).append(block)  # a list: ids can repeat (bug 8)
            self.add_block(block)
        elif isinstance(item, (ev.PlanProposed, ev.PlanDecision, ev.TodoUpdated)):
            self.work_event(item, replay)  # issue 19: plans and the task list (coder/tui/work_view.py)
        elif isinstance(item, ev.PermissionRequest) and not replay:
            self.prompt_widget = PermissionPrompt(item.id, item.tool, item.input, item.reason, item.suggested_rule)
            self.add_block(self.prompt_widget)
        elif isinstance(item, (ev.ToolCallApproved, ev.ToolCallDenied)):
            block = self._running_block(item.id)
            if block is not None and (item.by != "policy" or isinstance(item, ev.ToolCallDenied)):
                block.note(f"{'allowed' if isinstance(item, ev.ToolCallApproved) else 'denied'} by {item.by}")
        elif isinstance(item, ev.ToolCallFinished):
            block = self._take_block(item.id)
            if block is None:  # paged out while it ran: the result gets a block of its own
                block = ToolBlock(item.id, item.tool, item.input)
                self.add_block(block)
            block.finish(item.output, item.is_error, item.duration_s, str(item.data.get("diff", "") or ""),
                         item.data)
        elif isinstance(item, ev.ToolOutput):  # a running command's output, as it comes
            block = self._running_block(item.id)
            if block is not None:
                block.progress(item.text)
        elif isinstance(item, ev.BackgroundEnded):  # a command sent to the background ended (Ctrl+B)
            self.add_block(NoteBlock(f"background job {item.id} ({item.command[:60]}) {item.state}",
                                     "ok" if item.exit_code == 0 else "error" if item.exit_code else ""))
        elif isinstance(item, ev.ReviewStage):  # /review and /commit say what they are doing as they go
            mark = {"pass": "✓", "fail": "✗", "warn": "!", "skipped": "·"}.get(item.status, "·")
            self.add_block(NoteBlock(f"review {mark} {item.name}: {item.status} ({item.duration:.1f}s)" +
                                     (f" · {item.note[:100]}" if item.note else "")))
        elif isinstance(item, ev.RetryWait) and not replay:  # a wait on a rate limit: why, and a countdown
            self.info["retry_until"] = time.monotonic() + item.seconds
            self.add_block(NoteBlock(f"model request failed ({item.reason}); retry {item.attempt} of "
                                     f"{item.max_retries} in {item.seconds:.0f}s"))
        elif isinstance(item, ev.UsageEvent):
            self._count_usage(item)
        elif isinstance(item, ev.CompactionEvent):
            self.info["ctx"] = item.tokens_after  # the figure the next request will start from
            self.add_block(NoteBlock(f"context compacted ({item.kind}): {item.tokens_before:,} → "
                                     f"{item.tokens_after:,} tokens"))
        elif isinstance(item, ev.CheckpointEvent):
            files = ", ".join(item.files_changed[:5])
            self.add_block(NoteBlock(f"checkpoint {item.id}" + (f": {files}" if files else "") + " (/undo)"))
        elif isinstance(item, ev.ReviewEvent):
            self.add_block(NoteBlock(f"review: {item.verdict} ({len(item.findings)} findings)"))
        elif isinstance(item, ev.CommitEvent):
            self.add_block(NoteBlock(f"committed {item.sha[:10]}: {item.message.splitlines()[0]}", "ok"))
        elif isinstance(item, ev.StuckEvent) and item.action != "nudge":  # issue 22: nudges go to the model only
            self.add_block(NoteBlock(stuck_warning(item), "error"))
        elif isinstance(item, ev.ErrorEvent):
            self.add_block(NoteBlock(("error: " if item.fatal else "note: ") + item.message,
                                     "error" if item.fatal else ""))
        elif isinstance(item, ev.TurnEnd) and not replay:
            await self.end_stream()
            self.turn_ended(item.reason)

    def _count_usage(self, item: ev.UsageEvent) -> None:
        """The status bar's tokens: every token of every request (input, output, cache read and write), the
        same total `/cost` shows."""
        self.info["tokens"] += item.input_tokens + item.output_tokens + item.cache_read_tokens + \
            item.cache_write_tokens
        self.info.update(cost=item.total_cost_usd, ctx=item.context_tokens, window=item.context_window)

    def _running_block(self, call_id: str) -> ToolBlock | None:
        """The oldest block of `call_id` still waiting for its result. Tool ids are not always unique (a local
        OpenAI-compatible server may repeat them): a block per id lost a result when two were in flight."""
        blocks = self.tool_blocks.get(call_id)
        return blocks[0] if blocks else None

    def _take_block(self, call_id: str) -> ToolBlock | None:
        blocks = self.tool_blocks.get(call_id)
        if not blocks:
            return None
        block = blocks.pop(0)
        if not blocks:
            del self.tool_blocks[call_id]
        return block

    def _forget_block(self, block: ToolBlock) -> None:
        """A block paged out of the conversation no longer waits for a result."""
        blocks = self.tool_blocks.get(block.call_id)
        if blocks and block in blocks:
            blocks.remove(block)
            if not blocks:
                del self.tool_blocks[block.call_id]

    def turn_ended(self, reason: str) -> None:
        self.busy = False
        self.info["state"] = "idle"
        self._resolve_ask(None)
        if reason != "done":
            self.add_block(NoteBlock(f"turn stopped: {reason}", "error" if reason != "interrupted" else ""))
        self.refresh_git()
        requeue, self.requeue = self.requeue, False
        if self.queued and requeue:
            self.restore_queued()
        elif self.queued:
            self.send(self.queued.pop(0))

    def restore_queued(self) -> None:
        """An interrupted turn: what was queued goes back into the input (before any draft), visibly, and Enter
        sends it. Interrupting means "stop"; sending the next message on its own would not be what was asked."""
        from coder.tui.widgets import PromptInput

        box = self.query_one(PromptInput)
        queued, self.queued = self.queued, []
        box.set_text("\n".join([*queued, box.text] if box.text.strip() else queued))
        box.focus()
        self.add_block(NoteBlock(f"interrupted: the queued message{'s are' if len(queued) > 1 else ' is'} back in "
                                 "the input (Enter sends)"))

    def add_block(self, widget: Widget) -> None:
        """Add a block to the conversation. Inside a drain, blocks are collected and mounted together at its end
        (one layout pass per batch, not one per block); blocks that would be folded at once are never mounted."""
        self.pending.append(widget)
        if not self.batching:
            self.flush_blocks()

    def flush_blocks(self) -> None:
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        keep = [w for w in pending[-MAX_BLOCKS:]]
        dropped = pending[: len(pending) - len(keep)]
        for widget in dropped:
            if isinstance(widget, ToolBlock):
                self._forget_block(widget)
        self.hidden_blocks += len(dropped)
        conversation = self.conversation
        conversation.mount_all(keep)
        # children already on their way out (removal is asynchronous) were counted and must not be again: the
        # status bar said "4446 folded" after 2,500 blocks
        live = [c for c in conversation.children if not getattr(c, "_pruning", False)]
        excess = len(live) - MAX_BLOCKS
        if excess > 0:
            protected = (self.prompt_widget, self.stream_block)
            old = [c for c in live[: excess + 2] if c not in protected][:excess]
            for child in old:
                if isinstance(child, ToolBlock):
                    self._forget_block(child)
            self.hidden_blocks += len(old)
            conversation.remove_children(old)

    # ---- status -----------------------------------------------------------------------------------------------
    def on_resize(self, event: Any) -> None:
        self.call_after_refresh(self.refresh_status)  # the bar is built for its width

    def refresh_git(self) -> None:
        if self.opened is None:
            return
        workspace = self.opened.workspace

        def work() -> None:
            from coder.tui.common import git_state

            state = git_state(workspace)
            self.call_from_thread(self._git_done, state)

        self.run_worker(work, thread=True, group="git", exclusive=True)

    def _git_done(self, state: GitState) -> None:
        self.git = state
        self.refresh_status()

    def refresh_status(self) -> None:
        """The status bar, built for its width (coder/tui/fit.py): while a turn or a command runs, a spinner, what
        runs and for how long, and the tokens streamed so far."""
        from coder.commands.modes import current_mode
        from coder.tui.fit import SPINNER, StatusParts, status_line

        info = self.info
        mode = current_mode(self.session) if self.session is not None else (self.args.permission_mode or "…")
        pct = 100 * info["ctx"] / info["window"] if info["window"] else 0.0
        state = str(info["state"])
        running = self.busy or state.startswith("/")
        if running:
            took = time.monotonic() - self.work_started
            state = f"{SPINNER[int(took * 8) % len(SPINNER)]} {state} {took:.0f}s"
            wait = info.get("retry_until", 0.0) - time.monotonic()
            if wait > 0:
                state += f" · retry in {wait:.0f}s"
            elif self.prompt_widget is not None and not self.prompt_widget.answered:
                state += " · asking you"
            elif any(b.tool == "bash" and not b.finished for bs in self.tool_blocks.values() for b in bs):
                state += " · Ctrl+B: background"  # a running command can be sent on (coder/tools/bash_jobs.py)
            elif info.get("streamed"):
                state += f" ↓{_short(int(info['streamed']) // 4)}"
        parts = StatusParts(state, visible(str(info["model"])), mode, pct, _short(info["tokens"]), info["cost"],
                            visible(str(info["sandbox"])), visible(self.git.label()), self.hidden_blocks)
        width = max(self.size.width - 2, 20)
        styles = {"state": "bold green" if state == "idle" else "bold yellow", "sep": "dim",
                  "mode": "bold magenta" if mode in ("auto", "auto-edit") else "bold",
                  "sandbox": "green" if info["sandbox"] == "bubblewrap" else "red", "folded": "dim"}
        text = Text()
        for value, part in status_line(parts, width):
            text.append(value, style=styles.get(part, ""))
        for bar in self.query(StatusBar):  # none while the app is closing: a late worker callback updates nothing
            bar.update(text)


def _home(path: str) -> str:
    """The workspace as people say it: ~/x for paths under HOME (shorter, and the same on every machine)."""
    import os

    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home != "/" and (path == home or path.startswith(home + "/")) else path


def _attached(a: dict[str, Any]) -> str:
    from coder.engine.mentions import Attachment

    return visible(Attachment(**a).label())


def _short(n: int) -> str:
    return f"{n / 1_000_000:.1f}M" if n >= 1_000_000 else f"{n / 1000:.1f}k" if n >= 1000 else str(n)
