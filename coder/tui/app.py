"""The interactive app (Textual): a conversation view over one engine session.

The app is composed of parts, each a plain object handed the app and `state`, and nothing of another part (issue
34: it was six mixins reading each other's attributes; issue 48: the parts held each other). Textual's rule:
attributes down, messages up. A part that needs another to act posts a message (coder/tui/messages.py) and the
app's handler hands it to the part concerned, with what that part needs of the others as arguments; what more
than one part reads is in `state`, with the part that writes it named. The one part a part holds: the feed's
transcript (the blocks of one drain are drawn in order and mounted together at its end, issue 32; as messages they
would be drawn after the drain, each a dispatch, and out of order with the feed's own). The parts' class
(coder/tui/part.py) refuses any other such field when it is set; tests/tui/test_tui_wiring.py checks the source and
a running app too.

- `state` (coder/tui/state.py): what more than one part reads: the session, busy, the status figures;
- `status` (status.py): the status bar;
- `transcript` (transcript.py): the conversation's blocks;
- `questions` (questions.py, prompts.py): permission requests and the trust question, with numbered choices;
- `work` (work_view.py): the plan screen and the task list;
- `agents` (agents_part.py, agents_view.py): the session's subagents: their panel, screen and cost (issue 36);
- `feed` (feed.py): the engine's events drained into the transcript, and as messages to the parts above;
- `control` (control.py): opening, sending, interrupting, switching and closing the session, and its desktop
  notifications (app_notify.py);
- `commands` (commands_view.py): slash commands; `inputs` (inputs.py): completion and history;
  `keys` (keys.py): the app's keys.

The app itself lays the screen out and hands Textual's messages and key bindings to the part they concern.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import TextArea

from coder import __version__
from coder.frontend.history import InputHistory
from coder.frontend.typeahead import take_pending
from coder.host.links import open_link
from coder.tui import messages as msg
from coder.tui.agents_part import AgentsPart
from coder.tui.agents_view import AgentsPanel
from coder.tui.commands_view import CommandRunner
from coder.tui.control import Opener, SessionControl
from coder.tui.farewell import print_conversation
from coder.tui.feed import EventFeed
from coder.tui.inputs import InputAssist
from coder.tui.keys import KeyActions
from coder.tui.main_screen import MainScreen
from coder.tui.prompts import ChoicePrompt
from coder.tui.questions import QuestionArea, Questions
from coder.tui.state import AppState, StatusInfo
from coder.tui.status import StatusLine
from coder.tui.transcript import MAX_BLOCKS, Transcript
from coder.tui.widgets import AttachmentChips, CompletionList, Conversation, PromptInput, StatusBar
from coder.tui.work_view import TodoPanel, WorkView

__all__ = ["MAX_BLOCKS", "CoderApp", "run_app"]

M = TypeVar("M", bound=Message)


def _while_running(handler: Callable[[CoderApp, M], None]) -> Callable[[CoderApp, M], None]:
    """A part's message that arrives once the app is closing (its screen gone) is dropped: the session is closed by
    `SessionControl.shut_down`, nothing is left to draw."""

    @functools.wraps(handler)
    def handle(app: CoderApp, message: M) -> None:
        if app.is_running:
            handler(app, message)

    return handle


class CoderApp(App[None]):
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
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "ctrl_c", "interrupt / quit", priority=True),
        Binding("escape", "escape", "interrupt", priority=True),
        Binding("shift+tab", "cycle_mode", "mode", priority=True),
        Binding("ctrl+r", "history_search", "history", priority=True),
        Binding("ctrl+o", "expand_last", "expand the newest tool block", priority=True),
        Binding("ctrl+t", "transcript", "the whole session", priority=True),
        Binding("alt+z", "toggle_wrap", "wrap or scroll long lines", priority=True),
        Binding("ctrl+b", "background", "send the running command to the background", priority=True),
        Binding("ctrl+g", "agents", "the session's agents", priority=True),
    ]

    def __init__(self, args: Any, opener: Opener | None = None, history: InputHistory | None = None) -> None:
        super().__init__()
        self.history = history or InputHistory()
        self.state = AppState(args, StatusInfo(model=getattr(args, "model", None) or "…"))
        self.status = StatusLine(self, self.state)
        self.transcript = Transcript(self, self.state)
        self.questions = Questions(self, self.state)
        self.work = WorkView(self, self.state)
        self.agents = AgentsPart(self, self.state)
        self.feed = EventFeed(self, self.state, self.transcript)  # the one part handed another (above)
        self.control = SessionControl(self, self.state, self.history, opener)
        self.commands = CommandRunner(self, self.state)
        self.inputs = InputAssist(self, self.state, self.history)
        self.keys = KeyActions(self, self.state, self.history)
        self.first_paint_at: float | None = None

    # ---- what tests and the frontends read ----------------------------------------------------------------------
    @property
    def opened(self) -> Any:
        return self.state.opened

    @property
    def session(self) -> Any:
        return self.state.session

    @property
    def busy(self) -> bool:
        return self.state.busy

    @property
    def queue(self) -> Any:
        return self.feed.queue

    @property
    def conversation(self) -> Conversation:
        return self.transcript.conversation

    # ---- layout -----------------------------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        return MainScreen()  # arranged without a collection, so what it folds is freed (coder/tui/main_screen.py)

    def compose(self) -> ComposeResult:
        yield Conversation()
        yield TodoPanel()  # issue 19: the task list, visible while there is one
        yield QuestionArea()  # issue 32: a question stands here, seen whatever the conversation is scrolled to
        yield CompletionList()
        yield PromptInput(id="input")
        yield AttachmentChips()  # issue 47: what the message attaches, before it is sent
        yield AgentsPanel(id="agents")  # issue 36: the running agents, between the input and the status bar
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        self.transcript.note(f"coder {__version__} · /help lists commands · Ctrl+C twice quits")
        # the input has the focus now, not once the queue gets to it (`focus()`): the keys typed during the launch
        # are in that queue already, and go to the input in order, after those typed before coder took the terminal
        self.screen.set_focus(self.query_one(PromptInput))
        self.keys.type_ahead(take_pending())
        self.status.refresh()
        self.status.refresh_git()  # the branch, in a worker: "…" until then, never "no git" in a repository
        self.feed.start()
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        """The first frame is on the screen, the input takes keys: only now does the session open (issue 47), in
        a worker; what is typed meanwhile is queued (SessionControl.queue)."""
        self.first_paint_at = time.monotonic()
        self._open({})

    def on_resize(self, event: events.Resize) -> None:
        self.call_after_refresh(self.status.refresh)  # the bar is built for its width

    def on_unmount(self) -> None:
        self.control.stop_for_exit()
        self.questions.close()  # a waiting engine thread or opening worker (the trust question) goes on
        self.control.shut_down()

    # ---- the session: opening, switching (the order matters, so the app does it in one handler) -----------------
    def _open(self, override: dict[str, Any]) -> None:
        self.control.open(self.questions.ask, self.questions.ask_trust, override)

    async def on_session_opened(self, message: msg.SessionOpened) -> None:
        if not self.is_running:  # the app closed while the session opened: nothing else will close it
            self.control.abandon(message.opened)
            return
        await self.feed.drain()  # the replayed conversation and the session's first events come before anything typed
        self.control.opened(message.opened)

    @_while_running
    def on_open_failed(self, message: msg.OpenFailed) -> None:
        self.control.open_failed(message.reason)

    @_while_running
    def on_open_session(self, message: msg.OpenSession) -> None:
        self._open(message.override)

    @_while_running
    def on_switch_session(self, message: msg.SwitchSession) -> None:
        override = self.control.switching(message.resume)
        if override is None:
            return
        self.questions.close()  # an agent's question still waiting is denied, and so is any asked while agents stop
        self.control.close("switched")
        self.questions.resolve(None)  # an agent's question, answered by the close, leaves the screen
        self.questions.reopen()  # the next session asks again
        self.transcript.clear()
        self._open(override)

    @_while_running
    def on_submit(self, message: msg.Submit) -> None:
        self.control.submit(message.text)

    # ---- messages from the parts (coder/tui/messages.py): the app hands each to the part concerned ----------------
    @_while_running
    def on_turn_ended(self, message: msg.TurnEnded) -> None:
        self.questions.resolve_session(None)  # the session's question, if one is still up, goes
        self.control.turn_ended(message.reason)  # sends what was queued meanwhile
        if message.reason == "done":
            self._agent_news()  # or, idle, the news of agents that ended during the turn, unheard (issue 36)

    @_while_running
    def on_agent_news(self, message: msg.AgentNews) -> None:
        self._agent_news()

    def _agent_news(self) -> None:
        news = self.agents.news()
        if news:
            self.control.send(news)

    @_while_running
    def on_stop_turn(self, message: msg.StopTurn) -> None:
        if self.control.interrupt():
            self.questions.resolve_session(None)  # the interrupt answers the waiting engine thread

    @_while_running
    def on_stop_agent(self, message: msg.StopAgent) -> None:
        self.agents.stop(message.ident)  # stopped before anything else: then its question, if one waits, denied
        self.questions.withdraw(message.ident)

    @_while_running
    def on_run_command(self, message: msg.RunCommand) -> None:
        self.commands.run(message.text)

    async def on_command_done(self, message: msg.CommandDone) -> None:
        if not self.is_running:
            return
        await self.feed.drain()  # the events the command caused come first
        for block in self.commands.apply(message.name, message.result):
            self.transcript.add_block(block)
        self.call_later(self.control.command_done)  # after what it posted: what was typed after it goes on

    @_while_running
    def on_status_changed(self, message: msg.StatusChanged) -> None:
        self.status.refresh()
        if message.git:
            self.status.refresh_git()

    @_while_running
    def on_note(self, message: msg.Note) -> None:
        self.transcript.note(message.text, message.kind)

    @_while_running
    def on_add_block(self, message: msg.AddBlock) -> None:
        self.transcript.add_block(message.block)

    @_while_running
    def on_drained(self, message: msg.Drained) -> None:
        if not message.new:
            self.agents.tick()  # the running agents' clocks move while nothing arrives
        if message.new or self.state.running:
            self.status.refresh()  # the spinner and the elapsed time too
        if self.questions.offer_focus() and message.new:
            self.conversation.follow(force=True)  # a question must be seen, even by someone reading up

    @_while_running
    def on_asked(self, message: msg.Asked) -> None:
        agent = message.request.agent
        self.questions.show_permission(message.request, self.agents.title(agent) if agent else "")

    @_while_running
    def on_agent_event(self, message: msg.AgentEvent) -> None:
        self.agents.event(message.event, message.replay)

    @_while_running
    def on_work_event(self, message: msg.WorkEvent) -> None:
        self.work.event(message.event, message.replay)

    @_while_running
    def on_plan_answered(self, message: msg.PlanAnswered) -> None:
        self.questions.resolve(message.verdict)

    @_while_running
    def on_drop_reason(self, message: msg.DropReason) -> None:
        self.questions.drop_reason()

    @_while_running
    def on_set_wrap(self, message: msg.SetWrap) -> None:
        self.keys.set_wrap(message.wrap)

    # ---- messages from the widgets ----------------------------------------------------------------------------
    def open_url(self, url: str, *, new_tab: bool = True) -> None:
        """A link clicked in the conversation: opened through the door (coder/host/links.py), never by Textual's
        `webbrowser`, which would start the browser with coder's environment and outside the door."""
        why = open_link(url)
        if why is not None:
            self.notify(f"{why}: {url}", severity="warning")

    def on_prompt_input_submitted(self, message: PromptInput.Submitted) -> None:
        text = message.text.strip()
        if not text:
            return
        self.inputs.submitted()
        if self.state.reason_for is not None:  # the reason of a denial being typed
            self.questions.deny_with_reason(text)
            return
        self.conversation.follow(force=True)
        self.control.submitted(text)

    def on_prompt_input_special(self, message: PromptInput.Special) -> None:
        key = message.key
        if key in ("pageup", "pagedown", "ctrl+home", "ctrl+end"):
            self.keys.scroll(key)
        elif key == "tab" and not self.inputs.completion.is_open:
            self.keys.tab()
        else:
            self.inputs.special(key)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        if isinstance(event.text_area, PromptInput):
            self.inputs.changed()

    def on_choice_prompt_answered(self, message: ChoicePrompt.Answered) -> None:
        self.questions.answered(message.prompt, message.answer)

    def on_choice_prompt_typed(self, message: ChoicePrompt.Typed) -> None:
        self.keys.type_into_input(message.character if message.key != "enter" else None, message.key)

    async def on_key(self, event: events.Key) -> None:
        self.keys.unhandled(event)

    def on_app_focus(self, event: events.AppFocus) -> None:
        self.control.notifications.focus_changed(True)

    def on_app_blur(self, event: events.AppBlur) -> None:
        self.control.notifications.focus_changed(False)

    # ---- key bindings -----------------------------------------------------------------------------------------
    def action_ctrl_c(self) -> None:
        self.keys.ctrl_c()

    def action_escape(self) -> None:
        self.keys.escape()

    def action_cycle_mode(self) -> None:
        self.control.cycle_mode()

    def action_history_search(self) -> None:
        if not self.keys.history_search():  # not a modal's
            self.inputs.history_search()

    def action_expand_last(self) -> None:
        self.keys.expand_last()

    def action_transcript(self) -> None:
        self.keys.transcript_view()

    def action_toggle_wrap(self) -> None:
        self.keys.toggle_wrap()

    def action_background(self) -> None:
        self.keys.background(self.transcript.unfinished())

    def action_agents(self) -> None:
        self.agents.open_screen()


def run_app(args: Any) -> int:
    """Entry point from `coder` (no subcommand)."""
    app = CoderApp(args)
    app.control.freeze_heap = True
    app.run()
    # after the screen is restored: it stays in the scrollback
    print_conversation(app.control.conversation, app.control.last_session_id)
    return 0
