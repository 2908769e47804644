"""Issue 32, item 3: a running command's live output is bounded for every frontend (coder/engine/live_output.py):
a cap per call, one note, bursts gathered, a quiet tool's last piece still sent, nothing after the result. The
real CLI, app and REPL with a flood: tests/cli/test_cli_live_output.py and tests/tui/test_tui_live_output.py."""

from __future__ import annotations

import threading
import time

from coder.engine.live_output import CUT_NOTE, HEAD, INTERVAL, LiveOutput


def collect() -> tuple[list[str], threading.Event, LiveOutput]:
    sent: list[str] = []
    arrived = threading.Event()

    def emit(text: str) -> None:
        sent.append(text)
        arrived.set()

    return sent, arrived, LiveOutput(emit)


def test_a_flood_is_cut_at_the_head_with_one_note() -> None:
    sent, _, live = collect()
    for _ in range(5000):
        live("y\n" * 100)  # 1 MB in all
    live.close()
    live("after the end\n")
    text = "".join(sent)
    assert text.count("live output stops here") == 1 and text.endswith(CUT_NOTE.format(head=HEAD))
    assert len(text) - len(CUT_NOTE.format(head=HEAD)) == HEAD and "after the end" not in text
    assert len(sent) <= 3  # the burst was gathered, not 5,000 events


def test_small_writes_are_gathered_and_the_last_piece_is_not_held() -> None:
    sent, arrived, live = collect()
    live("first\n")  # the first piece goes at once
    assert sent == ["first\n"]
    arrived.clear()
    for i in range(50):
        live(f"line {i}\n")
    assert len(sent) == 1  # within the interval: waiting
    assert arrived.wait(10 * INTERVAL + 5)  # a timer sends it although the tool went quiet
    time.sleep(0)  # noqa: ASYNC251 - let the timer thread finish its emit
    live.close()
    assert "".join(sent) == "first\n" + "".join(f"line {i}\n" for i in range(50))
    assert len(sent) <= 3


def test_close_sends_what_waits_and_then_nothing() -> None:
    sent, _, live = collect()
    live("a\n")
    live("b\n")  # waits for the interval
    live.close()
    assert "".join(sent) == "a\nb\n"
    live("c\n")
    assert "".join(sent) == "a\nb\n"
