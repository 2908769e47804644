"""The first-open trust question in both interactive frontends, with the real `open_session`: the plain REPL in a
real pseudo-terminal (pexpect) and the Textual app through Pilot. Saying no runs nothing; saying yes starts the
approved server (the control that proves the question guards something real) and is remembered."""

from __future__ import annotations

import os
import sys
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


@pytest.mark.parametrize("answer, trusted", [("n", False), ("t", True)])
def test_repl_asks_before_anything_of_the_repository_runs(world, answer: str, trusted: bool) -> None:
    from coder.trust import decisions as trust

    repo, outside, script = world
    child = spawn_repl(repo, script)
    try:
        child.expect("not trusted")
        child.expect(r"\[t\] trust this repository")
        assert "touch" in child.before and "mcp server evil" in child.before  # shows what would run
        assert markers(outside) == []  # nothing ran while the question was up
        child.send(answer)
        child.sendline("")
        child.expect("ask>", timeout=60)
        child.sendcontrol("d")  # the end of input leaves the REPL
        child.expect(pexpect.EOF, timeout=60)
    finally:
        child.close(force=True)
    assert ("mcp-json" in markers(outside)) is trusted
    assert "host-hook" not in markers(outside)
    assert trust.is_trusted(repo) is trusted


def test_app_trust_screen_says_no(world, tmp_path: Path) -> None:
    import asyncio

    from coder.tui.trust_screen import TrustScreen

    repo, outside, script = world

    async def body() -> None:
        app = trust_app(repo, script, tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, TrustScreen))
            shown = " ".join(str(w.render()) for w in app.screen.query("Static"))
            assert "mcp server evil" in shown and "touch" in shown
            await pilot.press("x", "y")  # type-ahead does not answer it
            assert isinstance(app.screen, TrustScreen)
            await pilot.press("n")
            await wait_until(pilot, lambda: app.opened is not None)
            assert app.opened.config.trusted is False
            app.exit()

    asyncio.run(asyncio.wait_for(body(), 240))
    assert markers(outside) == []


def test_app_quit_while_the_trust_screen_is_up_trusts_nothing(world, tmp_path: Path) -> None:
    import asyncio

    from coder.trust import decisions as trust
    from coder.tui.trust_screen import TrustScreen

    repo, outside, script = world

    async def body() -> None:
        app = trust_app(repo, script, tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: isinstance(app.screen, TrustScreen))
            app.exit()  # the opening worker waits on the answer: leaving must release it, not hang

    asyncio.run(asyncio.wait_for(body(), 120))
    assert markers(outside) == [] and not trust.is_trusted(repo)
