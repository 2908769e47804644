"""Issue 32: the app folds the stuck warnings of a turn into one line that counts them (it showed about 196
warnings in one run), and a new turn starts a new line."""

from __future__ import annotations

from pathlib import Path

from tui_support import async_test, conversation_text, make_app, wait_for  # type: ignore[import-not-found]

from coder.base import events as ev

HELLO = {"turns": [{"text": "Hello."}]}


@async_test
async def test_warnings_of_a_turn_are_one_line(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(110, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        for step in range(30, 200, 10):
            app.queue.append(ev.StuckEvent("no_progress", "warn", f"{step} steps that only repeated", step, step))
        await wait_for(pilot, lambda: "warned 17 times this turn" in conversation_text(app))
        text = conversation_text(app)
        assert text.count("the agent looks stuck") == 1 and "190 steps that only repeated" in text
        app.queue.append(ev.TurnEnd(200, "done"))
        app.queue.append(ev.StuckEvent("repeat", "warn", "`bash: ls` ran 7 times with the same result", 7, 7))
        await wait_for(pilot, lambda: conversation_text(app).count("the agent looks stuck") == 2)
