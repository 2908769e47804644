"""Questions typing cannot answer (issues 32 and 47): the numbered choices of a permission request and of the trust
question, which one is the safe default, which grant something lasting, and how keys pick among them.

A stray key once saved an "always" rule: `a` of "also run lint", typed while a prompt appeared, answered it; then
`3` and Enter, typed 50 ms apart by someone answering the model's last question, saved a project rule. The rules
both interactive frontends now follow:

- Choices are numbered, as in Claude Code; the highlight starts on the safe one (`Question.default`: allow once
  for a tool call, "not now" for the trust question).
- Keys answer only once the question has been in front of the person for ARM_DELAY (in the app: has had the
  focus that long) and the keyboard has been quiet for QUIET. Anything typed before that is typing: it goes to
  the input (the REPL: to the next message's type-ahead).
- A digit answers its choice once no other key followed it for HOLD (a typist at 120 ms a key is typing "2 more
  tests", and the digit goes to the input with the rest), or at once when Enter follows it. Letters are never
  answers. Enter answers the highlighted choice; Up/Down move the highlight; Esc gives `Question.escape`.
- **No key sequence grants anything lasting.** A choice that outlives this question (`Choice.grants`: an "always"
  rule, a trusted repository) is only picked by its digit, an arrow or a click; Enter on it opens a confirmation
  in its place ("No, go back" highlighted, "Yes, save: allow bash(pytest*) in this project" below it). The
  confirmation counts keys only once it has been drawn (`Chooser.drawn`) and CONFIRM_DWELL has passed with no key
  at all; any key before that (type-ahead, a burst, a held key, a paste) takes it away again, back to the choices
  on their safe one, and what was typing goes to the input. Then ↓ and Enter (or a click on "Yes, save") save it:
  two more keys, after a pause, neither of them a digit or a letter. A typist answering the model with `3` and
  Enter, with or without more, gets the confirmation at most and never a rule; a key held down keeps it from
  ever counting keys.
- What a lasting answer saved is announced (`saved_note`): "saved: allow bash(python3 -m pytest*) for this session".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coder.policy.base import PermissionAnswer

ARM_DELAY = 0.5  # seconds a question must have been in front of the person before its keys answer
QUIET = 0.6  # seconds without a key typed before a question takes the keyboard
HOLD = 0.35  # a digit answers when no key followed it this long (a typist at 120 ms a key is never so slow)
#: seconds a lasting grant's confirmation must have been on screen, with no key typed, before its keys count
CONFIRM_DWELL = 1.0
BACK = "No, go back to the choices"


@dataclass(frozen=True)
class Choice:
    answer: str  # once | always | project | deny | reason (permission); trust | not_now (trust)
    label: str
    #: what it grants beyond this question ("allow bash(pytest*) in this project"); "" for nothing lasting.
    #: A lasting choice is answered only through its confirmation.
    grants: str = ""

    @property
    def lasting(self) -> bool:
        return bool(self.grants)


@dataclass
class Question:
    """The choices on offer and the highlight; `press` turns a key into an answer. While `confirming` a lasting
    choice, the two lines on offer are BACK and "Yes, save: ..." (`save`: the highlight is on the second)."""

    choices: list[Choice]
    default: int = 0  # the safe choice, highlighted first
    escape: str = "deny"  # what Esc answers
    highlight: int = field(default=-1)
    confirming: Choice | None = None
    save: bool = False

    def __post_init__(self) -> None:
        if self.highlight < 0:
            self.highlight = self.default

    @property
    def current(self) -> Choice:
        return self.choices[self.highlight]

    def lines(self) -> list[tuple[str, bool]]:
        """What is on offer now, each line with whether it is highlighted."""
        if self.confirming is not None:
            return [(BACK, not self.save), (f"Yes, save: {self.confirming.grants}", self.save)]
        return [(f"{number}. {choice.label}", number - 1 == self.highlight)
                for number, choice in enumerate(self.choices, 1)]

    def back(self) -> None:
        """Out of a confirmation (or a picked lasting choice): the choices again, on the safe one."""
        self.confirming, self.save = None, False
        self.highlight = self.default

    def press(self, key: str) -> str | None:
        """The answer `key` gives; "" when it only moved the highlight (or opened or left a confirmation); None
        when it is not a key of this question (typing: the caller hands it to the input)."""
        if self.confirming is not None:
            return self._confirm(key)
        if key in ("up", "down"):
            self.highlight = (self.highlight + (1 if key == "down" else -1)) % len(self.choices)
            return ""
        if key == "enter":
            if self.current.lasting:
                self.confirming, self.save = self.current, False
                return ""
            return self.current.answer
        if key == "escape":
            return self.escape
        if key.isdigit() and 1 <= int(key) <= len(self.choices):
            self.highlight = int(key) - 1  # what the answer is said as (--plain printed the highlighted one)
            if self.current.lasting:  # a lasting grant: shown first; Enter asks to confirm it
                return ""
            return self.current.answer
        return None

    def _confirm(self, key: str) -> str | None:
        assert self.confirming is not None
        if key in ("up", "down"):
            self.save = key == "down"  # no wrapping: a held arrow ends on one line, it does not toggle
            return ""
        if key == "enter" and self.save:
            return self.confirming.answer
        if key in ("enter", "escape"):
            self.back()
            return ""
        return None  # a digit or a letter: typing, never an answer here

    def hint(self) -> str:
        """The line under the choices: what the keys do now."""
        if self.confirming is not None:
            if self.save:
                return "Enter saves it · ↑ or Esc: back to the choices"
            return "↓ then Enter saves it · Enter or Esc: back to the choices"
        if self.current.lasting:
            return (f"Enter asks to confirm: {self.current.label} · another number or ↑↓ picks again · "
                    f"Esc: {self._escape()}")
        numbers = f"1-{len(self.choices)}" if len(self.choices) > 1 else "1"
        return f"{numbers} or ↑↓ and Enter answer · Esc: {self._escape()}"

    def _escape(self) -> str:
        return {"stop": "deny and stop the turn", "not_now": "not now"}.get(self.escape, "deny")


def permission_question(rules: list[str]) -> Question:
    """Allow once (the safe default: nothing outlives this call), the "always" rules when the policy offers
    any, deny, deny and say why. Esc denies and stops the turn."""
    choices = [Choice("once", "Yes, this once")]
    if rules:
        label = ", ".join(rules)
        choices += [Choice("always", f"Yes, and allow {label} for this session",
                           grants=f"allow {label} for this session"),
                    Choice("project", f"Yes, and allow {label} in this project (every session here)",
                           grants=f"allow {label} in this project, in every session here")]
    choices += [Choice("deny", "No"), Choice("reason", "No, and tell the model why (you type it next)")]
    return Question(choices, default=0, escape="stop")


def trust_question() -> Question:
    """Not now (the safe default: the repository's commands stay off) or trust it, which is remembered."""
    return Question([Choice("not_now", "No, not now: coder ignores what it defines and works on the code"),
                     Choice("trust", "Yes, trust this repository (remembered until its settings change)",
                            grants="trust this repository: its servers, hooks, tools and settings run")],
                    default=0, escape="not_now")


def plan_question() -> Question:
    """Approve the plan and go on in auto-edit, which lets every edit of the session through without asking (a
    lasting grant: only through its confirmation), approve and go on in ask mode (the safe default: every edit
    still asks), or keep planning (what to change is typed next). Esc stops the turn."""
    return Question([Choice("auto-edit", "Approve, and go on in auto-edit (edits without asking)",
                            grants="go on in auto-edit: every edit of this session without asking"),
                     Choice("ask", "Approve, and go on in ask mode (each edit asks)"),
                     Choice("revise", "Keep planning (you say what to change next)")], default=1, escape="stop")


def untrusted_means(request: Any) -> str:
    """What saying "not now" to the trust question means for this repository (`request`: a TrustRequest), in the
    dialog of both frontends: its deny and ask rules hold either way (coder/policy/rules.py, coder/ext/
    claude_settings.py), and the dialog says so instead of "ignores all of that" (issue 47)."""
    narrowing = any(w.kind == "permissions" and w.name in ("deny", "ask") for w in request.wanted)
    return ("Untrusted, coder ignores all of that " + ("except the deny and ask rules, which apply either way (they "
            "only make it ask or refuse more), " if narrowing else "") + "and still works on the code. Trust it "
            "only if you know what those commands do.")


def permission_answer(answer: str, rules: list[str], remember: Callable[[PermissionAnswer], None] | None,
                      why: str = "") -> PermissionAnswer:
    """What the engine hears for `answer`. For "always" and "project" every rule after the first is remembered
    here (a multi-file write has one per file); the answer carries the first, and the engine remembers it."""
    if answer in ("always", "project") and rules:
        scope = "session" if answer == "always" else "project"
        for rule in rules[1:]:
            if remember is not None:
                remember(PermissionAnswer(True, scope, rule))
        return PermissionAnswer(True, scope, rules[0])
    if answer in ("once", "always", "project"):
        return PermissionAnswer(True)
    if answer == "stop":
        return PermissionAnswer(False, message="interrupted by the user")
    message = "the user denied this call" + (f" and said: {why}" if why else "")
    return PermissionAnswer(False, message=message, said=why)


def saved_note(answer: str, rules: list[str]) -> str:
    """The line that says what a lasting answer saved ("" for the others)."""
    if answer == "always" and rules:
        return f"saved: allow {', '.join(rules)} for this session"
    if answer == "project" and rules:
        return f"saved: allow {', '.join(rules)} in this project (/permissions lists it and takes it back)"
    if answer == "trust":
        return "saved: this repository is trusted; its servers, hooks, tools and settings are on"
    return ""


@dataclass
class Effect:
    """What a key did: `typed` (hand `key`/`character` to the input: it was typing), `moved` (the highlight, or
    a confirmation opened or taken away: redraw), or `answer`."""

    kind: str
    key: str = ""
    character: str | None = None
    answer: str = ""


@dataclass
class Chooser:
    """The keys of one question as they come, with the time (both frontends feed it).

    `armed_at`: keys answer from then on (the app: when the question took the focus plus ARM_DELAY; never while
    it has none). `rearm`: after a typed key, keys answer again only this much later (the REPL's keyboard stays
    with the question, so typing must stop first; the app moves the focus to the input instead).
    `confirm_at`: a lasting grant's confirmation counts keys from then on (its drawing plus CONFIRM_DWELL; never
    before `drawn` is called)."""

    question: Question
    armed_at: float = float("inf")
    rearm: float = 0.0
    pending: str | None = None  # a digit pressed less than HOLD ago
    pending_at: float = 0.0
    held: str | None = None  # the digit that moved the highlight to a lasting grant, while it stays there
    confirm_at: float = float("inf")
    answered: str = ""

    @property
    def confirming(self) -> bool:
        return self.question.confirming is not None

    def ready(self, now: float) -> bool:
        """Keys count now (armed; a confirmation: drawn and left alone for CONFIRM_DWELL)."""
        return now >= (self.confirm_at if self.confirming else self.armed_at)

    def drawn(self, now: float) -> None:
        """The frontend has drawn the confirmation: it counts keys once CONFIRM_DWELL passes with none typed."""
        if self.confirming and self.confirm_at == float("inf"):
            self.confirm_at = now + CONFIRM_DWELL

    def leave(self) -> None:
        """The question lost the keyboard (the app's focus moved): a confirmation on screen goes away."""
        if self.confirming:
            self.question.back()
            self.held, self.confirm_at = None, float("inf")

    def key(self, key: str, character: str | None, now: float) -> list[Effect]:
        if self.answered:
            return []
        if self.confirming:
            if now < self.confirm_at:
                return self._withdraw(key, character, now)  # typed before it could be read: it was not for it
            answer = self.question.press(key)
            if answer is None:
                return self._withdraw(key, character, now)
            return self._result(answer, key)
        if now < self.armed_at:
            return self._typed(key, character, now)
        if self.pending is not None:
            digit, self.pending = self.pending, None
            if key == "enter":  # a number and Enter: deliberate (a lasting one: its confirmation opens)
                out = self._press(digit) or []
                return out if self.answered else out + (self._press("enter") or [])
            if (character is None or not character.isprintable()) and key != "backspace":
                return self.key(key, character, now)  # Esc, an arrow: the digit is let go, the key counts
            return self._typed(digit, digit, now) + self._typed(key, character, now)  # "2 more": typing
        if len(key) == 1 and key.isdigit():
            self.pending, self.pending_at = key, now
            return []
        pressed = self._press(key)
        return pressed if pressed is not None else self._typed(key, character, now)

    def due(self) -> float | None:
        """When a held digit answers, if one waits."""
        return self.pending_at + HOLD if self.pending is not None else None

    def release(self, now: float) -> list[Effect]:
        """Nothing followed the digit for HOLD: it was meant for the question."""
        if self.pending is None or now < self.pending_at + HOLD:
            return []
        digit, self.pending = self.pending, None
        return self._press(digit) or []

    def click(self, number: int, now: float) -> list[Effect]:
        """A click on line `number` is deliberate: it answers, and a lasting grant opens its confirmation, whose
        "Yes, save" a click takes once the confirmation counts keys (a double click is not two decisions)."""
        if self.answered:
            return []
        if self.confirming:
            if now < self.confirm_at:
                return []
            self.question.save = number == 2
            return self._result(self.question.press("enter") or "", "enter")
        self.question.highlight = number - 1
        return self._press("enter") or []

    def _press(self, key: str) -> list[Effect] | None:
        answer = self.question.press(key)
        if answer is None:
            return None
        return self._result(answer, key)

    def _result(self, answer: str, key: str) -> list[Effect]:
        if answer:
            self.answered = answer
            return [Effect("answer", answer=answer)]
        if not self.confirming:
            self.confirm_at = float("inf")
            self.held = key if key.isdigit() and self.question.current.lasting else None
        return [Effect("moved")]

    def _withdraw(self, key: str, character: str | None, now: float) -> list[Effect]:
        """A key the confirmation did not count: it goes away, the choices are back on the safe one (armed again
        only ARM_DELAY from now). A key that is text was typing, and so was the digit that picked the grant: both
        go to the input; Enter, an arrow or Esc only take the confirmation away."""
        held = self.held
        self.question.back()
        self.held, self.confirm_at = None, float("inf")
        self.armed_at = max(self.armed_at, now + ARM_DELAY)
        if character is None or not (character.isprintable() or key == "backspace"):
            return [Effect("moved")]
        out = [Effect("typed", held, held)] if held is not None else []
        return [*out, Effect("typed", key, character), Effect("moved")]

    def _typed(self, key: str, character: str | None, now: float) -> list[Effect]:
        if (character is None or not character.isprintable()) and key != "backspace":
            return []  # not typing either (an arrow before the question armed, a lone Enter)
        out: list[Effect] = []
        if self.held is not None:  # the digit that picked a lasting grant was typing too
            out.append(Effect("typed", self.held, self.held))
            self.held = None
            self.question.highlight = self.question.default
        out.append(Effect("typed", key, character))
        self.armed_at = max(self.armed_at, now + self.rearm)
        return out
