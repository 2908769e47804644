"""The retry policy both HTTP providers share: exponential backoff with full jitter, retry-after honoured,
cancellable sleeps, and a one-paragraph ModelError when it gives up.

The SDKs' own retries are switched off (max_retries=0) so that one policy, configured in one place, covers
every failure mode, including the one the SDKs cannot retry: a stream cut after it started. A retried stream
may already have shown text; `TextRelay` keeps the user's screen from showing it twice.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from coder.base.errors import ModelError

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Transient(Exception):
    """A failure worth retrying. `status` is the HTTP status (0 for connection problems and cut streams)."""

    status: int
    detail: str
    retry_after: float | None = None

    def __str__(self) -> str:
        return f"HTTP {self.status}: {self.detail}" if self.status else self.detail


@dataclass
class RetryPolicy:
    max_retries: int = 4
    base_delay: float = 1.0
    max_delay: float = 60.0
    #: a retry-after longer than this is not waited for: we give up and say so instead
    max_retry_after: float = 300.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt` (0-based): retry-after when the server gave one,
        else full jitter over an exponentially growing window."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        window = min(self.max_delay, self.base_delay * (2**attempt))
        return random.uniform(0, window)


#: who hears about a retry wait (the session, to show it with its countdown): (seconds, retry number, max, why)
RETRY_LISTENER: contextvars.ContextVar[Callable[[float, int, int, Transient], None] | None] = \
    contextvars.ContextVar("retry_listener", default=None)


@contextlib.contextmanager
def retry_listener(listener: Callable[[float, int, int, Transient], None]) -> Any:
    """Tell `listener` about every wait before a retry in this context (issue 24: a rate-limited request looked
    like a hang; the person now sees why it waits and for how long). A context variable, so the providers'
    signatures stay as they are."""
    token = RETRY_LISTENER.set(listener)
    try:
        yield
    finally:
        RETRY_LISTENER.reset(token)


def run_with_retries(
    attempt_fn: Callable[[int], T],
    policy: RetryPolicy,
    *,
    provider: str,
    cancel: threading.Event | None = None,
    on_interrupt: Callable[[], T] | None = None,
    hint: str = "",
) -> T:
    """Call `attempt_fn(attempt)` until it returns; retry on `Transient`. When `cancel` is set during a wait,
    return `on_interrupt()` (the caller's empty "interrupted" response)."""
    started = time.monotonic()
    failures: list[Transient] = []
    for attempt in range(policy.max_retries + 1):
        try:
            return attempt_fn(attempt)
        except Transient as exc:
            failures.append(exc)
            if attempt >= policy.max_retries:
                break
            if exc.retry_after is not None and exc.retry_after > policy.max_retry_after:
                break
            wait = policy.delay(attempt, exc.retry_after)
            listener = RETRY_LISTENER.get()
            if listener is not None:
                with contextlib.suppress(Exception):  # a display problem never stops a retry
                    listener(wait, attempt + 1, policy.max_retries, exc)
            if cancel is not None:
                if cancel.wait(wait):
                    if on_interrupt is not None:
                        return on_interrupt()
                    break
            else:
                time.sleep(wait)
    last = failures[-1]
    elapsed = time.monotonic() - started
    tries = len(failures)
    what = "overloaded" if last.status == 529 else "rate-limited" if last.status == 429 else "failing"
    advice = ("This is usually temporary: wait a minute, then resume the session (`coder run --continue`)"
              if last.status in (0, 429, 500, 502, 503, 504, 529) or last.status >= 500
              else "Check the request and the provider's status page")
    raise ModelError(
        f"The {provider} API kept {what}: the last of {tries} attempt{'s' if tries != 1 else ''} over "
        f"{elapsed:.0f} s ended with {last}. {advice}; to retry longer, raise `max_retries` or "
        f"`retry_base_delay` under [providers.{provider.lower()}] in the config.{(' ' + hint) if hint else ''}"
    )


class TextRelay:
    """Forwards text deltas to `sink`, but after a retry swallows text the user has already seen.

    When the new attempt repeats what was shown, only the continuation is forwarded. When it diverges, a blank
    line marks the restart and the new text follows, so what is on screen never silently mixes two answers.
    After `close()` nothing more reaches the sink (a cancelled stream may still be draining in its thread).
    """

    def __init__(self, sink: Callable[[str], None] | None) -> None:
        self.sink = sink
        self.shown = ""
        self.attempt_text = ""
        self.diverged = False
        self.closed = False
        self._lock = threading.Lock()

    def restart(self) -> None:
        with self._lock:
            self.attempt_text = ""
            self.diverged = False

    def close(self) -> str:
        """Stop forwarding; return the text of the current attempt."""
        with self._lock:
            self.closed = True
            return self.attempt_text

    def __call__(self, delta: str) -> None:
        with self._lock:
            if self.closed or not delta:
                return
            before = len(self.attempt_text)
            self.attempt_text += delta
            if self.sink is None:
                return
            if self.diverged:
                self.shown = self.attempt_text
                self.sink(delta)
                return
            if self.shown.startswith(self.attempt_text):
                return  # still repeating what is on screen
            if self.attempt_text.startswith(self.shown):
                fresh = self.attempt_text[max(before, len(self.shown)):]
                self.shown = self.attempt_text
                if fresh:
                    self.sink(fresh)
                return
            self.diverged = True
            self.shown = self.attempt_text
            self.sink("\n\n" + self.attempt_text)


def run_interruptibly(work: Callable[[], T], cancel: threading.Event | None,
                      on_cancel: Callable[[], None]) -> tuple[bool, T | None]:
    """Run `work()` so that setting `cancel` returns control at once: (True, None) when cancelled, else
    (False, result); exceptions of `work` propagate.

    Closing an HTTP stream from another thread does not wake a read blocked in it, so the stream is consumed in
    a daemon thread and abandoned on cancel (`on_cancel` closes it, best effort, so the thread ends soon)."""
    if cancel is None:
        return False, work()
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 (handed over to the caller's thread)
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=target, name="model-stream", daemon=True).start()
    while not finished.wait(0.02):
        if cancel.is_set():
            with contextlib.suppress(Exception):  # closing a dying stream may fail in any way
                on_cancel()
            return True, None
    if "error" in outcome:
        raise outcome["error"]
    return False, outcome["value"]


def retry_after_seconds(exc: Any) -> float | None:
    """Seconds from the retry-after-ms / retry-after header of an SDK status error, if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return float(value) * scale
            except ValueError:
                continue
    return None


def attempt_stream(stream_once: Callable[[dict[str, Any]], R], relay: TextRelay,
                   cancel: threading.Event | None, interrupted: Callable[[str], R]) -> R:
    """One streaming attempt that a cancel can cut at once: `stream_once(holder)` puts the open stream in
    `holder["stream"]` so it can be closed; on cancel, `interrupted(text shown so far)` is the answer."""
    relay.restart()
    holder: dict[str, Any] = {}

    def close() -> None:
        if "stream" in holder:
            holder["stream"].close()

    was_cut, response = run_interruptibly(lambda: stream_once(holder), cancel, close)
    if was_cut or response is None:
        return interrupted(relay.close())
    return response
