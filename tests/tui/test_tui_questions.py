"""Issue 32, item 1: questions typing cannot answer, in the app through Pilot with a real session and the real
rules policy. A typist at 120 ms a key types on while a permission question appears mid-word, then again once it
has the focus: nothing is answered, nothing is saved, every key is in the input. A lasting rule takes its number
and Enter, and is announced.

The typed texts use only the digits of lasting choices (2 and 3): those never answer by themselves, so a loaded
machine that stretches the gaps between keys cannot turn typing into a grant (coder/frontend/choices.py; the
timing rules themselves are tested on a held clock in test_tui_choices.py)."""

from __future__ import annotations

import time
from pathlib import Path

from tui_support import (  # type: ignore[import-not-found]
    async_test,
    conversation_text,
    make_app,
    screen_text,
    type_and_send,
    wait_armed,
    wait_for,
)

from coder.config.sections import PermissionsSettings
from coder.policy.rules import policy_from_config
from coder.tui.widgets import PromptInput

SCRIPT = {"turns": [
    {"text": "I will run the test suite of the project now, as asked.",
     "tool_calls": [{"name": "bash", "input": {"command": "python3 -m pytest -q"}}]},
    {"text": "The tests ran."},
    {"tool_calls": [{"name": "bash", "input": {"command": "python3 -m pytest -q tests/x.py"}}]},
    {"text": "Ran again without asking."},
]}


async def type_slowly(pilot, app, text: str, every: float = 0.12) -> int | None:
    """Type `text` one key every `every` seconds; the index at which a question appeared, if one did."""
    appeared = None
    for i, ch in enumerate(text):
        await pilot.press("space" if ch == " " else ch)
        if appeared is None and app.questions.prompt is not None:
            appeared = i
        await pilot.pause(every)
    return appeared


@async_test
async def test_a_typist_over_a_question_that_appears_mid_word(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, SCRIPT, chunk_delay=0.5)  # the question comes after 1.5 s
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        policy = policy_from_config(PermissionsSettings(), "ask", project_dir=git_repo)
        app.opened.session.parts.policy = policy
        await type_and_send(pilot, app, "run the tests")
        sentence = "also run lint and fix 2 tests then 3 more of them"
        appeared = await type_slowly(pilot, app, sentence)
        assert appeared is not None and appeared < len(sentence) - 1, appeared  # it came while typing
        box = app.query_one(PromptInput)
        prompt = app.questions.prompt
        assert box.text == sentence and box.has_focus and prompt is not None and not prompt.answered
        assert "Tab answers this question" in screen_text(app)

        await pilot.press("enter")  # the line is sent (queued behind the turn); the input is empty again
        await wait_armed(pilot, app)  # the question took the focus once the typing stopped
        await type_slowly(pilot, app, "2 more tests and 3 more")  # typing again, into a focused question
        assert box.text == "2 more tests and 3 more" and box.has_focus and not prompt.answered
        assert not policy.session_allow and "saved:" not in conversation_text(app)
        assert app.state.queued == [sentence]

        box.set_text("")
        await pilot.press("tab")  # deliberately to the question
        await wait_armed(pilot, app)
        await pilot.press("2")
        await wait_for(pilot, lambda: "Enter asks to confirm: Yes, and allow bash(python3 -m pytest*) for this "
                       "session" in screen_text(app))
        assert not prompt.answered and not policy.session_allow  # shown, not granted
        await pilot.press("enter")  # the confirmation, in the choices' place
        await wait_for(pilot, lambda: "Yes, save: allow bash(python3 -m pytest*) for this session" in screen_text(app))
        assert not prompt.answered and not policy.session_allow
        await wait_for(pilot, lambda: "↓ then Enter saves it" in screen_text(app))  # read: it counts keys now
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: "The tests ran." in conversation_text(app))
        assert "saved: allow bash(python3 -m pytest*) for this session" in conversation_text(app)
        await wait_for(pilot, lambda: "Ran again without asking." in conversation_text(app), timeout=30)
        opened = f.opened[0]
        asked = [r for r in opened.store.events(opened.session.id) if r.type == "permission_request"]
        assert len(asked) == 1  # the saved rule allowed the second run
        # Ctrl+T, built from the stored events, notes the saved rule as the conversation did (the trial: it left
        # the note out)
        from coder.tui.screens import TranscriptScreen, TranscriptView

        await wait_for(pilot, lambda: not app.busy, timeout=60)
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: isinstance(app.screen, TranscriptScreen) and app.screen.complete)
        texts = app.screen.query_one(TranscriptView).texts
        assert "saved: allow bash(python3 -m pytest*) for this session" in texts, texts


@async_test
async def test_a_question_while_the_person_types_waits_without_taking_keys(factory, git_repo: Path,
                                                                          tmp_path: Path) -> None:
    """A draft in the input: the question never takes the focus; Tab goes to it, Esc denies and stops."""
    app, f = make_app(factory, git_repo, tmp_path, SCRIPT, chunk_delay=0.15)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "run the tests")
        box = app.query_one(PromptInput)
        await pilot.press(*"draft")  # typed as the question comes (its text streams first): the keys are the input's
        await wait_for(pilot, lambda: app.questions.prompt is not None)
        started = time.monotonic()
        while time.monotonic() - started < 1.5:  # longer than the quiet time and the arming together
            await pilot.pause(0.1)
            assert box.has_focus and not app.questions.prompt.has_focus, app.focused
        await pilot.press("tab")
        await wait_armed(pilot, app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy)
        assert box.text == "draft" and "turn stopped: interrupted" in conversation_text(app)
