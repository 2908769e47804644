"""Issue 24: waits on rate limits are shown, with their countdown (a rate-limited request looked like a hang).
With Pilot, the real retry loop (coder/models/retry.py) around a scripted model that is rate-limited once."""

from __future__ import annotations

from pathlib import Path

from tui_support import async_test, conversation_text, make_app, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.models.retry import RetryPolicy, Transient, run_with_retries

HELLO = {"turns": [{"text": "Answered after the wait."}]}


class RateLimitedOnce:
    """The scripted model behind the real retry loop, answering HTTP 429 (retry-after 2 s) the first time."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def complete(self, request, on_text=None, cancel=None):
        def attempt(n: int):
            if n == 0:
                raise Transient(429, "rate limited", retry_after=2.0)
            return self.inner.complete(request, on_text=on_text, cancel=cancel)

        return run_with_retries(attempt, RetryPolicy(), provider="Anthropic", cancel=cancel)


@async_test
async def test_a_rate_limit_wait_is_shown_with_its_countdown(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        session = app.opened.session
        session.parts.provider = RateLimitedOnce(session.parts.provider)
        await type_and_send(pilot, app, "hello")
        await wait_for(pilot, lambda: "retry 1 of 4 in 2s" in conversation_text(app))
        assert "HTTP 429: rate limited" in conversation_text(app)
        await wait_for(pilot, lambda: any(f"retry in {n}s" in str(app.query_one("#status").render()) for n in (2, 1)))
        await wait_for(pilot, lambda: not app.busy and "Answered after the wait." in conversation_text(app))
        assert "retry in" not in str(app.query_one("#status").render())
        opened = f.opened[0]
        waits = [r.data for r in opened.store.events(opened.session.id) if r.type == "retry_wait"]
        assert waits == [{"seconds": 2.0, "attempt": 1, "max_retries": 4, "reason": "HTTP 429: rate limited"}]
