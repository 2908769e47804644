"""The interactive app (Textual): a conversation view over one engine session.

Threads: `Session.send` blocks, so it runs in a worker thread. The engine's events are appended to a deque
(never blocking the engine) and drained by the UI about 20 times a second; consecutive text deltas are merged
into one Markdown stream write, so a fast stream costs a few appends per second instead of a redraw per token.
Permission requests block the engine thread on a Future that the inline prompt resolves.

First paint comes before anything heavy: the session (config, store, provider SDK, tools) opens in a worker
after the screen is up. Memory stays bounded: tool output is capped per block and only the newest MAX_BLOCKS
blocks stay mounted; the full transcript is in the session store.
"""

from __future__ import annotations

import collections
import time
from concurrent.futures import Future
from typing import Any, Callable

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import TextArea

from coder.engine import events as ev
from coder.tui.common import GitState, InputHistory, match_paths, options_from_args, word_at_end
from coder.tui.widgets import (CompletionList, DiffView, NoteBlock, PermissionPrompt, PromptInput, StatusBar,
                               ToolBlock, UserBlock)

MAX_BLOCKS = 300
DRAIN_INTERVAL = 0.05
QUIT_WINDOW = 2.0
Opener = Callable[[Callable[[ev.Event], None], Callable[[Any], Any], Any], Any]


_markdown_classes: dict[str, type] = {}


def markdown_block(text: str = "", kind: str = "assistant") -> Widget:
    """A Markdown widget. Imported on first use: markdown-it is not needed for the first paint."""
    if kind not in _markdown_classes:
        from textual.widgets import Markdown

        css = {"assistant": "AssistantBlock { margin: 1 0 0 0; padding: 0 1; }",
               "command": "CommandBlock { margin: 1 0 0 0; padding: 0 1; border-left: thick $secondary; }"}[kind]
        name = "AssistantBlock" if kind == "assistant" else "CommandBlock"
        _markdown_classes[kind] = type(name, (Markdown,), {"DEFAULT_CSS": css})
    return _markdown_classes[kind](text)


class CoderApp(App):
    TITLE = "coder"
    CSS = """
    Screen { layout: vertical; }
    #conversation { height: 1fr; scrollbar-size-vertical: 1; }
    """
    BINDINGS = [
        Binding("ctrl+c", "ctrl_c", "interrupt / quit", priority=True),
        Binding("escape", "escape", "interrupt", priority=True),
        Binding("shift+tab", "cycle_mode", "mode", priority=True),
        Binding("ctrl+r", "history_search", "history", priority=True),
    ]

    def __init__(self, args: Any, opener: Opener | None = None, history: InputHistory | None = None) -> None:
        super().__init__()
        self.args = args
        self.opener = opener
        self.opened: Any = None
        self.history = history or InputHistory()
        self.queue: collections.deque[Any] = collections.deque()
        self.busy = False
        self.queued: list[str] = []
        self.stream: Any = None
        self.stream_block: Any = None
        self.tool_blocks: dict[str, ToolBlock] = {}
        self.ask_future: Future | None = None
        self.prompt_widget: PermissionPrompt | None = None
        self.last_ctrl_c = 0.0
        self.hidden_blocks = 0
        self.pending: list[Widget] = []
        self.batching = False
        self.hist_index: int | None = None
        self.draft = ""
        self.files: list[str] | None = None
        self.git = GitState()
        self.info: dict[str, Any] = {"model": getattr(args, "model", None) or "…", "sandbox": "…", "tokens": 0,
                                     "cost": 0.0, "ctx": 0, "window": 0, "state": "starting"}
        self.first_paint_at: float | None = None
        self.opened_at: float | None = None

    # ---- layout -----------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="conversation")
        yield CompletionList()
        yield PromptInput(id="input")
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        from coder import __version__

        self.conversation.mount(NoteBlock(f"coder {__version__} · /help lists commands · Ctrl+C twice quits"))
        self.query_one(PromptInput).focus()
        self.refresh_status()
        self.set_interval(DRAIN_INTERVAL, self.drain)
        self.call_after_refresh(self._painted)
        self.open_session()

    def _painted(self) -> None:
        self.first_paint_at = time.monotonic()

    @property
    def conversation(self) -> VerticalScroll:
        return self.query_one("#conversation", VerticalScroll)

    @property
    def session(self) -> Any:
        return self.opened.session if self.opened is not None else None

    # ---- opening, switching, closing the session --------------------------------------------------------------
    def open_session(self, **override: Any) -> None:
        self.info["state"] = "starting"
        self.run_worker(lambda: self._open_worker(override), thread=True, group="open")

    def _open_worker(self, override: dict[str, Any]) -> None:
        from coder.errors import CoderError

        buffered: list[ev.Event] = []
        sink: list[Callable[[ev.Event], None]] = [buffered.append]

        def on_event(event: ev.Event) -> None:
            sink[0](event)  # the buffer while opening, the app's queue afterwards

        try:
            if self.opener is not None:
                opened = self.opener(on_event, self.ask, override)
            else:
                from coder.engine.builder import open_session

                opened = open_session(options_from_args(self.args, **override), on_event, self.ask)
        except CoderError as exc:
            self.call_from_thread(self._open_failed, str(exc))
            return
        history: list[ev.Event] = []
        if opened.resumed:
            from coder.tui.common import replay_rows

            history = replay_rows(opened.store, opened.session.id)[: -len(buffered) or None]
        self.queue.append(("replay", history))
        self.queue.extend(buffered)
        sink[0] = self.queue.append
        self.call_from_thread(self._opened, opened)

    async def _opened(self, opened: Any) -> None:
        await self.drain()  # the replayed conversation and the session's first events come before anything typed
        self.opened = opened
        self.opened_at = time.monotonic()
        self.info["state"] = "idle"
        self.refresh_status()
        self.refresh_git()

    def _open_failed(self, message: str) -> None:
        self.info["state"] = "no session"
        self.add_block(NoteBlock(f"coder could not start a session: {message}\n"
                                 "Fix it and restart, try `/model PROVIDER:NAME`, or /quit.", "error"))
        self.refresh_status()

    def close_session(self, reason: str) -> None:
        if self.opened is None:
            return
        opened, self.opened = self.opened, None
        try:
            opened.session.close(reason)
            opened.store.set_status(opened.session.id, reason)
            opened.store.close()
        except Exception:  # noqa: BLE001 - closing must not keep the user from leaving
            pass

    def switch_session(self, resume: str | None) -> None:
        if self.busy:
            self.add_block(NoteBlock("Wait for the turn to end (Esc interrupts it) before switching.", "error"))
            return
        self.close_session("switched")
        self.conversation.remove_children()
        self.tool_blocks.clear()
        self.hidden_blocks = 0
        self.info.update(tokens=0, cost=0.0, ctx=0)
        self.open_session(resume=resume, continue_last=False)

    def on_unmount(self) -> None:
        if self.session is not None and self.busy:
            self.session.interrupt()
            self._resolve_ask(None)
        self.close_session("done")

    # ---- input ------------------------------------------------------------------------------------------------
    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        text = message.text.strip()
        if not text:
            return
        box = self.query_one(PromptInput)
        box.set_text("")
        self.query_one(CompletionList).close()
        box.completion_open = False
        self.history.add(text)
        self.hist_index = None
        self.submit(text)

    def submit(self, text: str) -> None:
        from coder.engine.commands import is_command

        if is_command(text):
            self.run_command(text)
        elif self.session is None:
            self.add_block(NoteBlock("No session is open yet.", "error"))
        elif self.busy:
            self.queued.append(text)
            self.add_block(NoteBlock(f"queued (sent when this turn ends): {text[:80]}"))
        else:
            self.send(text)

    def send(self, text: str) -> None:
        self.busy = True
        self.info["state"] = "working"
        self.refresh_status()
        session = self.session
        self.run_worker(lambda: session.send(text), thread=True, group="turn")

    def run_command(self, line: str) -> None:
        from coder.engine.commands import CommandResult, parse, run_slash

        name, arg = parse(line)
        if name == "quit":
            self.exit()
            return
        if self.opened is None:
            if name == "model" and arg.strip():
                self.args.model = arg.strip()
                self.open_session(model=arg.strip())
            else:
                self.add_block(NoteBlock("No session is open: only /model SPEC and /quit work now.", "error"))
            return
        opened, busy = self.opened, self.busy
        self.add_block(NoteBlock(f"› {line}"))

        def work() -> None:
            try:
                result = run_slash(opened, line, busy=busy)
            except Exception as exc:  # noqa: BLE001 - a command bug is shown, never ends the session
                result = CommandResult(f"/{name} failed: {type(exc).__name__}: {exc}", error=True)
            self.call_from_thread(self.apply_result, result)

        self.run_worker(work, thread=True, group="command")

    def apply_result(self, result: Any) -> None:
        if result.text:
            if result.error:
                self.add_block(NoteBlock(result.text, "error"))
            else:
                self.add_block(markdown_block(result.text, "command"))
        if result.diff:
            self.add_block(DiffView(result.diff))
        if result.quit:
            self.exit()
        elif result.new_session:
            self.switch_session(None)
        elif result.resume:
            self.switch_session(result.resume)
        elif result.send:
            self.submit(result.send)
        self.refresh_status()
        self.refresh_git()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        box = self.query_one(PromptInput)
        completion = self.query_one(CompletionList)
        text = box.text
        items: list[tuple[str, str]] = []
        kind = ""
        if text.startswith("/") and " " not in text and "\n" not in text:
            from coder.engine.commands import completions

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
        if completion.is_open:
            if message.key in ("up", "down"):
                completion.move(-1 if message.key == "up" else 1)
            elif message.key == "accept":
                value = completion.current() or ""
                text = box.text
                cut = len(text) - len(word_at_end(text)) if completion.kind == "path" else 0
                box.set_text(text[:cut] + value + " ")
                completion.close()
                box.completion_open = False
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

    # ---- keys -------------------------------------------------------------------------------------------------
    def action_ctrl_c(self) -> None:
        if self.busy or self.prompt_widget is not None:
            self.interrupt()
            return
        box = self.query_one(PromptInput)
        if box.text:
            box.set_text("")
            return
        now = time.monotonic()
        if now - self.last_ctrl_c < QUIT_WINDOW:
            self.exit()
            return
        self.last_ctrl_c = now
        self.notify("Press Ctrl+C again to quit", timeout=QUIT_WINDOW)

    def action_escape(self) -> None:
        completion = self.query_one(CompletionList)
        if completion.is_open:
            completion.close()
            self.query_one(PromptInput).completion_open = False
        elif self.prompt_widget is not None:
            self.prompt_widget.action_answer("deny")
        elif self.busy:
            self.interrupt()

    def interrupt(self) -> None:
        if self.session is None:
            return
        self.session.interrupt()
        self._resolve_ask(None)
        self.queued.clear()
        self.info["state"] = "interrupting"
        self.refresh_status()

    def action_cycle_mode(self) -> None:
        if self.session is None:
            return
        from coder.engine.commands import cycle_mode

        mode = cycle_mode(self.session)
        self.notify(f"mode: {mode}", timeout=1.5)
        self.refresh_status()

    def action_history_search(self) -> None:
        from coder.tui.screens import HistorySearch

        box = self.query_one(PromptInput)

        def chosen(value: str | None) -> None:
            if value is not None:
                box.set_text(value)
            box.focus()

        self.push_screen(HistorySearch(self.history, box.text), chosen)

    # ---- permission prompts -----------------------------------------------------------------------------------
    def ask(self, request: ev.PermissionRequest) -> Any:
        """Called on the engine thread; blocks until the inline prompt (or an interrupt) answers."""
        from coder.policy.base import PermissionAnswer

        future: Future = Future()
        self.ask_future = future
        answer = future.result()
        return answer if answer is not None else PermissionAnswer(False, message="interrupted by the user")

    def _resolve_ask(self, answer: Any) -> None:
        future, self.ask_future = self.ask_future, None
        if future is not None and not future.done():
            future.set_result(answer)
        if self.prompt_widget is not None:
            self.prompt_widget.remove()
            self.prompt_widget = None
            self.query_one(PromptInput).focus()

    def on_permission_prompt_answered(self, message: PermissionPrompt.Answered) -> None:
        from coder.policy.base import PermissionAnswer

        prompt = message.prompt
        answers = {"once": PermissionAnswer(True), "always": PermissionAnswer(True, "session", prompt.rule),
                   "project": PermissionAnswer(True, "project", prompt.rule),
                   "deny": PermissionAnswer(False, message="the user denied this call")}
        self._resolve_ask(answers[message.choice])

    # ---- events -----------------------------------------------------------------------------------------------
    async def drain(self) -> None:
        if not self.queue:
            return
        follow = self.conversation.scroll_y >= self.conversation.max_scroll_y - 2
        text: list[str] = []
        self.batching = True
        try:
            while self.queue:
                item = self.queue.popleft()
                if isinstance(item, ev.TextDelta):
                    text.append(item.text)
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
        if self.prompt_widget is not None:
            self.prompt_widget.focus()
        if follow:
            self.conversation.scroll_end(animate=False)

    async def stream_text(self, text: str) -> None:
        if self.stream is None:
            self.stream_block = markdown_block()
            self.add_block(self.stream_block)
            self.flush_blocks()  # the stream appends into a mounted widget
            self.stream = type(self.stream_block).get_stream(self.stream_block)
        await self.stream.write(text)

    async def end_stream(self) -> bool:
        """Finish the streamed block; True when one was streaming."""
        if self.stream is None:
            return False
        stream, self.stream = self.stream, None
        await stream.stop()
        return True

    async def handle(self, item: Any, replay: bool = False) -> None:
        if isinstance(item, tuple):
            for event in item[1][-MAX_BLOCKS * 2:]:
                await self.handle(event, replay=True)
            if item[1]:
                self.add_block(NoteBlock("── resumed: earlier conversation above ──"))
            return
        if isinstance(item, ev.SessionStart):
            self.info.update(model=item.model, sandbox=item.sandbox)
            if not replay:
                self.add_block(NoteBlock(f"session {item.session_id} · {_home(item.workspace)}" +
                                         (" (resumed)" if item.resumed else "")))
        elif isinstance(item, ev.UserMessage):
            self.add_block(UserBlock(item.text))
        elif isinstance(item, ev.AssistantMessage):
            streamed = await self.end_stream()
            texts = [b.get("text", "") for b in item.message.get("content", []) if b.get("type") == "text"]
            if not streamed and any(t.strip() for t in texts):
                self.add_block(markdown_block("\n\n".join(texts)))
        elif isinstance(item, ev.ToolCallRequested):
            await self.end_stream()
            block = ToolBlock(item.id, item.tool, item.input)
            self.tool_blocks[item.id] = block
            self.add_block(block)
        elif isinstance(item, ev.PermissionRequest):
            self.prompt_widget = PermissionPrompt(item.id, item.tool, item.input, item.reason, item.suggested_rule)
            self.add_block(self.prompt_widget)
        elif isinstance(item, (ev.ToolCallApproved, ev.ToolCallDenied)):
            block = self.tool_blocks.get(item.id)
            if block is not None and (item.by != "policy" or isinstance(item, ev.ToolCallDenied)):
                block.note(f"{'allowed' if isinstance(item, ev.ToolCallApproved) else 'denied'} by {item.by}")
        elif isinstance(item, ev.ToolCallFinished):
            block = self.tool_blocks.pop(item.id, None)
            if block is None:
                block = ToolBlock(item.id, item.tool, item.input)
                self.add_block(block)
            block.finish(item.output, item.is_error, item.duration_s, str(item.data.get("diff", "") or ""))
        elif isinstance(item, ev.UsageEvent):
            self.info["tokens"] += item.input_tokens + item.output_tokens + item.cache_read_tokens + \
                item.cache_write_tokens
            self.info.update(cost=item.total_cost_usd, ctx=item.context_tokens, window=item.context_window)
        elif isinstance(item, ev.CompactionEvent):
            self.add_block(NoteBlock(f"context compacted ({item.kind}): {item.tokens_before:,} → "
                                     f"{item.tokens_after:,} tokens"))
        elif isinstance(item, ev.CheckpointEvent):
            files = ", ".join(item.files_changed[:5])
            self.add_block(NoteBlock(f"checkpoint {item.id}" + (f": {files}" if files else "") + " (/undo)"))
        elif isinstance(item, ev.ReviewEvent):
            self.add_block(NoteBlock(f"review: {item.verdict} ({len(item.findings)} findings)"))
        elif isinstance(item, ev.CommitEvent):
            self.add_block(NoteBlock(f"committed {item.sha[:10]}: {item.message.splitlines()[0]}", "ok"))
        elif isinstance(item, ev.ErrorEvent):
            self.add_block(NoteBlock(("error: " if item.fatal else "note: ") + item.message,
                                     "error" if item.fatal else ""))
        elif isinstance(item, ev.TurnEnd) and not replay:
            await self.end_stream()
            self.turn_ended(item.reason)

    def turn_ended(self, reason: str) -> None:
        self.busy = False
        self.info["state"] = "idle"
        self._resolve_ask(None)
        if reason != "done":
            self.add_block(NoteBlock(f"turn stopped: {reason}", "error" if reason != "interrupted" else ""))
        self.refresh_git()
        if self.queued:
            self.send(self.queued.pop(0))

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
                self.tool_blocks.pop(widget.call_id, None)
        self.hidden_blocks += len(dropped)
        conversation = self.conversation
        conversation.mount_all(keep)
        excess = len(conversation.children) - MAX_BLOCKS
        if excess > 0:
            protected = (self.prompt_widget, self.stream_block)
            old = [c for c in conversation.children[: excess + 2] if c not in protected][:excess]
            for child in old:
                if isinstance(child, ToolBlock):
                    self.tool_blocks.pop(child.call_id, None)
            self.hidden_blocks += len(old)
            conversation.remove_children(old)

    # ---- status -----------------------------------------------------------------------------------------------
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
        from coder.engine.commands import current_mode

        info = self.info
        mode = current_mode(self.session) if self.session is not None else (self.args.permission_mode or "…")
        pct = 100 * info["ctx"] / info["window"] if info["window"] else 0.0
        sandbox = str(info["sandbox"])
        text = Text()
        text.append(f"{info['state']}", style="bold yellow" if info["state"] != "idle" else "bold green")
        text.append(f" │ {info['model']} │ ")
        text.append(f"mode {mode}", style="bold magenta" if mode in ("auto", "auto-edit") else "bold")
        text.append(f" │ ctx {pct:.0f}% │ {_short(info['tokens'])} tok │ ${info['cost']:.4f} │ ")
        text.append(f"sandbox {sandbox[:24]}", style="green" if sandbox == "bubblewrap" else "red")
        text.append(f" │ {self.git.label()}")
        if self.hidden_blocks:
            text.append(f" │ {self.hidden_blocks} old blocks folded", style="dim")
        self.query_one(StatusBar).update(text)


def _home(path: str) -> str:
    """The workspace as people say it: ~/x for paths under HOME (shorter, and the same on every machine)."""
    import os

    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home != "/" and (path == home or path.startswith(home + "/")) else path


def _short(n: int) -> str:
    return f"{n / 1_000_000:.1f}M" if n >= 1_000_000 else f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def run_app(args: Any) -> int:
    """Entry point from `coder` (no subcommand)."""
    CoderApp(args).run()
    return 0
