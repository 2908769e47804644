"""Token accounting: a local estimate close to the provider's count, calibrated by real counts."""

from __future__ import annotations

from context_helpers import HistoryBuilder, lines

from coder.context.tokens import TokenEstimator
from coder.models.types import ModelRequest, ToolSpec
from coder.models.wire import build_anthropic_body, input_tokens

TOOLS = [ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})]


def test_estimate_tracks_the_wire_count_within_a_third() -> None:
    h = HistoryBuilder()
    for i in range(10):
        h.bash(f"cat file{i}.py", lines(40, f"code{i}"))
    est = TokenEstimator().request("You are coder.", h.messages, TOOLS)
    wire = input_tokens(build_anthropic_body(ModelRequest("You are coder.", h.messages, TOOLS), "claude-sonnet-4-5"))
    assert 0.67 < est / wire < 1.5


def test_calibration_learns_the_ratio_and_is_clamped() -> None:
    e = TokenEstimator()
    base = e.text("x" * 3500)
    e.calibrate(base, base * 2)
    assert 1.9 < e.scale < 2.1 and e.text("x" * 3500) > 1.9 * base
    for _ in range(30):
        e.calibrate(e.text("x" * 3500), 10**9)
    assert e.scale <= 2.5, "one absurd count cannot make every estimate absurd"
    e.calibrate(0, 100)
    assert e.samples == 31, "empty observations are ignored"


def test_longer_messages_count_more() -> None:
    h = HistoryBuilder()
    h.bash("ls", "a")
    e = TokenEstimator()
    small = e.messages(h.messages)
    h.bash("cat big", lines(100))
    assert e.messages(h.messages) > small + 1000
