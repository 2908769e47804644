"""The interactive hook: the line REPL prints a warning (and a stop) for the user; nudges are for the model only."""

from __future__ import annotations

import io

from coder.base import events as ev
from coder.base.event_versions import event_from_dict
from coder.repl.printer import Printer


def test_repl_shows_warnings_and_stops_not_nudges() -> None:
    out = io.StringIO()
    printer = Printer(out, color=False)
    detail = "bash `make test` ran 7 times with the same result"
    printer.event(ev.StuckEvent("repeat", "nudge", detail, 3, 3, "[Note from coder: ...]", "t1"))
    assert out.getvalue() == ""
    printer.event(ev.StuckEvent("repeat", "warn", detail, 7, 7, "[Note from coder: ...]", "t2"))
    assert "the agent looks stuck: bash `make test` ran 7 times" in out.getvalue() and "Esc" in out.getvalue()
    printer.event(ev.StuckEvent("repeat", "stop", detail, 9, 9))
    assert "coder stopped the turn" in out.getvalue()
    assert event_from_dict(ev.StuckEvent("ping_pong", "stop", "a.py", 9, 12).to_dict()).pattern == "ping_pong"


def test_repl_folds_warnings_that_repeat_into_one_line() -> None:
    """Issue 32: the app warned every 10 steps (about 196 warnings in one run); a warning is said once a turn."""
    out = io.StringIO()
    printer = Printer(out, color=False)
    for step in range(10, 200, 10):
        printer.event(ev.StuckEvent("no_progress", "warn", f"{step} steps that only repeated", step, step))
    printer.event(ev.TurnEnd(200, "done"))
    text = out.getvalue()
    assert text.count("the agent looks stuck") == 1 and "the stuck warning came 19 times this turn" in text
