"""Issue 45: what a summary keeps of the turns it replaces. Every call is listed with its output inline or its
`output://` handle, so nothing the session ran is more than a read away."""

from __future__ import annotations

from pathlib import Path

from context_helpers import HistoryBuilder, lines

from coder.context.calllog import CALLS_HEADER, call_log
from coder.store.outputs import load_output


def _grep_session(n: int) -> HistoryBuilder:
    h = HistoryBuilder(task="Find where rows are padded.")
    for i in range(n):
        found = f"src/rows_{i}.py:{1100 + i}:def _pad_{i}(row):" if i % 2 else lines(40 + i, f"out{i}")
        h.bash(f"grep -rn '_pad_{i}' src && echo step {i}\nsecond line of the command", found)
    return h


def test_every_call_is_listed_inline_or_by_handle(tmp_path: Path) -> None:
    h = _grep_session(6)
    log = call_log(h.messages, tmp_path)
    assert len(log) == 6 and all(line.startswith("- `grep -rn '_pad_") for line in log)
    assert all(" …`" in line for line in log), "a command of several lines shows its first"
    assert "src/rows_1.py:1101:def _pad_1(row):" in log[1], "a short output is inline"
    handle = log[0].rsplit(" ", 1)[1]
    assert handle.startswith("output://") and load_output(tmp_path, handle).startswith("out0 00001")


def test_over_its_budget_the_oldest_calls_give_way_to_the_handle_of_the_whole_list(tmp_path: Path) -> None:
    h = _grep_session(60)
    log = call_log(h.messages, tmp_path, budget_chars=2_000)
    assert sum(len(line) + 1 for line in log) <= 2_000 and log[-1].startswith("- `grep -rn '_pad_59'")
    first = log[0]
    assert first.startswith("- (") and "earlier calls: the whole list is at output://" in first
    whole = load_output(tmp_path, first.rsplit(" ", 1)[1].rstrip(")"))
    assert whole.startswith(CALLS_HEADER) and whole.count("\n- `grep") == 60
    assert "src/rows_1.py:1101:def _pad_1(row):" in whole, "short outputs inline in the whole list too"
