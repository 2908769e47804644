"""The plain REPL (`coder --plain`; automatic for pipes and TERM=dumb): the same session, commands and permission
prompts as the app, printed into the terminal's normal scrollback.

One thread: `Session.send` runs in the main thread and the permission prompt asks from inside it, so a Ctrl+C
(SIGINT) during a turn interrupts the turn cleanly, and a second one while it stops ends the program. The one
question asked from another thread is the network proxy's, about a host the turn's own command wants, while the
turn waits in that call; it goes away when the turn stops. On a terminal
the session opens on a thread of its own once the first prompt is up (issue 47: the prompt took keys only after the
engine, the tools and the model's SDK had loaded); the trust question, which needs the terminal, is asked before
the prompt, and what opening says is printed above the prompt when it is done. The first message waits for it. The input
prompt ends with `> ` so scripts and tests can wait for it. prompt-toolkit is used when stdin and stdout are a
terminal (history across sessions, `/` and `@path` completion, Ctrl+J new line, Shift+Tab mode, Ctrl+R search);
otherwise plain `input()` lines, so the REPL can be driven through a pipe.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from coder import __version__
from coder.base import events as ev
from coder.base.errors import CoderError
from coder.commands.line import is_command
from coder.engine.options import cwd_from_args, options_from_args
from coder.frontend.calls import tool_title
from coder.frontend.history import InputHistory
from coder.frontend.notify import Notifier, for_session
from coder.frontend.trust_first import ask_before_opening
from coder.policy.base import PermissionAnswer
from coder.repl import questions
from coder.repl.live import PREFIX
from coder.repl.printer import Printer, is_tty
from coder.repl.reader import LineReader
from coder.repl.term import KeyWatcher

QUIT_WINDOW = 2.0
#: seconds after a Ctrl+C during a turn before another one gives up on the turn stopping and leaves the REPL
STUCK_STOP = 3.0


class Repl:
    def __init__(self, args: Any, opener: Callable[..., Any] | None = None, out: Any = None) -> None:
        self.args = args
        self.opener = opener
        self.printer = Printer(out)
        self.opened: Any = None
        self.asking = threading.Lock()  # held while a question from another thread than the turn's is up
        self.history = InputHistory()
        self.reader = LineReader(self.history, lambda: self.opened.workspace if self.opened else
                                 cwd_from_args(args), self.cycle_mode)
        self.keys: Any = None  # the KeyWatcher while a turn runs on a terminal
        self.last_reason = "done"  # how the last turn ended: the session's status when the REPL is left
        self.leaving = False  # a Ctrl+C left a turn that did not stop (`send`): the REPL ends
        self.notifier: Notifier | None = None  # a turn ended, a question waits (issue 23): set once a session is open
        self.opening: threading.Thread | None = None  # the session opening in the background (a terminal)
        self.open_error: BaseException | None = None
        self.shown = threading.Lock()  # what opening said is printed once: above the prompt, or before the next
        self.pending: Callable[[], None] | None = None  # ... that print, until done

    # ---- session ----------------------------------------------------------------------------------------------
    def open(self, **override: Any) -> None:
        """Open the session here and now, and say what opening said."""
        self._open(override, self.ask_trust if self.reader.interactive else None)()

    def open_later(self) -> None:
        """On a terminal: the trust question now (it needs the terminal), the session on a thread once the first
        prompt is up (`start_opening`); what opening says is printed above the prompt, or before the next one."""
        answer = self._trust_first()

        def work() -> None:
            try:
                show = self._open({}, answer)
            except BaseException as exc:  # noqa: BLE001 - said by the main thread (a CoderError exits with its code)
                self.open_error = exc
                self.reader.abort_prompt()
                return
            self.pending = show
            if not self.reader.above_prompt(self.show_opened):
                return  # no prompt waits: the main thread prints it before the next one
            self.reader.refresh_prompt()  # the prompt shows the session's mode now

        self.opening = threading.Thread(target=work, name="repl-open", daemon=True)

    def start_opening(self) -> None:
        """The first prompt is on the screen: the session opens behind it."""
        if self.opening is not None and not self.opening.is_alive() and self.opening.ident is None:
            self.opening.start()

    def wait_opened(self) -> None:
        """The session is open (the first message waits for it) and what opening said is printed; raises what
        opening raised."""
        if self.opening is not None:
            self.start_opening()
            self.opening.join()
            self.opening = None
        if self.open_error is not None:
            error, self.open_error = self.open_error, None
            raise error
        self.show_opened()

    def show_opened(self) -> None:
        with self.shown:
            show, self.pending = self.pending, None
        if show is not None:
            show()

    def _trust_first(self) -> Callable[[Any, str], bool] | None:
        """The trust question before the prompt (the terminal is free), answered for the session that opens next:
        that answer holds only for what was shown (the same fingerprint), else the repository stays untrusted."""
        if self.opener is not None or getattr(self.args, "trust", None) is not None:
            return None
        return ask_before_opening(cwd_from_args(self.args), self.ask_trust)

    def _open(self, override: dict[str, Any], ask_trust: Callable[[Any, str], bool] | None) -> Callable[[], None]:
        """Open the session; returns what prints what opening said (a resumed conversation, notes), and where its
        later events go."""
        buffered: list[ev.Event] = []
        sink: list[Callable[[ev.Event], None]] = [buffered.append]

        def on_event(event: ev.Event) -> None:
            sink[0](event)

        if self.opener is not None:
            opened = self.opener(on_event, self.ask, override)
        else:
            from coder.engine.builder import open_session  # lazy: the prompt shows before the engine loads
            from coder.sandbox.shell import reserve_columns  # lazy: as open_session

            if self.reader.interactive:  # a command's lines are printed after `  12s │ `: its terminal is narrower
                reserve_columns(PREFIX)

            opened = open_session(options_from_args(self.args, **override), on_event, self.ask, ask_trust)
        history: list[ev.Event] = []
        if opened.resumed:
            from coder.engine.history import stored_events  # lazy: as open_session

            history = stored_events(opened.store, opened.session.id)[: -len(buffered) or None][-60:]

        def show() -> None:
            for event in history:
                self.printer.event(event, replay=True)
            if opened.resumed:
                self.printer.line("── resumed: earlier conversation above ──", "dim")
            for event in buffered:
                self.printer.event(event)
            sink[0] = self._event

        self.opened = opened
        self.notifier = for_session(opened, self.printer.raw if is_tty(sys.stdout) else None)
        return show

    def _event(self, event: ev.Event) -> None:
        """An event of the session. A background job that ends while the prompt waits for a message is said at
        once, above the prompt (issue 32: the note waited for the next turn); during a turn, the printer says it
        at the next line it prints."""
        self.printer.event(event)
        if isinstance(event, ev.BackgroundEnded):
            self.reader.above_prompt(self.printer.say_ended_jobs)

    def close(self, reason: str) -> None:
        if self.opened is None:
            return
        opened, self.opened = self.opened, None
        if self.notifier is not None:
            self.notifier.close()  # notification hooks still running finish first
        if opened.finish(reason) and reason != "switched":
            self.printer.line(f"Session {opened.session.id} is saved; `coder --resume {opened.session.id}` goes on "
                              "with it.", "dim")

    def mode(self) -> str:
        if self.opened is None:  # still opening: the mode asked for, else not known yet
            return getattr(self.args, "permission_mode", None) or "…"
        from coder.commands.modes import current_mode  # lazy: the banner shows before the engine's imports

        return current_mode(self.opened.session)

    def cycle_mode(self) -> str:
        if self.opened is None:
            return self.mode()
        from coder.commands.modes import cycle_mode  # lazy: as `mode`

        return cycle_mode(self.opened.session)

    def ask_trust(self, request: Any, reason: str) -> bool:
        """The first-open question (coder/repl/questions.py), before the prompt or as the session opens."""
        return questions.ask_trust(self.printer, self.reader, self._keep, request, reason)

    # ---- permission prompt (engine thread = main thread) -------------------------------------------------------
    def ask(self, request: ev.PermissionRequest) -> Any:
        if threading.current_thread() is not threading.main_thread():
            keys = self.keys
            if request.tool == "network" and not request.agent and keys is not None:
                # the session's own command wants a host: the proxy asks from its thread while the turn waits in
                # that call (issue 47's trial: it was refused unasked, "you refused it when asked"); the question
                # goes when the turn stops or ends, and the next prompt waits for it (`send`)
                with self.asking:
                    if self.keys is keys:
                        with keys.paused(), self.printer.asking():
                            return self._ask(request, lambda: self.keys is not keys or
                                             self.opened.session.cancel.is_set())
            # a background agent (issue 36): the terminal's reader is the session's, so it is not asked here; denied,
            # as headless (the app answers background agents' questions)
            return PermissionAnswer(False, message="The user cannot be asked from the background in the plain "
                                    "terminal; the call was denied. Say in your report what you needed.")
        # The key watcher steps aside before the question is printed: a key typed the moment the question shows
        # belongs to the question, not to the type-ahead of the next message.
        with self.keys.paused() if self.keys is not None else contextlib.nullcontext(), self.printer.asking():
            return self._ask(request)

    def _ask(self, request: ev.PermissionRequest, gone: Callable[[], bool] | None = None) -> Any:
        if self.notifier is not None:
            self.notifier.question(tool_title(request.tool, request.input))
        if isinstance(request, ev.PlanProposed):  # issue 19: approve the plan, or keep planning
            from coder.repl.work import ask_plan  # lazy: the plan's engine types load with a plan

            return ask_plan(lambda q: questions.print_choices(self.printer, q), self.reader, self._keep,
                            self.opened.session)
        return questions.ask_permission(self.printer, self.reader, self._keep, request, self.opened, gone)

    def _keep(self, text: str) -> None:
        """Keys typed while a question appeared: type-ahead of the next message, shown as typed."""
        if not text:
            return
        if self.keys is not None:
            self.keys.typeahead += text
            self.printer.typed(self.keys.typeahead)
        else:
            self.reader.typeahead += text
            self.printer.typed(self.reader.typeahead)

    # ---- the loop ---------------------------------------------------------------------------------------------
    def send(self, text: str) -> None:
        """Send what the person typed (or a command of theirs expanded to), with the files and images it names."""
        session = self.opened.session
        attached = self.opened.attach(text)  # only here: the person's words (coder/engine/mentions.py)
        stopped_at = [0.0]

        def on_sigint(*_: Any) -> None:
            """Ctrl+C stops the turn; pressed again while it stops, it is the same stop (issue 47: it raised into
            the engine mid-stop, which then took seconds to end and left the REPL). Only a turn that has not stopped
            STUCK_STOP after the first press is left by another one."""
            now = time.monotonic()
            if session.cancel.is_set() and now - stopped_at[0] >= STUCK_STOP:
                self.leaving = True
                raise KeyboardInterrupt
            if not session.cancel.is_set():
                stopped_at[0] = now
                session.interrupt()

        previous = signal.signal(signal.SIGINT, on_sigint)
        try:
            if self.reader.interactive:
                typed, self.reader.typeahead = self.reader.typeahead, ""  # typed right after the Enter
                self.printer.typed(typed)
                with KeyWatcher(session.interrupt, echo=self.printer.typed, on_background=session.background,
                                typeahead=typed) as self.keys:
                    try:
                        outcome = session.send(text, attached)
                    finally:
                        keys, self.keys = self.keys, None
                        with self.asking:  # a question from another thread (`ask`) has gone
                            pass
                self.reader.typeahead = keys.take_typeahead()
            else:
                outcome = session.send(text, attached)
            self.last_reason = outcome.reason  # the session's status if it is left now (not "done" when stopped)
            if self.notifier is not None:
                self.notifier.turn_ended(outcome.reason)
        finally:
            self.keys = None
            signal.signal(signal.SIGINT, previous)

    def command(self, line: str) -> bool:
        """Run a slash command; False when the REPL should end."""
        from coder.commands.slash import run_slash  # lazy: as `mode`

        result = run_slash(self.opened, line)
        if result.pick is not None and result.pick[2] and self.reader.interactive:
            return self.pick(*result.pick)  # `/resume`, `/model`: a numbered list, as the app's picker
        if result.text:  # Markdown, failed or not (a failing /commit lists its findings), red when it failed
            self.printer.markdown(result.text, "red" if result.error else "")
        if result.diff:
            self.printer.diff(result.diff)
        if result.quit:
            return False
        if result.new_session or result.resume:
            override: dict[str, Any] = {"resume": result.resume, "continue_last": False}
            if result.new_session:  # /clear keeps the model and the mode
                from coder.commands.modes import carry_over  # lazy: as `mode`

                override.update(carry_over(self.opened.session))
            self.close("switched")
            self.last_reason = "done"
            self.open(**override)
        elif result.send:
            self.send(result.send)
        return True

    def pick(self, command: str, title: str, items: list[tuple[str, str]]) -> bool:
        """A command's list, numbered (the newest first); a number runs `/command VALUE`, Enter cancels."""
        shown = items[:20]
        self.printer.line(f"{title}:", "bold")
        for number, (_, label) in enumerate(shown, 1):
            self.printer.line(f"  {number:>2}. {label}")
        if len(items) > len(shown):
            self.printer.line(f"  … and {len(items) - len(shown)} more (`/{command} VALUE` takes any)", "dim")
        try:
            reply = self.reader.ask("number (Enter cancels) > ").strip()
        except (KeyboardInterrupt, EOFError):
            return True
        if reply.isdigit() and 1 <= int(reply) <= len(shown):
            return self.command(f"/{command} {shown[int(reply) - 1][0]}")
        if reply:
            self.printer.line(f"not a number of the list: {reply}", "red")
        return True

    def ctrl_c_at_rest(self) -> float:
        """A Ctrl+C with no turn running: said, and the time it came (a second one within QUIT_WINDOW quits)."""
        self.printer.line("(Ctrl+C again to quit, or /quit)", "dim")
        return time.monotonic()

    def run(self) -> int:
        self.printer.line(f"coder {__version__} · /help lists commands · Esc or Ctrl+C stops a turn · Ctrl+C twice "
                          "or /quit leaves", "dim")
        if self.reader.interactive:
            self.open_later()
        else:
            self.open()
        last_ctrl_c = 0.0
        try:
            while True:
                try:
                    self.show_opened()
                    self.printer.say_ended_jobs()  # a background job that ended is said before the prompt
                    self.printer.clear_typed()  # the prompt shows what was typed during the turn itself
                    text = self.reader.read(lambda: f"{self.mode()}> ", on_ready=self.start_opening)
                    self.wait_opened()
                except KeyboardInterrupt:
                    if time.monotonic() - last_ctrl_c < QUIT_WINDOW:
                        break
                    last_ctrl_c = self.ctrl_c_at_rest()
                    continue
                except EOFError:
                    break
                text = text.strip()
                if not text:
                    continue
                try:
                    if is_command(text):
                        if not self.command(text):
                            break
                    else:
                        try:
                            self.send(text)
                            self.printer.line(self.printer.status(self.mode()), "dim")
                        except KeyboardInterrupt:
                            if self.leaving:
                                raise
                            # a press that came as the turn ended, once the turn's own handler was gone (the
                            # second of two quick ones on a loaded machine): as at the prompt, it never quits alone
                            last_ctrl_c = self.ctrl_c_at_rest()
                except CoderError as exc:
                    self.printer.line(f"coder: {exc}", "red")
                except Exception as exc:  # noqa: BLE001 - a bug is reported; the session and the prompt go on
                    self.printer.line(f"coder: internal error: {type(exc).__name__}: {exc}", "red")
        finally:
            if self.opening is not None:  # left before the session had opened: it is closed as any other
                with contextlib.suppress(Exception):
                    self.wait_opened()
            self.close(self.last_reason)
        return 0


def run_repl(args: Any) -> int:
    """Entry point from `coder --plain` (and for pipes / TERM=dumb)."""
    return Repl(args).run()
