"""Reading from the terminal at the plain REPL's prompt (LineReader): a message through prompt-toolkit on a
terminal (history, completion, the keys typed during the launch first), `input()` lines through a pipe; an answer
to a question with numbered choices, by the rules of coder/frontend/choices.py; a line answer to a question.
"""

from __future__ import annotations

import os
import select
import sys
import termios
import time
from collections.abc import Callable
from typing import Any

from coder.base.termsafe import visible
from coder.frontend.choices import ARM_DELAY, Chooser, Question
from coder.frontend.history import InputHistory
from coder.frontend.typeahead import take_pending
from coder.frontend.workspace import match_paths, project_files, word_at_end
from coder.repl.term import ESC, KEYS, SEQUENCE_GAP, split_keys


class LineReader:
    """prompt-toolkit when on a terminal, else `input()`; both read one (possibly multi-line) message."""

    def __init__(self, history: InputHistory, workspace_fn: Callable[[], Any], on_cycle: Callable[[], str]) -> None:
        self.history = history
        self.interactive = sys.stdin.isatty() and sys.stdout.isatty()
        self.session: Any = None
        self.typeahead = ""  # typed while the last turn ran: the next prompt starts with it
        self.prompting = False  # prompt-toolkit's prompt is on the screen, waiting for a message
        if self.interactive:
            self.session = self._prompt_session(workspace_fn, on_cycle)

    def _prompt_session(self, workspace_fn: Callable[[], Any], on_cycle: Callable[[], str]) -> Any:
        # lazy: prompt-toolkit only on a terminal (a pipe reads lines with input())
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import Completer, Completion
        from prompt_toolkit.history import History
        from prompt_toolkit.input.typeahead import store_typeahead
        from prompt_toolkit.input.vt100_parser import Vt100Parser
        from prompt_toolkit.key_binding import KeyBindings, KeyPress

        store = self.history

        class SharedHistory(History):
            def load_history_strings(self):  # newest first, as prompt-toolkit expects
                return reversed(store.entries)

            def store_string(self, string: str) -> None:
                store.add(string)

        files: list[str] = []

        class CoderCompleter(Completer):
            def get_completions(self, document, complete_event):
                text = document.text_before_cursor
                if text.startswith("/") and " " not in text:
                    # lazy: the commands load with the first `/` (on the completion thread, not under a key)
                    from coder.commands.slash import completions

                    for name, summary in completions(workspace_fn(), text[1:]):
                        yield Completion("/" + name, start_position=-len(text), display_meta=summary)
                    return
                word = word_at_end(text)
                if word.startswith("@"):
                    if not files:
                        files.extend(project_files(workspace_fn()))
                    for path in match_paths(files, word[1:]):
                        yield Completion("@" + path, start_position=-len(word))

        keys = KeyBindings()

        @keys.add("c-j")
        @keys.add("escape", "enter")
        def _newline(event) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("s-tab")
        def _cycle(event) -> None:
            on_cycle()
            event.app.invalidate()  # the prompt is a callable: it shows the new mode, the draft stays

        # completion runs on a thread: the first `/` imports the commands and the first `@` lists the project's
        # files, and the keys typed meanwhile must not wait for either (issue 47)
        session = PromptSession(history=SharedHistory(), completer=CoderCompleter(), key_bindings=keys,
                                complete_while_typing=True, complete_in_thread=True, enable_history_search=False)
        early = take_pending()  # typed before coder took the terminal: the first prompt reads it first
        if early:
            keys_typed: list[KeyPress] = []
            Vt100Parser(keys_typed.append).feed(early)
            store_typeahead(session.input, keys_typed)
        return session

    def above_prompt(self, show: Callable[[], None]) -> bool:
        """Run `show` (it prints) above the waiting prompt, from any thread: the prompt steps aside and comes back
        with what was typed in it. False when no prompt waits (the caller prints at the next one)."""
        if self.session is None or not self.prompting:
            return False
        from prompt_toolkit.application import run_in_terminal  # lazy: as in _prompt_session

        app = self.session.app
        if getattr(app, "loop", None) is None or not app.is_running:
            return False
        self._on_loop(lambda _: run_in_terminal(show))
        return True

    def _on_loop(self, call: Callable[[Any], object]) -> None:
        """Run `call(app)` on the waiting prompt's loop, from any thread (nothing when no prompt waits)."""
        app = self.session.app if self.session is not None else None
        loop = getattr(app, "loop", None)
        if app is not None and loop is not None and app.is_running:
            loop.call_soon_threadsafe(lambda: call(app))

    def refresh_prompt(self) -> None:
        """Draw the waiting prompt again (its text is a callable: the mode once the session is open)."""
        self._on_loop(lambda app: app.invalidate())

    def abort_prompt(self) -> None:
        """End the waiting prompt as if Enter was pressed on nothing (the caller has something to say first)."""
        self._on_loop(lambda app: app.exit(result="") if not app.future.done() else None)

    def read(self, prompt: Callable[[], str], on_ready: Callable[[], None] | None = None) -> str:
        """One message; raises EOFError at the end of input and KeyboardInterrupt on Ctrl+C. `on_ready` runs once
        the prompt is on the screen (prompt-toolkit's pre_run; through a pipe, before reading)."""
        if self.session is not None:
            from prompt_toolkit.input.typeahead import get_typeahead  # lazy: as in _prompt_session

            default, self.typeahead = self.typeahead, ""
            self.prompting = True
            try:
                # keys typed during the turn are not lost
                text = self.session.prompt(prompt, default=default, pre_run=on_ready)
            finally:
                self.prompting = False
            # keys typed right after Enter, read with it: the start of the next message (prompt-toolkit would
            # append them to the end of the next prompt's text, after what the turn's type-ahead put there); an
            # Enter among them keeps its line apart (issue 47: lines typed during the launch ran together)
            typed = get_typeahead(self.session.input)
            self.typeahead = "".join("\n" if k.data == "\r" else k.data for k in typed
                                     if k.data.isprintable() or k.data == "\r").rstrip("\n")
            return text
        if on_ready is not None:
            on_ready()
        sys.stdout.write(prompt())
        sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        text = line.rstrip("\n")
        if not sys.stdin.isatty():  # echo piped input so the transcript reads like a conversation
            sys.stdout.write(text + "\n")
        self.history.add(text)
        return text

    def ask_choice(self, question: Question, keep: Callable[[str], None],
                   show: Callable[[Question], None] | None = None, gone: Callable[[], bool] | None = None) -> str:
        """The answer to a question with numbered choices, on a terminal without Enter for most keys (the rules
        are coder/frontend/choices.py's: the keyboard must be quiet for ARM_DELAY first, a digit answers when
        no typing follows it, a lasting grant only through its confirmation, whose keys count once it has been on
        screen for CONFIRM_DWELL with none typed). Whatever was typing is type-ahead of the next message (handed
        to `keep`), never an answer. `show` prints the lines on offer when they change (a confirmation opens or
        goes). Ctrl+C stays SIGINT. `gone()` true: the question is no longer asked (its turn ended), "deny".

        Not a terminal (a pipe: a script answers, deliberately): a line, empty for the highlighted choice, a
        number, or the choice's word (y, a, p, n, d; t for trust)."""
        if not self.interactive:
            return self._line_choice(question)
        sys.stdout.write(visible(question.hint()) + " > ")
        sys.stdout.flush()
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
        mode = termios.tcgetattr(fd)
        mode[3] &= ~(termios.ICANON | termios.ECHO)
        mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, mode)
        chooser = Chooser(question, armed_at=time.monotonic() + ARM_DELAY, rearm=ARM_DELAY)
        try:
            while True:
                confirming = chooser.confirming
                due = chooser.due()
                if gone is not None and gone():
                    sys.stdout.write("(no longer asked: its turn is over)\n")
                    return "deny"
                wait = 0.5 if due is None else max(due - time.monotonic(), 0)
                ready, _, _ = select.select([fd], [], [], wait if gone is None else min(wait, 0.1))
                if ready:
                    data = os.read(fd, 64)
                    if data == ESC:
                        more, _, _ = select.select([fd], [], [], SEQUENCE_GAP)
                        if more:
                            data += os.read(fd, 64)
                    effects = []
                    for one in split_keys(data):
                        text = one.decode("utf-8", "ignore")
                        effects += chooser.key(KEYS.get(one) or text, text, time.monotonic())
                else:
                    effects = chooser.release(time.monotonic())
                typed = "".join(e.character or "" for e in effects if e.kind == "typed")
                keep("".join(ch for ch in typed if ch.isprintable()))
                if chooser.answered:
                    answer = chooser.answered
                    sys.stdout.write(("Esc" if answer == question.escape else
                                      "Yes, save" if chooser.confirming else question.current.label) + "\n")
                    return answer
                if any(e.kind == "moved" for e in effects):  # the highlight moved, or a confirmation came or went
                    self._redraw_choice(question, chooser, show if chooser.confirming != confirming else None)
        finally:
            termios.tcsetattr(fd, termios.TCSANOW, saved)
            sys.stdout.flush()

    @staticmethod
    def _redraw_choice(question: Question, chooser: Chooser, show: Callable[[Question], None] | None) -> None:
        """Say where the highlight is; with `show`, the lines on offer changed (a confirmation came or went): all
        of them. A confirmation's keys are timed from the moment it is printed."""
        sys.stdout.write("\n")
        if show is not None:
            show(question)
        else:
            label = next(text for text, current in question.lines() if current)
            sys.stdout.write(f"❯ {visible(label)}\n")
        if chooser.confirming and chooser.confirm_at == float("inf"):
            sys.stdout.write("Read it first: a key typed in the next second goes back to the choices. ")
        sys.stdout.write(f"{visible(question.hint())} > ")
        sys.stdout.flush()
        chooser.drawn(time.monotonic())

    def _line_choice(self, question: Question) -> str:
        words = {"y": "once", "yes": "once", "once": "once", "a": "always", "always": "always", "p": "project",
                 "project": "project", "n": "deny", "no": "deny", "deny": "deny", "d": "reason", "why": "reason",
                 "t": "trust", "trust": "trust"}
        answers = {c.answer for c in question.choices}
        while True:
            word = _read_line(visible(question.hint().replace("Esc:", "end of input:")) + " > ").lower()
            if not word:
                return question.current.answer
            if word.isdigit() and 1 <= int(word) <= len(question.choices):
                return question.choices[int(word) - 1].answer
            if words.get(word) in answers:
                return words[word]
            if word in ("n", "no") and "not_now" in answers:
                return "not_now"

    def ask(self, question: str) -> str:
        """One answer to a question printed as the prompt; the question can quote a rule made from the model's
        input, so its control characters are shown, not executed."""
        question = visible(question)
        if self.session is not None:
            # lazy: as in _prompt_session
            from prompt_toolkit import prompt
            from prompt_toolkit.key_binding import KeyBindings

            keys = KeyBindings()

            @keys.add("escape", eager=True)
            def _stop(event) -> None:  # Esc: deny and stop the turn, as in the app
                event.app.exit(exception=KeyboardInterrupt())

            return prompt(question, key_bindings=keys)
        return _read_line(question)


def _read_line(prompt: str) -> str:
    """One line from stdin without prompt-toolkit, after `prompt`; echoed when stdin is no terminal (a pipe), so
    a log reads as a dialogue."""
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    if not sys.stdin.isatty():
        sys.stdout.write(line.strip() + "\n")
    return line.strip()
