"""Issue 32: the rules of a question's keys (coder/frontend/choices.py), on a clock the test holds: what a typist's
keys do to a question that appeared while they typed, what deliberate keys do, and what each answer tells the
engine. Both frontends feed these rules (the app's prompts in test_tui_questions.py, the REPL's in
test_tui_terminal.py)."""

from __future__ import annotations

from coder.frontend.choices import (
    ARM_DELAY,
    HOLD,
    Chooser,
    Effect,
    permission_answer,
    permission_question,
    saved_note,
    trust_question,
)
from coder.policy.base import PermissionAnswer

RULES = ["bash(python3 -m pytest*)"]


def typist(chooser: Chooser, text: str, start: float, every: float = 0.12) -> tuple[str, float]:
    """Type `text` one key every `every` seconds from `start`; what reached the input and the time after."""
    typed, now = "", start
    for ch in text:
        key = "space" if ch == " " else ch
        for effect in chooser.key(key, ch, now) + chooser.release(now):
            if effect.kind == "typed":
                typed += effect.character or ""
        now += every
    for effect in chooser.release(now + HOLD):
        typed += effect.character or "" if effect.kind == "typed" else ""
    return typed, now


def test_a_typist_at_120_ms_never_answers_and_loses_nothing() -> None:
    """Every key of a sentence with digits in it, typed into an armed question at 120 ms a key, is typing."""
    for text in ("also run lint", "2 more tests", "1 more thing please", "5 files, 4 dirs and 3 more"):
        chooser = Chooser(permission_question(RULES), armed_at=0.0, rearm=ARM_DELAY)
        typed, _ = typist(chooser, text, start=1.0)
        assert typed == text and not chooser.answered, (text, typed, chooser.answered)
        assert chooser.question.highlight == chooser.question.default  # nothing left picked


def test_keys_before_the_question_armed_are_typing() -> None:
    chooser = Chooser(permission_question(RULES), armed_at=10.0)
    assert chooser.key("1", "1", 9.0) == [Effect("typed", "1", "1")]
    assert chooser.key("enter", "\r", 9.1) == []  # not typing either: dropped, never an answer
    assert not chooser.answered


def test_a_digit_answers_once_nothing_follows_it() -> None:
    chooser = Chooser(permission_question(RULES), armed_at=0.0)
    assert chooser.key("4", "4", 1.0) == []  # held a moment: typing may follow
    assert chooser.release(1.0 + HOLD / 2) == []
    assert chooser.release(1.0 + HOLD) == [Effect("answer", answer="deny")]


def test_a_digit_and_enter_are_deliberate_at_once() -> None:
    chooser = Chooser(permission_question(RULES), armed_at=0.0)
    chooser.key("1", "1", 1.0)
    assert chooser.key("enter", "\r", 1.05) == [Effect("answer", answer="once")]


def test_a_lasting_grant_needs_its_number_then_enter() -> None:
    chooser = Chooser(permission_question(RULES), armed_at=0.0)
    chooser.key("2", "2", 1.0)
    assert chooser.release(1.0 + HOLD) == [Effect("moved")]  # shown, not granted
    assert not chooser.answered and chooser.question.current.answer == "always"
    assert "Enter confirms: Yes, and allow bash(python3 -m pytest*) for this session" in chooser.question.hint()
    assert chooser.key("enter", "\r", 3.0) == [Effect("answer", answer="always")]


def test_typing_after_a_picked_lasting_grant_gives_the_digit_back() -> None:
    """A slow typist: `2`, a pause long enough to move the highlight, then ` more`: all of it was typing."""
    chooser = Chooser(permission_question(RULES), armed_at=0.0, rearm=ARM_DELAY)
    chooser.key("2", "2", 1.0)
    chooser.release(1.5)
    effects = chooser.key("space", " ", 1.6)
    assert [e.character for e in effects] == ["2", " "] and not chooser.answered
    assert chooser.question.current.answer == "once"  # back on the safe choice
    assert chooser.key("1", "1", 1.7) == [Effect("typed", "1", "1")]  # typing re-armed it: ARM_DELAY from now


def test_escape_after_a_digit_is_the_escape_answer() -> None:
    chooser = Chooser(permission_question(RULES), armed_at=0.0)
    chooser.key("3", "3", 1.0)
    assert chooser.key("escape", "\x1b", 1.1) == [Effect("answer", answer="stop")]


def test_the_safe_choice_is_highlighted_and_enter_takes_it() -> None:
    for question, safe in ((permission_question(RULES), "once"), (permission_question([]), "once"),
                           (trust_question(), "not_now")):
        chooser = Chooser(question, armed_at=0.0)
        assert chooser.key("enter", "\r", 1.0) == [Effect("answer", answer=safe)]


def test_without_rules_there_is_no_lasting_choice() -> None:
    question = permission_question([])
    assert [c.answer for c in question.choices] == ["once", "deny", "reason"]
    assert not any(c.lasting for c in question.choices)


def test_trust_needs_its_number_then_enter() -> None:
    chooser = Chooser(trust_question(), armed_at=0.0)
    chooser.key("2", "2", 1.0)
    assert chooser.release(2.0) == [Effect("moved")] and not chooser.answered
    assert chooser.key("enter", "\r", 2.5) == [Effect("answer", answer="trust")]


def test_what_the_engine_hears_and_what_is_announced() -> None:
    remembered: list[PermissionAnswer] = []
    rules = ["edit(a.py)", "edit(b.py)"]
    answer = permission_answer("always", rules, remembered.append)
    assert answer == PermissionAnswer(True, "session", "edit(a.py)")
    assert remembered == [PermissionAnswer(True, "session", "edit(b.py)")]  # every file of the write
    assert permission_answer("project", RULES, None) == PermissionAnswer(True, "project", RULES[0])
    assert permission_answer("once", RULES, None) == PermissionAnswer(True)
    assert not permission_answer("deny", RULES, None).allow
    assert "and said: use b.py" in permission_answer("reason", RULES, None, "use b.py").message
    assert saved_note("always", RULES) == "saved: allow bash(python3 -m pytest*) for this session"
    assert "in this project" in saved_note("project", RULES) and saved_note("once", RULES) == ""
