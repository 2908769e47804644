"""The app's session: opening it after the first paint, sending messages (queued while a turn runs), interrupting,
switching (/clear, /resume) and closing. A part of the app (coder/tui/app.py).

Threads: `Session.send` blocks, so it runs in a worker thread, and so does opening (config, store, provider SDK,
tools): the screen is up and the input takes keys before anything heavy loads. Events opening emits are buffered
and handed to the feed with the replayed conversation of a resumed session, before anything typed.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from typing import Any

from textual.app import App

from coder.base import events as ev
from coder.commands.line import is_command, parse
from coder.frontend.history import InputHistory
from coder.tui.app_notify import Notifications
from coder.tui.farewell import Conversation, read_conversation
from coder.tui.messages import Note, OpenFailed, RunCommand, SessionOpened, StatusChanged
from coder.tui.part import Part
from coder.tui.state import AppState
from coder.tui.widgets import PromptInput

#: net allocations between two young collections of the collector, once the app is up (Python's default: 700)
GC_YOUNG = 10_000

#: opens a session for the app (tests pass their own): (on_event, ask, override) -> Opened
Opener = Callable[[Callable[[ev.Event], None], Callable[[Any], Any], dict[str, Any]], Any]
#: how the engine asks the person (coder/tui/questions.py `ask`, `ask_trust`): the app hands them to `open`
Ask = Callable[[Any], Any]
AskTrust = Callable[[Any, str], bool]


def needs_no_session(text: str) -> bool:
    """/quit, /wrap and `/model NAME` act at once, even while the session opens (CommandRunner.run)."""
    name, arg = parse(text) if is_command(text) else ("", "")
    return name in ("quit", "wrap") or (name == "model" and bool(arg.strip()))


class SessionControl(Part):
    """Writes the state's `opened`, `busy`, `queued`, `requeue`, `notifier`. What the other parts do when a
    session opens, switches or closes, the app does around these methods (coder/tui/app.py)."""

    def __init__(self, app: App[Any], state: AppState, history: InputHistory, opener: Opener | None) -> None:
        super().__init__(app, state)
        self.history = history
        #: the terminal's focus and the desktop notifier: the session's (started when it opens, stopped when it closes)
        self.notifications = Notifications(app)
        self.opener = opener
        self.turn_done = threading.Event()
        #: freeze the heap once the first session is open (run_app sets it; tests leave their process alone)
        self.freeze_heap = False
        self.opened_at: float | None = None
        self.last_session_id: str | None = None  # printed on quit: how to resume it
        #: how the last turn ended: the session's status when the app quits after it (issue 47: an interrupted
        #: turn's session was stored as "done")
        self.last_reason = "done"
        #: what is printed to the scrollback on quit (coder/tui/farewell.py), read as the session closes
        self.conversation: Conversation | None = None
        #: a queued command is running: the queue goes on when it is done (`command_done`)
        self.command_pending = False

    # ---- opening ----------------------------------------------------------------------------------------------
    def open(self, ask: Ask, ask_trust: AskTrust, override: dict[str, Any]) -> None:
        """Open a session in a worker (at start-up, on /model SPEC without one, on /clear and /resume); its
        figures start from zero."""
        state = self.state
        state.info.state = "starting"
        state.info.tokens, state.info.cost, state.info.ctx = 0, 0.0, 0
        self.last_reason = "done"
        self.app.run_worker(lambda: self._open_worker(ask, ask_trust, override), thread=True, group="open")

    def _open_worker(self, ask: Ask, ask_trust: AskTrust, override: dict[str, Any]) -> None:
        from coder.base.errors import CoderError  # lazy, as the engine below: after the first paint

        args = self.state.args
        buffered: list[ev.Event] = []
        sink: list[Callable[[ev.Event], None]] = [buffered.append]

        def on_event(event: ev.Event) -> None:
            sink[0](event)  # the buffer while opening, the feed's queue afterwards

        try:
            if self.opener is not None:
                opened = self.opener(on_event, ask, override)
            else:
                # lazy, in this worker: the trust question before the engine's imports, not after them (issue 47)
                from coder.engine.options import cwd_from_args
                from coder.frontend.trust_first import ask_before_opening

                if getattr(args, "trust", None) is None:
                    ask_trust = ask_before_opening(cwd_from_args(args), ask_trust) or ask_trust
                # lazy: the heaviest of all, in this worker, after the trust question
                from coder.engine.builder import open_session
                from coder.engine.options import options_from_args

                opened = open_session(options_from_args(args, **override), on_event, ask, ask_trust)
        except CoderError as exc:
            self.app.post_message(OpenFailed(str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - shown in the app rather than as a traceback over the screen
            self.app.post_message(OpenFailed(f"internal error: {type(exc).__name__}: {exc}"))
            return
        from coder.engine.history import stored_events  # lazy: as open_session

        history: list[ev.Event] = []
        if opened.resumed:
            history = stored_events(opened.store, opened.session.id)[: -len(buffered) or None]
        queue = self.state.queue
        queue.append(("replay", history))
        queue.extend(buffered)
        sink[0] = queue.append
        self.app.post_message(SessionOpened(opened))  # the app drains the queue, then hands it to `opened`

    def opened(self, opened: Any) -> None:
        """The session is open, its replayed conversation and first events drawn (the app drained them first:
        they come before anything typed)."""
        self.state.opened = opened
        self.opened_at = time.monotonic()
        if self.freeze_heap:
            # What is alive now (Textual, the engine, the SDK, their modules: ~240,000 objects) lives as long as
            # the app; frozen, the collector no longer walks it (a full collection of it: ~150 ms of CPU, in one
            # pass of the loop or holding the engine's thread, a key's wait). Young collections come every
            # GC_YOUNG allocations instead of 700, and the full ones with them: 2 in a run of 2,000 tool calls
            # instead of 122 (issue 32, round 3; benchmarks/tui.py)
            gc.freeze()
            gc.set_threshold(GC_YOUNG, *gc.get_threshold()[1:])
            self.freeze_heap = False
        self.state.notifier = self.notifications.start(opened)
        self.state.info.state = "idle"
        self.app.post_message(StatusChanged(git=True))
        self.next_queued()

    def abandon(self, opened: Any) -> None:
        """The app closed while this session opened: it is closed, as the app's would have been."""
        self.state.opened = opened
        self.close(self.last_reason)

    def open_failed(self, message: str) -> None:
        self.state.info.state = "no session"
        self.app.post_message(Note(
            f"coder could not start a session: {message}\n/doctor checks the machine and the config, /model lists "
            "the models (`/model PROVIDER:NAME` opens a session with one), /quit leaves.", "error"))
        self.app.post_message(StatusChanged())

    # ---- closing and switching --------------------------------------------------------------------------------
    def close(self, reason: str, quitting: bool = False) -> None:
        """Close the session (the app has closed the questions first: an agent's question still waiting is denied,
        and so is any asked while agents stop)."""
        opened, self.state.opened = self.state.opened, None
        if opened is None:
            return
        self.notifications.stop()
        self.state.notifier = None
        try:
            if quitting:  # the app is quitting: the conversation goes to the scrollback
                self.conversation = read_conversation(opened)
            kept = opened.finish(reason)
            self.last_session_id = opened.session.id if kept else None
        except Exception:  # noqa: BLE001 - closing must not keep the user from leaving
            pass

    def switching(self, resume: str | None) -> dict[str, Any] | None:
        """/clear (resume None) or /resume ID: what the next session opens with; None while a turn runs. The app
        closes this one and opens that (coder/tui/app.py `on_switch_session`)."""
        state = self.state
        if state.busy:
            self.app.post_message(Note("Wait for the turn to end (Esc interrupts it) before switching.", "error"))
            return None
        override: dict[str, Any] = {"resume": resume, "continue_last": False}
        session = state.session
        if resume is None and session is not None:  # /clear keeps the model and the mode
            from coder.commands.modes import carry_over  # lazy: the commands' imports come after the first paint

            override.update(carry_over(session))
            state.args.model = override.get("model", state.args.model)
            state.args.permission_mode = override["permission_mode"]
        return override

    def stop_for_exit(self) -> None:
        """The app is closing: the turn is stopped (then the app answers a waiting question and `shut_down`)."""
        session = self.state.session
        if session is not None and self.state.busy:
            session.interrupt()

    def shut_down(self) -> None:
        """The app is closing, the turn stopped and a waiting question answered: the session closes."""
        session = self.state.session
        if session is not None and self.state.busy:
            self.turn_done.wait(5.0)  # let the turn stop cleanly before the session closes its tools
        self.close(self.last_reason, quitting=True)

    # ---- messages ---------------------------------------------------------------------------------------------
    def submitted(self, text: str) -> None:
        """A line from the input, a message or a command (the reason of a denial is the app's to hand to Questions)."""
        self.history.add(text)
        self.submit(text)

    def submit(self, text: str) -> None:
        state = self.state
        if state.session is None and state.info.state == "starting" and not needs_no_session(text):
            self.queue(text)
        elif is_command(text):
            self.app.post_message(RunCommand(text))
        elif state.session is None:  # the message stays in the input (the trial: it was cleared, ↑ brought it back)
            box = self.app.query_one(PromptInput)
            if not box.text.strip():
                box.set_text(text)
            self.app.post_message(Note("No session is open: fix the problem above, or /model SPEC, or /quit. Your "
                                       "message stays in the input.", "error"))
        elif state.busy:
            state.queued.append(text)
            self.app.post_message(Note(f"queued (sent when this turn ends): {text[:80]}"))
        else:
            self.send(text, typed=True)

    def queue(self, text: str) -> None:
        """A message or a command typed before the session is open: kept, and sent or run in order once it is
        (`next_queued`), never to a session half built."""
        self.state.queued.append(text)
        self.command_pending = False  # a queued command that found the session gone waits here again
        what = "run" if is_command(text) else "sent"
        self.app.post_message(Note(f"queued ({what} when the session is open): {text[:80]}"))

    def next_queued(self) -> None:
        """What was typed while the session opened or a turn ran, in the order typed: a message is sent (the next
        item waits for its turn to end), a command runs (the next item waits for its result: the app calls
        `command_done` once it is shown)."""
        state = self.state
        if state.busy or state.session is None or not state.queued or self.command_pending:
            return
        text = state.queued.pop(0)
        if is_command(text):
            self.command_pending = True
            self.app.post_message(RunCommand(text))
        else:
            self.send(text, typed=True)

    def command_done(self) -> None:
        """A command has run (its result applied, or it needed no worker): what was typed after it goes on."""
        self.command_pending = False
        self.next_queued()

    def send(self, text: str, typed: bool = False) -> None:
        """Run a turn for `text`: what the person `typed` (or a command of theirs expanded to) attaches the files
        and images it names, read in the turn's thread; anything else (agents' news) attaches nothing."""
        state = self.state
        session, opened = state.session, state.opened
        if session is None:
            return
        state.busy = True
        state.work_started = time.monotonic()
        state.info.state, state.info.streamed = "working", 0
        self.app.post_message(StatusChanged())
        done = threading.Event()
        self.turn_done = done
        queue = state.queue

        def work() -> None:
            try:
                attached = opened.attach(text) if typed and opened is not None else None
                self.notifications.turn_ended(session.send(text, attached).reason)
            except Exception as exc:  # noqa: BLE001 - an engine bug must not take the app (and the draft) down
                queue.append(ev.ErrorEvent(f"internal error: {type(exc).__name__}: {exc}", fatal=True))
                queue.append(ev.TurnEnd(session.stats.turns, "error"))
            finally:
                done.set()

        self.app.run_worker(work, thread=True, group="turn")

    def interrupt(self) -> bool:
        """Stop the running turn; False without a session (the app then answers the session's question)."""
        state = self.state
        if state.session is None:
            return False
        state.session.interrupt()
        state.requeue = bool(state.queued)  # what was queued goes back into the input when the turn has stopped
        state.info.state = "interrupting"
        self.app.post_message(StatusChanged())
        return True

    def turn_ended(self, reason: str) -> None:
        """The turn ended (the app has answered the session's question, if one was still up)."""
        self.last_reason = reason
        state = self.state
        state.busy = False
        state.info.state = "idle"
        if reason != "done":
            self.app.post_message(Note(f"turn stopped: {reason}", "error" if reason != "interrupted" else ""))
        self.app.post_message(StatusChanged(git=True))
        requeue, state.requeue = state.requeue, False
        if state.queued and requeue:
            self.restore_queued()
        else:
            self.next_queued()

    def restore_queued(self) -> None:
        """An interrupted turn: what was queued goes back into the input (before any draft), visibly, and Enter
        sends it. Interrupting means "stop"; sending the next message on its own would not be what was asked."""
        box = self.app.query_one(PromptInput)
        queued, self.state.queued = self.state.queued, []
        box.set_text("\n".join([*queued, box.text] if box.text.strip() else queued))
        box.focus()
        self.app.post_message(Note(f"interrupted: the queued message{'s are' if len(queued) > 1 else ' is'} back "
                                   "in the input (Enter sends)"))

    def cycle_mode(self) -> None:
        session = self.state.session
        if session is None:
            return
        from coder.commands.modes import cycle_mode  # lazy: the commands' imports come after the first paint

        self.app.notify(f"mode: {cycle_mode(session)}", timeout=1.5)
        self.app.post_message(StatusChanged())
