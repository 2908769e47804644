"""Questions typing cannot answer (issue 32): the numbered choices of a permission request and of the trust
question, which one is the safe default, which grant something lasting, and how keys pick among them.

A stray key once saved an "always" rule: `a` of "also run lint", typed while a prompt appeared, answered it. The
rules both interactive frontends now follow:

- Choices are numbered, as in Claude Code; the highlight starts on the safe one (`Question.default`: allow once
  for a tool call, "not now" for the trust question).
- Keys answer only once the question has been in front of the person for ARM_DELAY (in the app: has had the
  focus that long) and the keyboard has been quiet for QUIET. Anything typed before that is typing: it goes to
  the input (the REPL: to the next message's type-ahead).
- A digit answers its choice once no other key followed it for HOLD (a typist at 120 ms a key is typing "2 more
  tests", and the digit goes to the input with the rest), or at once when Enter follows it. A choice that grants
  something beyond this question (`lasting`: an "always" rule, a trusted repository) is not answered by its digit:
  the highlight moves there, the hint says what Enter would save, and Enter confirms; two deliberate keys, the
  second after reading what it does. Enter answers the highlighted choice; Up/Down move the highlight; Esc gives
  `Question.escape`. Letters are never answers. `Chooser` applies these rules to keys as they come.
- What a lasting answer saved is announced (`saved_note`): "saved: allow bash(python3 -m pytest*) for this session".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from coder.policy.base import PermissionAnswer

ARM_DELAY = 0.5  # seconds a question must have been in front of the person before its keys answer
QUIET = 0.6  # seconds without a key typed before a question takes the keyboard
HOLD = 0.35  # a digit answers when no key followed it this long (a typist at 120 ms a key is never so slow)


@dataclass(frozen=True)
class Choice:
    answer: str  # once | always | project | deny | reason (permission); trust | not_now (trust)
    label: str
    lasting: bool = False  # grants something beyond this question: its digit selects, Enter confirms


@dataclass
class Question:
    """The choices on offer and the highlight; `press` turns a key into an answer."""

    choices: list[Choice]
    default: int = 0  # the safe choice, highlighted first
    escape: str = "deny"  # what Esc answers
    highlight: int = field(default=-1)

    def __post_init__(self) -> None:
        if self.highlight < 0:
            self.highlight = self.default

    @property
    def current(self) -> Choice:
        return self.choices[self.highlight]

    def press(self, key: str) -> str | None:
        """The answer `key` gives; "" when it only moved the highlight; None when it is not a key of this question
        (typing: the caller hands it to the input)."""
        if key in ("up", "down"):
            self.highlight = (self.highlight + (1 if key == "down" else -1)) % len(self.choices)
            return ""
        if key == "enter":
            return self.current.answer
        if key == "escape":
            return self.escape
        if key.isdigit() and 1 <= int(key) <= len(self.choices):
            choice = self.choices[int(key) - 1]
            if choice.lasting and self.current is not choice:
                self.highlight = int(key) - 1  # a lasting grant: shown first, Enter confirms
                return ""
            return choice.answer
        return None

    def hint(self) -> str:
        """The line under the choices: what the keys do now."""
        if self.current.lasting:
            return f"Enter confirms: {self.current.label} · another number or ↑↓ picks again · Esc: {self._escape()}"
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
        choices += [Choice("always", f"Yes, and allow {label} for this session", lasting=True),
                    Choice("project", f"Yes, and allow {label} in this project (every session here)", lasting=True)]
    choices += [Choice("deny", "No"), Choice("reason", "No, and tell the model why (you type it next)")]
    return Question(choices, default=0, escape="stop")


def trust_question() -> Question:
    """Not now (the safe default: the repository's commands stay off) or trust it, which is remembered."""
    return Question([Choice("not_now", "No, not now: coder ignores what it defines and works on the code"),
                     Choice("trust", "Yes, trust this repository (remembered until its settings change)",
                            lasting=True)], default=0, escape="not_now")


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
    return PermissionAnswer(False, message=message)


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
    """What a key did: `typed` (hand `key`/`character` to the input: it was typing), `moved` (the highlight), or
    `answer`."""

    kind: str
    key: str = ""
    character: str | None = None
    answer: str = ""


@dataclass
class Chooser:
    """The keys of one question as they come, with the time (both frontends feed it).

    `armed_at`: keys answer from then on (the app: when the question took the focus plus ARM_DELAY; never while
    it has none). `rearm`: after a typed key, keys answer again only this much later (the REPL's keyboard stays
    with the question, so typing must stop first; the app moves the focus to the input instead)."""

    question: Question
    armed_at: float = float("inf")
    rearm: float = 0.0
    pending: str | None = None  # a digit pressed less than HOLD ago
    pending_at: float = 0.0
    held: str | None = None  # the digit that moved the highlight to a lasting grant, until Enter confirms
    answered: str = ""

    def key(self, key: str, character: str | None, now: float) -> list[Effect]:
        if self.answered:
            return []
        if now < self.armed_at:
            return self._typed(key, character, now)
        if self.pending is not None:
            digit, self.pending = self.pending, None
            if key == "enter":  # a number and Enter: deliberate
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

    def click(self, number: int) -> list[Effect]:
        """A click on a choice is deliberate: it answers, a lasting grant too."""
        if self.answered:
            return []
        self.question.highlight = number - 1
        return self._press("enter") or []

    def _press(self, key: str) -> list[Effect] | None:
        answer = self.question.press(key)
        if answer is None:
            return None
        self.held = key if answer == "" and key.isdigit() else None
        if answer:
            self.answered = answer
            return [Effect("answer", answer=answer)]
        return [Effect("moved")]

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
