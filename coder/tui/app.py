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

import asyncio
import collections
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widget import Widget

from coder.base import events as ev
from coder.engine.options import options_from_args
from coder.tui.app_notify import NotifyActions
from coder.tui.commands_view import CommandActions
from coder.tui.common import GitState, InputHistory, tool_title
from coder.tui.inputs import InputHelpers
from coder.tui.keys import KeyActions
from coder.tui.view import MAX_BLOCKS, ConversationView
from coder.tui.widgets import (
    PROMPT_PLACEHOLDER,
    CompletionList,
    Conversation,
    NoteBlock,
    PermissionPrompt,
    PromptInput,
    StatusBar,
    ToolBlock,
)
from coder.tui.work_view import TodoPanel, WorkView

__all__ = ["MAX_BLOCKS", "CoderApp", "run_app"]
DRAIN_INTERVAL = 0.05
Opener = Callable[[Callable[[ev.Event], None], Callable[[Any], Any], Any], Any]


class CoderApp(NotifyActions, WorkView, ConversationView, CommandActions, InputHelpers, KeyActions, App):
    TITLE = "coder"
    CSS = """
    Screen { layout: vertical; }
    #conversation { height: 1fr; scrollbar-size-vertical: 1; }
    /* long lines of code and tool output wrap; with the app's `nowrap` class (/wrap, Alt+Z) they scroll */
    MarkdownFence { overflow-x: hidden; }
    MarkdownFence > Label { width: 1fr; }
    .nowrap MarkdownFence { overflow-x: auto; scrollbar-size-horizontal: 1; }
    .nowrap MarkdownFence > Label { width: auto; }
    .nowrap OutputView { overflow-x: auto; scrollbar-size-horizontal: 1; }
    .nowrap OutputView > Static { width: auto; }
    """
    BINDINGS = [
        Binding("ctrl+c", "ctrl_c", "interrupt / quit", priority=True),
        Binding("escape", "escape", "interrupt", priority=True),
        Binding("shift+tab", "cycle_mode", "mode", priority=True),
        Binding("ctrl+r", "history_search", "history", priority=True),
        Binding("ctrl+o", "expand_last", "expand the newest tool block", priority=True),
        Binding("ctrl+t", "transcript", "the whole session", priority=True),
        Binding("alt+z", "toggle_wrap", "wrap or scroll long lines", priority=True),
        Binding("ctrl+b", "background", "send the running command to the background", priority=True),
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
        self.tool_blocks: dict[str, list[ToolBlock]] = {}  # call id -> blocks awaiting a result
        self.ask_future: Future | None = None
        self.trust_future: Future | None = None
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
        self.turn_done = threading.Event()
        self.last_session_id: str | None = None
        self.last_turn: Any = None  # what is printed to the scrollback on quit (coder/tui/farewell.py)
        self.picked: str | None = None  # the prompt last taken from the history search
        self.reason_for: PermissionPrompt | None = None  # "deny, say why": the next line typed is the reason
        self.requeue = False  # the turn was interrupted: queued messages go back into the input, not out
        self.work_started = 0.0  # when the running turn or command began (the status bar counts from it)
        self.drain_lock = asyncio.Lock()

    # ---- layout -----------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Conversation()
        yield TodoPanel()  # issue 19: the task list, visible while there is one
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
    def conversation(self) -> Conversation:
        return self.query_one(Conversation)

    @property
    def session(self) -> Any:
        return self.opened.session if self.opened is not None else None

    # ---- opening, switching, closing the session --------------------------------------------------------------
    def open_session(self, **override: Any) -> None:
        self.info["state"] = "starting"
        self.run_worker(lambda: self._open_worker(override), thread=True, group="open")

    def _open_worker(self, override: dict[str, Any]) -> None:
        from coder.base.errors import CoderError

        buffered: list[ev.Event] = []
        sink: list[Callable[[ev.Event], None]] = [buffered.append]

        def on_event(event: ev.Event) -> None:
            sink[0](event)  # the buffer while opening, the app's queue afterwards

        try:
            if self.opener is not None:
                opened = self.opener(on_event, self.ask, override)
            else:
                from coder.engine.builder import open_session

                opened = open_session(options_from_args(self.args, **override), on_event, self.ask, self.ask_trust)
        except CoderError as exc:
            self.call_from_thread(self._open_failed, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - shown in the app rather than as a traceback over the screen
            self.call_from_thread(self._open_failed, f"internal error: {type(exc).__name__}: {exc}")
            return
        history: list[ev.Event] = []
        if opened.resumed:
            from coder.engine.history import stored_events

            history = stored_events(opened.store, opened.session.id)[: -len(buffered) or None]
        self.queue.append(("replay", history))
        self.queue.extend(buffered)
        sink[0] = self.queue.append
        self.call_from_thread(self._opened, opened)

    async def _opened(self, opened: Any) -> None:
        await self.drain()  # the replayed conversation and the session's first events come before anything typed
        self.opened = opened
        self.opened_at = time.monotonic()
        self.start_notifier(opened)
        self.info["state"] = "idle"
        self.refresh_status()
        self.refresh_git()
        if self.queued:
            self.send(self.queued.pop(0))

    def _open_failed(self, message: str) -> None:
        self.info["state"] = "no session"
        self.add_block(NoteBlock(f"coder could not start a session: {message}\n"
                                 "/doctor checks the machine and the config, /model lists the models "
                                 "(`/model PROVIDER:NAME` opens a session with one), /quit leaves.", "error"))
        self.refresh_status()

    def close_session(self, reason: str) -> None:
        if self.opened is None:
            return
        opened, self.opened = self.opened, None
        self.stop_notifier()
        try:
            from coder.tui.farewell import last_turn

            self.last_turn = last_turn(opened.session)
            kept = opened.finish(reason)
            self.last_session_id = opened.session.id if kept else None
        except Exception:  # noqa: BLE001 - closing must not keep the user from leaving
            pass

    def switch_session(self, resume: str | None) -> None:
        if self.busy:
            self.add_block(NoteBlock("Wait for the turn to end (Esc interrupts it) before switching.", "error"))
            return
        override: dict[str, Any] = {"resume": resume, "continue_last": False}
        if resume is None and self.session is not None:  # /clear keeps the model and the mode
            from coder.commands.modes import carry_over

            override.update(carry_over(self.session))
            self.args.model, self.args.permission_mode = override.get("model", self.args.model), \
                override["permission_mode"]
        self.close_session("switched")
        self.conversation.remove_children()
        self.tool_blocks.clear()
        self.hidden_blocks = 0
        self.info.update(tokens=0, cost=0.0, ctx=0)
        self.open_session(**override)

    def on_unmount(self) -> None:
        if self.trust_future is not None and not self.trust_future.done():
            self.trust_future.set_result(False)  # leaving while asked: not trusted, and the opening worker ends
        if self.session is not None and self.busy:
            self.session.interrupt()
            self._resolve_ask(None)
            self.turn_done.wait(5.0)  # let the turn stop cleanly before the session closes its tools
        self.close_session("done")

    # ---- input ------------------------------------------------------------------------------------------------
    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        text = message.text.strip()
        if not text:
            return
        box = self.query_one(PromptInput)
        # keys typed after Enter, before this message was handled, are the next message's start: keep them
        box.set_text(box.text[len(message.typed):] if box.text.startswith(message.typed) else "")
        self.query_one(CompletionList).close()
        box.completion_open = False
        if self.reason_for is not None and self.prompt_widget is self.reason_for:
            self.deny_with_reason(text)
            return
        self.history.add(text)
        self.hist_index = None
        self.conversation.follow(force=True)
        self.submit(text)

    def submit(self, text: str) -> None:
        from coder.commands.slash import is_command

        if is_command(text):
            self.run_command(text)
        elif self.session is None and self.info["state"] == "starting":
            self.queued.append(text)
            self.add_block(NoteBlock(f"queued (sent when the session is open): {text[:80]}"))
        elif self.session is None:
            self.add_block(NoteBlock("No session is open: fix the problem above, or /model SPEC, or /quit.", "error"))
        elif self.busy:
            self.queued.append(text)
            self.add_block(NoteBlock(f"queued (sent when this turn ends): {text[:80]}"))
        else:
            self.send(text)

    def send(self, text: str) -> None:
        self.busy = True
        self.work_started = time.monotonic()
        self.info.update(state="working", streamed=0)
        self.refresh_status()
        session = self.session
        done = threading.Event()
        self.turn_done = done

        def work() -> None:
            try:
                self.notify_turn_end(session.send(text).reason)
            except Exception as exc:  # noqa: BLE001 - an engine bug must not take the app (and the draft) down
                self.queue.append(ev.ErrorEvent(f"internal error: {type(exc).__name__}: {exc}", fatal=True))
                self.queue.append(ev.TurnEnd(session.stats.turns, "error"))
            finally:
                done.set()

        self.run_worker(work, thread=True, group="turn")

    # ---- keys -------------------------------------------------------------------------------------------------
    def interrupt(self) -> None:
        if self.session is None:
            return
        self.session.interrupt()
        self._resolve_ask(None)
        self.requeue = bool(self.queued)  # what was queued goes back into the input when the turn has stopped
        self.info["state"] = "interrupting"
        self.refresh_status()

    def action_cycle_mode(self) -> None:
        if self.session is None:
            return
        from coder.commands.modes import cycle_mode

        mode = cycle_mode(self.session)
        self.notify(f"mode: {mode}", timeout=1.5)
        self.refresh_status()

    def ask_trust(self, request: Any, reason: str) -> bool:
        """Called on the opening worker thread: shows the trust question and waits for `t` or `n`."""
        from coder.tui.trust_screen import TrustScreen

        future: Future = Future()
        self.trust_future = future
        self.call_from_thread(self.push_screen, TrustScreen(request, reason), future.set_result)
        return bool(future.result())

    # ---- permission prompts -----------------------------------------------------------------------------------
    def ask(self, request: ev.PermissionRequest) -> Any:
        """Called on the engine thread; blocks until the inline prompt (or an interrupt) answers."""
        from coder.policy.base import PermissionAnswer
        future: Future = Future()
        self.ask_future = future
        self.notify_question(tool_title(request.tool, request.input))
        answer = future.result()
        return answer if answer is not None else PermissionAnswer(False, message="interrupted by the user")

    def _resolve_ask(self, answer: Any) -> None:
        future, self.ask_future = self.ask_future, None
        if future is not None and not future.done():
            future.set_result(answer)
        boxes = self.query(PromptInput)  # none while the app closes
        if self.reason_for is not None:
            self.reason_for = None
            for box in boxes:
                box.placeholder = PROMPT_PLACEHOLDER
        if self.prompt_widget is not None:
            self.prompt_widget.remove()
            self.prompt_widget = None
            for box in boxes:
                box.focus()

    def on_permission_prompt_answered(self, message: PermissionPrompt.Answered) -> None:
        from coder.policy.base import PermissionAnswer

        prompt = message.prompt
        if message.choice == "stop":
            self.interrupt()
            return
        if message.choice == "reason":  # the next line typed in the input is the reason the model hears
            self.reason_for = prompt
            box = self.query_one(PromptInput)
            box.placeholder = "Why deny it? Enter sends the reason to the model (Esc denies and stops)"
            box.focus()
            return
        rules = prompt.rules
        if message.choice in ("always", "project") and self.session is not None:
            remember = getattr(self.session.parts.policy, "remember", None)
            for rule in rules[1:]:  # every file of a multi-file write; the answer carries the first
                if remember is not None:
                    remember(PermissionAnswer(True, message.choice if message.choice == "project" else "session",
                                              rule))
        first = rules[0] if rules else prompt.rule
        answers = {"once": PermissionAnswer(True), "always": PermissionAnswer(True, "session", first),
                   "project": PermissionAnswer(True, "project", first),
                   "deny": PermissionAnswer(False, message="the user denied this call")}
        self._resolve_ask(answers[message.choice])

    def deny_with_reason(self, reason: str) -> None:
        from coder.policy.base import PermissionAnswer

        self.reason_for = None
        self.query_one(PromptInput).placeholder = PROMPT_PLACEHOLDER
        self.add_block(NoteBlock(f"denied: {reason[:200]}"))
        self._resolve_ask(PermissionAnswer(False, message=f"the user denied this call and said: {reason}"))


def run_app(args: Any) -> int:
    """Entry point from `coder` (no subcommand)."""
    app = CoderApp(args)
    app.run()
    from coder.tui.farewell import print_last_turn

    print_last_turn(app.last_turn, app.last_session_id)  # after the screen is restored: it stays in the scrollback
    return 0
