"""Issue 32: the rules of a question's keys (coder/frontend/choices.py), on a clock the test holds: what a typist's
keys do to a question that appeared while they typed, what deliberate keys do, and what each answer tells the
engine. Both frontends feed these rules (the app's prompts in test_tui_questions.py, the REPL's in
test_tui_terminal.py)."""

from __future__ import annotations

from coder.frontend.choices import (
    ARM_DELAY,
    CONFIRM_DWELL,
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


def test_a_lasting_grant_needs_its_number_enter_a_pause_then_down_and_enter() -> None:
    """Issue 47: `3` and Enter saved a project rule. Now they open a confirmation, which counts keys only once
    it has been on screen for CONFIRM_DWELL, and whose safe line is "go back"."""
    chooser = Chooser(permission_question(RULES), armed_at=0.0)
    chooser.key("2", "2", 1.0)
    assert chooser.release(1.0 + HOLD) == [Effect("moved")]  # shown, not granted
    assert not chooser.answered and chooser.question.current.answer == "always"
    assert "Enter asks to confirm: Yes, and allow bash(python3 -m pytest*) for this session" in chooser.question.hint()
    assert chooser.key("enter", "\r", 3.0) == [Effect("moved")] and chooser.confirming
    assert chooser.question.lines() == [("No, go back to the choices", True),
                                        ("Yes, save: allow bash(python3 -m pytest*) for this session", False)]
    chooser.drawn(3.1)
    assert not chooser.ready(3.1 + CONFIRM_DWELL / 2) and chooser.ready(3.1 + CONFIRM_DWELL)
    assert chooser.key("down", None, 3.1 + CONFIRM_DWELL) == [Effect("moved")] and not chooser.answered
    assert chooser.key("enter", "\r", 3.2 + CONFIRM_DWELL) == [Effect("answer", answer="always")]


def test_digit_and_enter_typed_at_once_never_save_a_rule() -> None:
    """The trial's keys: the prompt up for two seconds, then `3` and Enter 50 ms later; or `2` and Enter."""
    for digit in ("2", "3"):
        chooser = Chooser(permission_question(RULES), armed_at=0.5)
        assert chooser.key(digit, digit, 2.0) == []
        assert {e.kind for e in chooser.key("enter", "\r", 2.05)} == {"moved"}
        assert chooser.confirming and not chooser.answered
        chooser.drawn(2.06)
        for effect in chooser.release(60.0):
            assert effect.kind != "answer"
        assert not chooser.answered  # left alone, it waits: nothing is saved by time passing


def test_keys_before_the_confirmation_counts_take_it_away_and_are_typing() -> None:
    chooser = Chooser(permission_question(RULES), armed_at=0.0)
    chooser.key("3", "3", 1.0)
    chooser.key("enter", "\r", 1.05)
    assert chooser.key("o", "o", 1.1) == [Effect("typed", "3", "3"), Effect("typed", "o", "o"), Effect("moved")]
    assert not chooser.confirming and chooser.question.current.answer == "once"
    assert chooser.key("enter", "\r", 1.2) == []  # the choices armed again only ARM_DELAY later
    assert not chooser.answered
    # a key typed before the confirmation was drawn, and arrows before it counts, take it away too
    for first, later in ((None, 1.1), (1.06, 1.06 + CONFIRM_DWELL - 0.01)):
        chooser = Chooser(permission_question(RULES), armed_at=0.0)
        chooser.key("2", "2", 1.0)
        chooser.key("enter", "\r", 1.02)
        if first is not None:
            chooser.drawn(first)
        assert chooser.key("down", None, later) == [Effect("moved")]  # not typing: the digit is not given back
        assert not chooser.confirming and not chooser.answered


def test_a_held_enter_never_saves() -> None:
    """A key held down repeats every 30 ms: the confirmation never counts its keys, Enter at worst allows once."""
    chooser = Chooser(permission_question(RULES), armed_at=0.0)
    chooser.key("3", "3", 1.0)
    now, answers = 1.02, []
    while now < 5.0 and not chooser.answered:
        for effect in chooser.key("enter", "\r", now):
            answers.append(effect.answer)
        chooser.drawn(now)  # drawn at once: the frontend at its fastest
        now += 0.03
    assert chooser.answered in ("", "once"), chooser.answered


def test_a_typist_answering_the_model_never_saves_a_rule() -> None:
    """Any keys a person types into a conversation (digits, Enter, letters, spaces, Backspace, pastes of them,
    a key held down, Esc), in any rhythm, with the frontend drawing a confirmation at once: without an arrow
    key after a pause of CONFIRM_DWELL with a confirmation on screen, nothing lasting is ever saved."""
    import random

    keys = [*"0123456789", "enter", "enter", "enter", *"ayesnp", "space", "backspace", "escape"]
    rng = random.Random(47)
    for _ in range(3000):
        question = rng.choice([permission_question(RULES), permission_question(["edit(a.py)", "edit(b.py)"]),
                               trust_question()])
        chooser = Chooser(question, armed_at=rng.choice([0.0, 0.5]), rearm=rng.choice([0.0, ARM_DELAY]))
        now = 0.0
        for _ in range(rng.randint(1, 40)):
            key = rng.choice(keys)
            character = {"enter": "\r", "space": " ", "backspace": "\x7f", "escape": "\x1b"}.get(key, key)
            now += rng.choice([0.0, 0.01, 0.03, 0.05, 0.12, 0.4, 1.5, 3.0])
            chooser.release(now)
            chooser.key(key, character, now)
            chooser.drawn(now)
            if chooser.answered:
                break
        chooser.release(now + 10)
        assert chooser.answered not in ("always", "project", "trust"), chooser.answered


def test_arrows_and_enter_in_a_burst_never_save_a_rule() -> None:
    """Arrows too: keys that come faster than CONFIRM_DWELL never reach a confirmation that counts them."""
    import random

    keys = [*"123", "enter", "up", "down"]
    rng = random.Random(48)
    for _ in range(3000):
        chooser = Chooser(permission_question(RULES), armed_at=0.0)
        now = 1.0
        for _ in range(rng.randint(1, 30)):
            key = rng.choice(keys)
            now += rng.choice([0.0, 0.01, 0.05, 0.2, 0.5, CONFIRM_DWELL * 0.9])
            chooser.release(now)
            chooser.key(key, "\r" if key == "enter" else key if key.isdigit() else None, now)
            chooser.drawn(now)
            if chooser.answered:
                break
        assert chooser.answered not in ("always", "project"), chooser.answered


def test_escape_or_enter_on_go_back_returns_to_the_safe_choice() -> None:
    for key in ("enter", "escape"):
        chooser = Chooser(permission_question(RULES), armed_at=0.0)
        chooser.key("3", "3", 1.0)
        chooser.key("enter", "\r", 1.05)
        chooser.drawn(1.1)
        assert chooser.key(key, None, 1.1 + CONFIRM_DWELL) == [Effect("moved")]
        assert not chooser.confirming and not chooser.answered and chooser.question.current.answer == "once"


def test_a_click_opens_the_confirmation_and_a_later_click_saves() -> None:
    chooser = Chooser(permission_question(RULES), armed_at=0.0)
    assert chooser.click(3, 1.0) == [Effect("moved")] and chooser.confirming
    chooser.drawn(1.0)
    assert chooser.click(2, 1.1) == []  # a double click is not two decisions
    assert chooser.click(2, 1.0 + CONFIRM_DWELL) == [Effect("answer", answer="project")]


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


def test_trust_needs_its_number_then_enter_then_a_confirmation() -> None:
    chooser = Chooser(trust_question(), armed_at=0.0)
    chooser.key("2", "2", 1.0)
    assert chooser.release(2.0) == [Effect("moved")] and not chooser.answered
    assert chooser.key("enter", "\r", 2.5) == [Effect("moved")] and chooser.confirming
    chooser.drawn(2.5)
    chooser.key("down", None, 2.5 + CONFIRM_DWELL)
    assert chooser.key("enter", "\r", 2.6 + CONFIRM_DWELL) == [Effect("answer", answer="trust")]


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
