"""The first-open trust question in both interactive frontends, with the real `open_session`: the plain REPL in a
real pseudo-terminal (pexpect) and the Textual app through Pilot. Saying no runs nothing; saying yes starts the
approved server (the control that proves the question guards something real) and is remembered."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pexpect
import pytest
from security_trust_support import make_world, markers, trust_app, wait_until

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def world(tmp_path: Path):
    repo, outside, trap = make_world(tmp_path)
    script = tmp_path / "script.json"
    script.write_text('{"turns": [{"text": "hello", "repeat": true}]}')
    yield repo, outside, script
    trap.close()


def spawn_repl(repo: Path, script: Path) -> pexpect.spawn:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm"}
    return pexpect.spawn(sys.executable, ["-m", "coder", "--plain", "--no-sandbox", "--model", f"scripted:{script}"],
                         cwd=str(repo), env=env, timeout=60, encoding="utf-8", dimensions=(40, 160))


@pytest.mark.parametrize("answer, trusted", [("1", False), ("2\r", True)])
def test_repl_asks_before_anything_of_the_repository_runs(world, answer: str, trusted: bool) -> None:
    from coder.trust import decisions as trust

    repo, outside, script = world
    child = spawn_repl(repo, script)
    try:
        child.expect("not trusted")
        child.expect(r"2\. Yes, trust this repository")
        assert "touch" in child.before and "mcp server evil" in child.before  # shows what would run
        child.expect("Esc: not now > ")
        assert markers(outside) == []  # nothing ran while the question was up
        child.send("tx")  # typing, not an answer: it is the next message's type-ahead
        time.sleep(0.8)  # the question takes keys once the keyboard was quiet for a moment
        child.send(answer)  # 1: not now at once; 2 and Enter only open the lasting grant's confirmation
        if trusted:  # read it (a second with no key), then Down and Enter save it (issue 47)
            child.expect("Yes, save: trust this repository")
            time.sleep(1.3)
            child.send("\x1b[B")
            child.expect("Enter saves it")
            child.send("\r")
        child.expect("saved: this repository is trusted" if trusted else "not trusted: coder ignores")
        child.expect("ask> tx", timeout=60)  # the type-ahead starts the next message
        child.sendcontrol("u")
        child.sendcontrol("d")  # the end of input leaves the REPL
        child.expect(pexpect.EOF, timeout=60)
    finally:
        child.close(force=True)
    assert ("mcp-json" in markers(outside)) is trusted
    assert "host-hook" not in markers(outside)
    assert trust.is_trusted(repo) is trusted


@pytest.mark.parametrize("keys, trusted", [(("1",), False), (("2", "enter"), True)])
def test_app_trust_question_takes_no_typing(world, tmp_path: Path, keys: tuple[str, ...], trusted: bool) -> None:
    """Issue 32: the `t` of a word typed as the question appeared trusted the repository and landed in the input
    too. Typing now goes to the input only; 1 says not now, 2 then Enter asks to confirm, and Down and Enter a
    second later trust (and say so)."""
    import asyncio

    from coder.trust import decisions as trust
    from coder.tui.prompts import TrustPrompt
    from coder.tui.widgets import PromptInput

    repo, outside, script = world

    async def body() -> None:
        app = trust_app(repo, script, tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.questions.prompt, TrustPrompt))
            prompt = app.questions.prompt

            def shown() -> str:  # its lines are mounted a moment after the prompt itself
                return " ".join(str(w.render()) for w in prompt.query("Static"))

            await wait_until(pilot, lambda: "mcp server evil" in shown())
            assert "touch" in shown()
            await pilot.press("t", "2", "y")  # type-ahead does not answer it: it goes to the input
            box = app.query_one(PromptInput)
            assert box.text == "t2y" and not prompt.answered
            box.set_text("")
            await wait_until(pilot, lambda: prompt.armed)
            await pilot.press(*keys)
            if trusted:  # 2 and Enter opened the confirmation: read it, then Down and Enter (issue 47)
                assert not prompt.answered and prompt.chooser.confirming
                await wait_until(pilot, lambda: prompt.chooser.ready(time.monotonic()))
                await pilot.press("down", "enter")
            await wait_until(pilot, lambda: app.opened is not None)
            assert app.opened.config.trusted is trusted and box.text == ""
            said = " ".join(str(w.render()) for w in app.query("#conversation > *"))
            assert ("saved: this repository is trusted" in said) is trusted
            assert ("not trusted: coder ignores" in said) is not trusted
            app.exit()

    asyncio.run(asyncio.wait_for(body(), 240))
    assert ("mcp-json" in markers(outside)) is trusted
    assert trust.is_trusted(repo) is trusted


def test_app_quit_while_the_trust_question_is_up_trusts_nothing(world, tmp_path: Path) -> None:
    import asyncio

    from coder.trust import decisions as trust
    from coder.tui.prompts import TrustPrompt

    repo, outside, script = world

    async def body() -> None:
        app = trust_app(repo, script, tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.questions.prompt, TrustPrompt))
            app.exit()  # the opening worker waits on the answer: leaving must release it, not hang

    asyncio.run(asyncio.wait_for(body(), 120))
    assert markers(outside) == [] and not trust.is_trusted(repo)
