"""Issue 49: the app's turn line and the plain prompt say the evidence a turn that changed code ended with, in the
colour of its state, and flag a claim the evidence does not support."""

from __future__ import annotations

import io
from pathlib import Path

from tui_support import async_test, make_app, wait_for  # type: ignore[import-not-found]

from coder.base import events as ev
from coder.evidence.record import Evidence, RunRecord
from coder.repl.printer import Printer
from coder.tui.blocks import NoteBlock

HELLO = {"turns": [{"text": "Hello."}]}
RUN = RunRecord("python -m pytest -q tests", "tests", "pytest", "passed", 0,
                {"passed": 4, "failed": 0, "errors": 0, "skipped": 1}, True, True, "model", "the whole suite")
VERIFIED = Evidence("verified", ["calc.py"], [RUN], 0, "tests that cover the change passed after the last change")
FAILED = Evidence("failed", ["calc.py"], [RunRecord("pytest -q", "tests", "pytest", "failed", 1,
                                                    {"passed": 3, "failed": 1, "errors": 0, "skipped": 0}, True,
                                                    True, "model", "the whole suite")], 0, "a run failed")
CLAIMED = Evidence("unverified", ["calc.py"], [], 0, "no test ran", "All tests pass.", True, "nudge")


def event(record: Evidence) -> ev.TurnEvidence:
    return ev.TurnEvidence(record.state, record.to_dict())


@async_test
async def test_the_turn_line(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        for record in (VERIFIED, FAILED, CLAIMED):
            app.queue.append(event(record))
            app.queue.append(ev.TurnEnd(1, "done"))

        def notes() -> list[NoteBlock]:
            return [n for n in app.query(NoteBlock) if "evidence:" in str(n.render())]

        await wait_for(pilot, lambda: len(notes()) == 3)
        verified, failed, claimed = notes()
        assert str(verified.render()) == "evidence: verified — `python -m pytest -q tests`: 4 passed, 1 skipped"
        assert verified.has_class("ok") and failed.has_class("error") and claimed.has_class("error")
        assert "3 passed, 1 failed" in str(failed.render())
        assert str(claimed.render()) == "evidence: unverified — no test ran. Unsupported claim: “All tests pass.”"


def test_the_plain_prompt_line() -> None:
    out = io.StringIO()
    printer = Printer(out, color=False)
    for record in (VERIFIED, CLAIMED):
        printer.event(event(record))
    text = out.getvalue()
    assert "evidence: verified — `python -m pytest -q tests`: 4 passed, 1 skipped" in text
    assert "Unsupported claim: “All tests pass.”" in text
