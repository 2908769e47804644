"""The questions of the app: a permission request and the trust question, each with numbered choices that typing
cannot answer (the rules are coder/frontend/choices.py's, shared with the plain REPL).

A question stands between the conversation and the input, where it is seen whatever the conversation is scrolled
to. It takes the keyboard focus only when the person is not typing (the app offers it on every drain:
coder/tui/questions.py); until then the input keeps the focus, every key goes on into it, and the question says
"Tab answers it". A focused question answers keys only ARM_DELAY after it took the focus; a key before that, and
any key that is not one of its own (a letter, a space), is handed to the input with the focus: typed text is never
eaten, never misread (coder/frontend/choices.py has the rules). A click on a choice answers it: a click is deliberate.
A lasting grant is confirmed in the choices' place; the confirmation's keys are timed from its first frame
(`Chooser.drawn`, after the refresh that shows it) and each key by the moment Textual read it (`Key.time`), so keys
typed before it was seen never count, however late the app gets to them. A paste is typing: it goes to the input.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from coder.base.termsafe import visible
from coder.frontend.choices import (
    ARM_DELAY,
    CONFIRM_DWELL,
    HOLD,
    Chooser,
    Effect,
    Question,
    permission_question,
    trust_question,
    untrusted_means,
)
from coder.tui.blocks import DiffView, shown

if TYPE_CHECKING:
    from coder.commands.approval import Approval

HEIGHT = 0.7  # the share of the screen a question may take
#: keys that stay the app's while a question has the focus: Esc answers it (deny and stop, or not now), Tab moves on
APP_KEYS = ("escape", "tab", "shift+tab", "ctrl+c")


class ChoiceLine(Static):
    """One numbered choice; a click answers as its number does."""

    def __init__(self, number: int) -> None:
        super().__init__(classes="choice")
        self.number = number

    def on_click(self, event: events.Click) -> None:
        event.stop()
        for prompt in self.ancestors:
            if isinstance(prompt, ChoicePrompt):
                prompt.click(self.number)


class ChoicePrompt(Vertical, can_focus=True):
    DEFAULT_CSS = """
    ChoicePrompt { height: auto; border: round $warning; padding: 0 1; }
    ChoicePrompt:focus { border: round $accent; }
    ChoicePrompt #head { height: auto; }
    ChoicePrompt .what { color: $text; }
    ChoicePrompt .why, ChoicePrompt .hint { color: $text-muted; }
    ChoicePrompt .choice { color: $text; }
    ChoicePrompt .choice.current { color: $accent; text-style: bold; }
    """
    arm_delay = ARM_DELAY

    class Answered(Message):
        def __init__(self, prompt: ChoicePrompt, answer: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.answer = answer

    class Typed(Message):
        """A key that is not an answer (or came too early): the app puts it into the input."""

        def __init__(self, key: str, character: str | None) -> None:
            super().__init__()
            self.key = key
            self.character = character

    def __init__(self, question: Question) -> None:
        super().__init__()
        self.question = question
        self.answered = False
        self.chooser = Chooser(question)  # armed once the question has had the focus for a moment

    # ---- layout -----------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with VerticalScroll(id="head"):  # a long diff scrolls here: the choices below stay in view
            yield from self.compose_head()
        for number in range(1, len(self.question.choices) + 1):
            yield ChoiceLine(number)
        yield Static(classes="hint", id="hint")

    def compose_head(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        self.fit()
        self.redraw()

    def on_resize(self, event: events.Resize) -> None:
        self.fit()

    def fit(self) -> None:
        """The question takes at most HEIGHT of the screen, its choices and hint always whole."""
        room = int(self.app.size.height * HEIGHT) - len(self.question.choices) - 3  # the hint and the border
        for head in self.query("#head"):  # none while the app closes under a question being mounted
            head.styles.max_height = max(room, 3)

    def redraw(self) -> None:
        lines = self.question.lines()
        for line in self.query(ChoiceLine):
            shown_now = line.number <= len(lines)
            line.display = shown_now
            if shown_now:
                label, current = lines[line.number - 1]
                line.set_class(current, "current")
                line.update(Text(f"{'❯' if current else ' '} {visible(label)}"))
        for hint in self.query("#hint"):
            if isinstance(hint, Static):
                hint.update(self.hint())
        if self.chooser.confirming and self.chooser.confirm_at == float("inf"):
            self.call_after_refresh(self._confirmation_drawn)

    def _confirmation_drawn(self) -> None:
        self.chooser.drawn(time.monotonic())
        self.set_timer(CONFIRM_DWELL + 0.01, self.redraw)

    def hint(self) -> str:
        if self.answered:
            return "answered"
        if not self.has_focus:
            return "You are typing: keys stay in the input. Tab answers this question."
        if self.chooser.confirming and not self.chooser.ready(time.monotonic()):
            return "Read it first: a key typed now goes back to the choices"
        if not self.armed:
            return "…"
        return self.question.hint()

    # ---- focus and arming -------------------------------------------------------------------------------------
    @property
    def armed(self) -> bool:
        return self.has_focus and time.monotonic() >= self.chooser.armed_at

    def on_focus(self, event: events.Focus) -> None:
        self.chooser.armed_at = time.monotonic() + self.arm_delay
        self.redraw()
        self.set_timer(self.arm_delay + 0.01, self.redraw)

    def on_blur(self, event: events.Blur) -> None:
        self.chooser.armed_at = float("inf")
        self.chooser.leave()
        self.redraw()

    # ---- answering --------------------------------------------------------------------------------------------
    async def _on_key(self, event: events.Key) -> None:
        if event.key in APP_KEYS:
            return
        event.stop()
        event.prevent_default()
        # the key's time is when Textual read it, not when the app got to it: type-ahead stays type-ahead
        self.apply(self.chooser.key(event.key, event.character, min(event.time, time.monotonic())))
        if self.chooser.pending is not None:
            self.set_timer(HOLD + 0.01, self._release)

    def on_paste(self, event: events.Paste) -> None:
        """A paste is typing, never an answer: the text goes to the input (a confirmation goes away)."""
        event.stop()
        if self.chooser.confirming:
            self.apply(self.chooser.key("paste", None, time.monotonic()))
        self.post_message(self.Typed("paste", event.text))

    def _release(self) -> None:
        self.apply(self.chooser.release(time.monotonic()))

    def press(self, key: str) -> None:
        """A key given on purpose (Esc from the app; tests): the question takes it as it is, except that a
        confirmation's keys still wait for its dwell."""
        now = time.monotonic() if self.chooser.confirming else max(time.monotonic(), self.chooser.armed_at)
        self.apply(self.chooser.key(key, None, now))
        self.apply(self.chooser.release(float("inf")))

    def click(self, number: int) -> None:
        self.apply(self.chooser.click(number, time.monotonic()))

    def apply(self, effects: list[Effect]) -> None:
        for effect in effects:
            if effect.kind == "typed":
                self.post_message(self.Typed(effect.key, effect.character))
            elif effect.kind == "answer":
                self.answered = True
                self.post_message(self.Answered(self, effect.answer))
        if effects:
            self.redraw()
            wait = self.chooser.armed_at - time.monotonic()
            if 0 < wait < float("inf"):  # a confirmation went away: the choices count keys again in a moment
                self.set_timer(wait + 0.01, self.redraw)


class PermissionPrompt(ChoicePrompt):
    """`Allow bash: pytest -q?`, the command or the change as a diff, why it asks, then the choices."""

    def __init__(self, call_id: str, tool: str, args: dict[str, Any], reason: str, rule: str | None,
                 asker: str = "", agent: str = "", where: tuple[Path, Path] | None = None) -> None:
        from coder.commands.approval import approval  # start-up time: the tools load after the first paint

        self.view: Approval = approval(tool, args, rule, where)
        self.asker = asker  # how a background agent that asks is introduced ("agent a1 (writer: ...)")
        self.agent = agent  # its id; empty: the session asks
        super().__init__(permission_question(self.view.rules))
        self.call_id = call_id
        self.tool = tool
        self.args = args
        self.reason = reason
        self.rules = self.view.rules  # what "always" and "in this project" remember

    def compose_head(self) -> ComposeResult:
        view = self.view
        if self.asker:
            yield Static(Text(f"{visible(self.asker)} asks:", style="bold magenta"))
        yield Static(Text.assemble(("Allow ", "bold"), (visible(view.title), "bold yellow"), ("?", "bold")))
        if len(view.files) > 1:
            yield Static(shown(f"{len(view.files)} files: " + ", ".join(view.files)), classes="what")
        if view.diff:
            yield DiffView(view.diff)
        elif view.detail:
            yield Static(shown(view.detail), classes="what")
        if self.reason:
            yield Static(shown(self.reason), classes="why")


class TrustPrompt(ChoicePrompt):
    """The first-open question (coder/trust/decisions.py): what the repository would run, then not now or trust."""

    def __init__(self, request: Any, reason: str) -> None:
        super().__init__(trust_question())
        self.request = request
        self.reason = reason

    def compose_head(self) -> ComposeResult:
        yield Static(Text.assemble(("This repository is not trusted", "bold yellow"), f" ({visible(self.reason)})."))
        yield Static(shown(self.request.describe()), classes="what")
        yield Static(untrusted_means(self.request), classes="why")
