"""The inline permission prompt of the app: it answers only deliberate keys (issue 24).

The bug it fixes: keys typed while a prompt appeared answered it (`a` of "also run lint" saved an "always" rule,
`n` of "now" denied a file creation). The rules now:

- The prompt takes the keyboard focus only when the person is not typing: the input is empty and no key edited
  it for QUIET seconds (the app checks on every drain, so a prompt that came mid-word takes the focus once the
  typing stops). Otherwise the input keeps the focus, the prompt says "Tab answers here", and every key goes on
  into the input.
- A focused prompt is *armed* only ARM_DELAY after it took the focus. A key pressed before that, and any key
  that is not an answer, is handed to the input (focus returns there): typed text is never eaten, never misread.
- Answers: Enter or y allow once (the marked default), a always (session rules: one per file for a multi-file
  write), p the same rules saved for the project, n deny, d deny and say why (the next line typed in the input is
  the reason the model hears), Esc deny and stop the turn (the app's Esc binding). A mouse click on a button
  answers at once (a click is deliberate).
"""

from __future__ import annotations

import time

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Static

from coder.base.termsafe import visible
from coder.commands.approval import Approval, approval

ARM_DELAY = 0.5  # seconds between the prompt taking the focus and its keys answering
QUIET = 0.6  # seconds without an edit of the input before a prompt may take the focus
ANSWER_KEYS = {"enter": "once", "y": "once", "a": "always", "p": "project", "n": "deny", "d": "reason"}


class PermissionPrompt(Vertical, can_focus=True):
    DEFAULT_CSS = """
    PermissionPrompt { height: auto; border: round $warning; padding: 0 1; margin: 0 0 1 0; }
    PermissionPrompt:focus { border: round $accent; }
    PermissionPrompt .what { color: $text; }
    PermissionPrompt .why, PermissionPrompt .hint { color: $text-muted; }
    PermissionPrompt Horizontal { height: auto; }
    PermissionPrompt Button { margin: 0; min-width: 0; }  /* the whole row fits 80 columns */
    """
    arm_delay = ARM_DELAY

    class Answered(Message):
        def __init__(self, prompt: PermissionPrompt, choice: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.choice = choice

    class Typed(Message):
        """A key that is not an answer (or came too early): the app puts it into the input."""

        def __init__(self, key: events.Key) -> None:
            super().__init__()
            self.key = key.key
            self.character = key.character

    def __init__(self, call_id: str, tool: str, args: dict, reason: str, rule: str | None) -> None:
        super().__init__()
        self.call_id = call_id
        self.tool = tool
        self.args = args
        self.reason = reason
        self.view: Approval = approval(tool, args, rule)
        self.rule = rule
        self.rules = self.view.rules  # what "always" and "in this project" remember
        self.answered = False
        self.armed_at: float | None = None

    # ---- layout -----------------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        from coder.tui.widgets import DiffView, shown

        view = self.view
        yield Static(Text.assemble(("Allow ", "bold"), (visible(view.title), "bold yellow"), ("?", "bold")))
        if len(view.files) > 1:
            yield Static(shown(f"{len(view.files)} files: " + ", ".join(view.files)), classes="what")
        if view.diff:
            yield DiffView(view.diff)
        elif view.detail:
            yield Static(shown(view.detail), classes="what")
        if self.reason:
            yield Static(shown(self.reason), classes="why")
        with Horizontal():  # short labels: the row fits 80 columns; the hint line below says the rest
            yield _button("Allow once \\[Enter]", "once", "success")
            if self.rules:
                yield _button("Always \\[a]", "always", "default")
                yield _button("Project \\[p]", "project", "default")
            yield _button("Deny \\[n]", "deny", "error")
            yield _button("Why \\[d]", "reason", "default")
            yield _button("Stop \\[Esc]", "stop", "default")
        if self.rules:
            yield Static(shown(f"a / p remember: {view.rules_label()} (this session / this project)"),
                         classes="why")
        yield Static(self._hint(), classes="hint", id="hint")

    def _hint(self) -> str:
        if self.answered:
            return "answered"
        if not self.has_focus:
            return "You are typing: keys stay in the input. Tab answers this prompt."
        if not self.armed:
            return "…"
        return "Enter or y allows once · n denies · d denies and tells the model why · Esc denies and stops"

    def refresh_hint(self) -> None:
        for hint in self.query("#hint"):
            hint.update(self._hint())  # type: ignore[attr-defined]

    # ---- focus and arming -------------------------------------------------------------------------------------
    @property
    def armed(self) -> bool:
        return self.has_focus and self.armed_at is not None and time.monotonic() >= self.armed_at

    def on_focus(self, event: events.Focus) -> None:
        self.armed_at = time.monotonic() + self.arm_delay
        self.refresh_hint()
        self.set_timer(self.arm_delay + 0.01, self.refresh_hint)

    def on_blur(self, event: events.Blur) -> None:
        self.armed_at = None
        self.refresh_hint()

    # ---- answering --------------------------------------------------------------------------------------------
    async def _on_key(self, event: events.Key) -> None:
        if event.key in ("escape", "tab", "shift+tab", "ctrl+c"):
            return  # the app's bindings: Esc denies and stops, Tab moves on
        event.stop()
        event.prevent_default()
        choice = ANSWER_KEYS.get(event.key)
        if choice is not None and self.armed:
            self.action_answer(choice)
        elif event.is_printable or event.key in ("backspace", "enter"):
            self.post_message(self.Typed(event))  # too early, or not an answer: it was typing

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(event.button.id or "deny")

    def action_answer(self, choice: str) -> None:
        if self.answered or (choice in ("always", "project") and not self.rules):
            return
        self.answered = True
        self.refresh_hint()
        self.post_message(self.Answered(self, choice))


def _button(label: str, ident: str, variant: str) -> Button:
    button = Button(label, id=ident, variant=variant, compact=True)  # type: ignore[arg-type]
    button.can_focus = False  # the prompt keeps the focus: a key never presses a button by surprise
    return button
