"""The retry policy's arithmetic and the text relay that keeps retried streams from repeating on screen."""

from __future__ import annotations

import pytest

from coder.base.errors import ModelError
from coder.models.retry import RetryPolicy, TextRelay, Transient, run_with_retries


def test_full_jitter_stays_in_the_exponential_window() -> None:
    policy = RetryPolicy(max_retries=5, base_delay=0.5, max_delay=3.0)
    for attempt, window in [(0, 0.5), (1, 1.0), (2, 2.0), (3, 3.0), (6, 3.0)]:
        delays = [policy.delay(attempt, None) for _ in range(200)]
        assert all(0 <= d <= window for d in delays)
        assert max(delays) > window * 0.5  # jitter actually spreads
    assert policy.delay(0, 2.5) == 2.5  # retry-after wins


def test_gives_up_immediately_on_an_absurd_retry_after() -> None:
    calls = []

    def attempt(n: int) -> str:
        calls.append(n)
        raise Transient(429, "rate_limit_error: slow down", retry_after=3600)

    with pytest.raises(ModelError, match="rate-limited.*1 attempt "):
        run_with_retries(attempt, RetryPolicy(max_retries=3), provider="Anthropic")
    assert calls == [0]


def test_succeeds_after_transient_failures() -> None:
    def attempt(n: int) -> str:
        if n < 2:
            raise Transient(500, "api_error")
        return "ok"

    assert run_with_retries(attempt, RetryPolicy(max_retries=2, base_delay=0.001), provider="X") == "ok"


def test_relay_swallows_repeated_text_and_marks_divergence() -> None:
    shown: list[str] = []
    relay = TextRelay(shown.append)
    relay.restart()
    for piece in ["Let me ", "look"]:
        relay(piece)
    relay.restart()  # the stream was cut; the retry repeats and continues
    for piece in ["Let ", "me look", " at it."]:
        relay(piece)
    assert "".join(shown) == "Let me look at it."
    relay.restart()  # a retry that says something else
    relay("Different answer")
    assert shown[-1] == "\n\nDifferent answer"
