"""Issue 45: nobody waits on a summary without knowing. A compaction that writes a summary (a model call: seconds
to a minute) is shown when it starts and, when it ends, with how long it took: in the app (Pilot) and in `--plain`
(the REPL through pipes), each with a real session, the real context manager and a summary call that holds until
the test has seen the notice, so a notice shown only after the summary cannot pass."""

from __future__ import annotations

import io
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from tui_support import app_args, async_test, conversation_text, make_app, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.config.sections import ContextSettings
from coder.context.manager import TieredContext
from coder.repl.repl import Repl

LONG = "echo " + "x" * 3000  # the stand-in shell echoes it: 3,000 characters of output a turn
SCRIPT = {"turns": [{"text": f"Step {i}.", "tool_calls": [{"name": "bash", "input": {"command": LONG}}]}
                    for i in range(4)] + [{"text": "All done."}]}
SETTINGS = ContextSettings(compact_at=2500, recent_turns=1, mask_target=0.01, summary_max_tokens=100)
STARTED = "compacting the context (the context is full): summarising"


class HeldSummary:
    """The summary call: it answers only once `seen` is set (at most 120 s), and notes whether it was."""

    def __init__(self) -> None:
        self.seen = threading.Event()
        self.answered: list[bool] = []

    def __call__(self, request: Any) -> tuple[str, None]:
        self.answered.append(self.seen.wait(120))
        return "## Intent\nEcho long lines.\n## Plan and next\n1. finish", None

    def context(self, tmp_path: Path) -> Any:
        return lambda provider: TieredContext(provider, SETTINGS, tmp_path / "state", summarizer=self)


@async_test
async def test_the_app_shows_a_summary_while_it_is_made_and_how_long_it_took(factory, git_repo: Path,
                                                                            tmp_path: Path) -> None:
    held = HeldSummary()
    app, _ = make_app(factory, git_repo, tmp_path, SCRIPT, mode="auto", context=held.context(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "echo long lines")
        await wait_for(pilot, lambda: STARTED in conversation_text(app))
        assert "context compacted (summary" not in conversation_text(app), "the summary is still being made"
        held.seen.set()
        await wait_for(pilot, lambda: "All done." in conversation_text(app))
        text = conversation_text(app)
    assert held.answered[0] and all(held.answered)
    assert "context compacted (summary in " in text and text.index(STARTED) < text.index("context compacted (sum")


def test_plain_prints_a_summary_before_it_is_made_and_how_long_it_took(factory, git_repo: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()

    class Watching(HeldSummary):
        """The REPL runs the turn on this thread: what it printed before the call is all there is to see."""

        def __call__(self, request: Any) -> tuple[str, None]:
            self.answered.append(STARTED in out.getvalue())
            return "## Intent\nEcho long lines.", None

    watching = Watching()
    f = factory(SCRIPT, mode="auto", context=watching.context(tmp_path))
    monkeypatch.setattr(sys, "stdin", io.StringIO("echo long lines\n/quit\n"))
    monkeypatch.setattr(sys, "stdout", out)
    assert Repl(app_args(git_repo, plain=True), opener=f, out=out).run() == 0
    text = out.getvalue()
    assert watching.answered and all(watching.answered), "the notice was not printed before the summary call"
    assert "context compacted (summary in " in text and "All done." in text


def test_plain_says_a_handoff_written_by_code_in_one_line(factory, git_repo: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`[context] handoff = "code"` (the `cost` preset): no summary call, so nothing to wait for and no start line;
    the compaction's line says who wrote the handoff."""
    asked: list[Any] = []

    def context(provider: Any) -> Any:
        settings = ContextSettings(compact_at=2500, recent_turns=1, mask_target=0.01, summary_max_tokens=100,
                                   handoff="code")
        return TieredContext(provider, settings, tmp_path / "state", summarizer=lambda r: asked.append(r))

    out = io.StringIO()
    f = factory(SCRIPT, mode="auto", context=context)
    monkeypatch.setattr(sys, "stdin", io.StringIO("echo long lines\n/quit\n"))
    monkeypatch.setattr(sys, "stdout", out)
    assert Repl(app_args(git_repo, plain=True), opener=f, out=out).run() == 0
    text = out.getvalue()
    assert "context compacted (summary written by code, no model call)" in text and "All done." in text, text
    assert STARTED not in text and not asked
