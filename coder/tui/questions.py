"""The questions the engine asks the person, and their answers: a permission request (the engine thread waits on a
future), the trust question (the opening worker waits), and the plan question's future (coder/tui/work_view.py
shows the plan). A part of the app (coder/tui/app.py).

The question stands in `#questions`, between the conversation and the input (coder/tui/prompts.py has the
rules of its keys). `offer_focus` runs on every drain: the question takes the focus once the person is not typing.
A lasting answer is announced in the conversation ("saved: allow bash(pytest*) for this session").

Background agents ask too (issue 36), from their own threads: one question stands at a time (`lock`: a second
asker waits until the first is answered), and `ask` itself posts the question to the feed, so the question on
screen is always the one whose answer is awaited. An agent's question says which agent asks; its "deny and stop"
stops that agent, and the session's interrupt or turn end leaves it standing.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from typing import Any

from textual.app import App
from textual.containers import Vertical

from coder.base import events as ev
from coder.frontend.calls import tool_title
from coder.frontend.choices import QUIET, permission_answer, saved_note
from coder.policy.base import PermissionAnswer
from coder.tui.messages import Note, StatusChanged, StopAgent, StopTurn
from coder.tui.part import Part
from coder.tui.prompts import ChoicePrompt, PermissionPrompt, TrustPrompt
from coder.tui.state import AppState
from coder.tui.widgets import PROMPT_PLACEHOLDER, PromptInput

REASON_PLACEHOLDER = "Why deny it? Enter sends the reason to the model (Esc denies and stops)"


class QuestionArea(Vertical):
    DEFAULT_CSS = "QuestionArea { height: auto; }"

    def __init__(self) -> None:
        super().__init__(id="questions")


class Questions(Part):
    """Writes the state's `question`, `answer`, `asker` and `reason_for` (coder/tui/state.py)."""

    def __init__(self, app: App[Any], state: AppState) -> None:
        super().__init__(app, state)
        self.lock = threading.Lock()  # one question at a time: the session's and its background agents'
        self.closed = False  # the app is closing: nothing more is asked

    @property
    def prompt(self) -> ChoicePrompt | None:
        """The question on screen."""
        return self.state.question

    # ---- asked from other threads -----------------------------------------------------------------------------
    def ask(self, request: ev.PermissionRequest) -> Any:
        """Called on an engine thread (the session's, or a background agent's); blocks until the question (or an
        interrupt) answers. The question goes up when the feed drains it (`show_permission`; a plan: coder/tui/
        work_view.py shows it from its event and answers with a PlanVerdict)."""
        with self.lock:
            if self.closed:
                return PermissionAnswer(False, message="the app is closing")
            future: Future[Any] = Future()
            self.state.answer, self.state.asker = future, request.agent
            if not isinstance(request, ev.PlanProposed):
                self.state.queue.append(("question", request))  # drawn in order with the events before it
            if (notifier := self.state.notifier) is not None:
                notifier.question(tool_title(request.tool, request.input))
            answer = future.result()
            self.state.asker = ""
        return answer if answer is not None else PermissionAnswer(False, message="interrupted by the user")

    def ask_trust(self, request: Any, reason: str) -> bool:
        """Called on the opening worker thread: the trust question, answered "not now" unless trusted."""
        future: Future[Any] = Future()
        self.state.answer = future
        self.app.call_from_thread(self.show, TrustPrompt(request, reason))
        return future.result() is True

    # ---- on the app's thread ----------------------------------------------------------------------------------
    def show_permission(self, event: ev.PermissionRequest, asker: str = "") -> None:
        """`asker`: how the agent that asks is introduced ("": the session's own question)."""
        future = self.state.answer
        if future is None or future.done() or self.state.asker != event.agent:
            return  # answered before it was drawn (an interrupt; the agent was stopped)
        opened = self.state.opened
        # where a replacement sits in its file; an agent's files are in its own tree, so not for an agent's call
        where = (opened.workspace, opened.session.parts.tool_ctx.cwd) if opened is not None and not asker else None
        self.show(PermissionPrompt(event.id, event.tool, event.input, event.reason, event.suggested_rule, asker,
                                   event.agent, where))

    def show(self, prompt: ChoicePrompt) -> None:
        if self.state.question is not None:
            self.state.question.remove()
        self.state.question = prompt
        self.app.query_one(QuestionArea).mount(prompt)
        self.app.post_message(StatusChanged())
        self.offer_focus()

    def offer_focus(self) -> bool:
        """Give a waiting question the focus when the person is not typing; True when it just took it. Checked
        on every drain, so a question that came mid-word takes the focus once the typing stops and the input is
        empty again."""
        prompt = self.state.question
        if prompt is None or prompt.answered or prompt.has_focus or not prompt.is_mounted or \
                self.state.reason_for is not None:
            return False
        box = self.app.query_one(PromptInput)
        if self.app.focused is not box and self.app.focused is not None:
            return False  # reading a block, or in a modal: leave the focus alone
        if box.text.strip() or time.monotonic() - box.last_edit_at < QUIET:
            return False  # typing, or a draft in the input: Tab answers; the question waits for a quiet, empty input
        prompt.focus()
        return True

    def answered(self, prompt: ChoicePrompt, answer: str) -> None:
        if isinstance(prompt, TrustPrompt):
            self.app.post_message(Note(saved_note(answer, []) or "not trusted: coder ignores what this repository "
                                       "defines (`coder trust` changes it)", "ok" if answer == "trust" else ""))
            self.resolve(answer == "trust")
            return
        assert isinstance(prompt, PermissionPrompt)
        if answer == "stop" and prompt.agent:  # an agent's question: that agent stops (and its question goes)
            self.app.post_message(StopAgent(prompt.agent))
            return
        if answer == "stop":
            self.app.post_message(StopTurn())  # the interrupt answers the waiting engine thread
            return
        if answer == "reason":  # the next line typed in the input is the reason the model hears
            self.state.reason_for = prompt
            box = self.app.query_one(PromptInput)
            box.placeholder = REASON_PLACEHOLDER
            box.focus()
            return
        session = self.state.session
        remember = getattr(session.parts.policy, "remember", None) if session is not None else None
        note = saved_note(answer, prompt.rules)
        if note:
            self.app.post_message(Note(note, "ok"))
        self.resolve(permission_answer(answer, prompt.rules, remember))

    def deny_with_reason(self, reason: str) -> None:
        self.app.post_message(Note(f"denied: {reason[:200]}"))
        self.resolve(permission_answer("reason", [], None, reason))

    def resolve_session(self, answer: Any) -> None:
        """The session's question, if one waits, is answered (an interrupt, the turn's end); an agent's stands."""
        if not self.state.asker:
            self.resolve(answer)

    def withdraw(self, ident: str) -> None:
        """Agent `ident` is being stopped: its question, if it waits, is answered (denied) and taken away."""
        if ident and self.state.asker == ident:
            self.resolve(None)

    def close(self) -> None:
        """The app (or the session, on /clear and /resume) is closing: the waiting thread goes on, and any later
        question is denied at once, until `reopen`."""
        self.closed = True
        self.release()

    def reopen(self) -> None:
        """The next session asks again."""
        self.closed = False

    def drop_reason(self) -> None:
        """Esc while a denial's reason is being typed: no reason is waited for (the question is answered by Esc)."""
        self.state.reason_for = None

    def release(self, answer: Any = None) -> None:
        """Answer the waiting thread (None: interrupted; the trust question: not trusted), nothing more: the app may
        be closing, with no screen left to tidy."""
        future, self.state.answer = self.state.answer, None
        if future is not None and not future.done():
            future.set_result(answer)

    def resolve(self, answer: Any) -> None:
        """Answer the waiting thread and take the question away."""
        self.release(answer)
        box = self.app.query_one(PromptInput)
        if self.state.reason_for is not None:
            self.state.reason_for = None
            box.placeholder = PROMPT_PLACEHOLDER
        prompt = self.state.question
        if prompt is not None:
            had_focus = prompt.has_focus
            prompt.remove()
            self.state.question = None
            if had_focus or self.app.focused is None:
                box.focus()
        self.app.post_message(StatusChanged())
