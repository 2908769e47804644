"""The scripted provider: streaming, tool ids, deterministic usage, thinking, cancellation, exhaustion."""
# ruff: noqa: F811  (pytest fixtures imported from models_support are parameters here)

from __future__ import annotations

import threading
import time
from pathlib import Path

from models_support import script_file  # noqa: F401 (fixtures; see models_support.py)

from coder.models.script import EXHAUSTED_TEXT
from coder.models.scripted import ScriptedProvider
from coder.models.types import (
    Message,
    ModelRequest,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
)

TOOLS = [ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})]


def request(*messages: Message, thinking: int | None = None) -> ModelRequest:
    return ModelRequest("You are coder.", list(messages) or [Message.user_text("go")], TOOLS,
                        thinking_budget=thinking)


def test_runs_a_script_with_streaming_and_tool_calls(script_file: Path) -> None:
    p = ScriptedProvider(script_file)
    deltas: list[str] = []
    r1 = p.complete(request(), on_text=deltas.append)
    assert len(deltas) >= 2 and "".join(deltas) == "Let me look at the files."
    assert r1.stop_reason == "tool_use"
    call = r1.message.tool_uses()[0]
    assert (call.id, call.name, call.input) == ("toolu_0001_0", "bash", {"command": "ls -la"})
    assert r1.cost_usd == 0 and r1.cost_known
    r2 = p.complete(request(Message.user_text("go"), r1.message, Message("user", [ToolResultBlock(call.id, "x")])))
    assert r2.stop_reason == "end_turn" and r2.message.text() == "All done: it is a Python project."
    assert not any(isinstance(b, ThinkingBlock) for b in r2.message.content)  # thinking not requested
    r3 = p.complete(request())
    assert r3.message.text() == EXHAUSTED_TEXT and r3.stop_reason == "end_turn"


def test_thinking_when_requested(script_file: Path) -> None:
    p = ScriptedProvider(script_file)
    p.complete(request())
    r2 = p.complete(request(thinking=2048))
    assert isinstance(r2.message.content[0], ThinkingBlock)
    assert r2.message.content[0].signature.startswith("sig_")


def test_usage_is_deterministic_and_matches_count_tokens(script_file: Path) -> None:
    a, b = ScriptedProvider(script_file), ScriptedProvider(script_file)
    ra, rb = a.complete(request()), b.complete(request())
    assert ra.usage == rb.usage
    assert ra.usage.total_input == a.count_tokens(request())
    assert ra.usage.cache_write_tokens > 0  # system prompt + tools are written to the (emulated) cache
    again = a.complete(request())
    assert again.usage.cache_read_tokens == ra.usage.cache_write_tokens


def test_price_as_prices_a_replay(script_file: Path) -> None:
    r = ScriptedProvider(script_file, price_as="claude-sonnet-4-5").complete(request())
    assert r.cost_known and r.cost_usd > 0


def test_cancel_mid_stream_returns_interrupted_without_tool_calls(script_file: Path) -> None:
    p = ScriptedProvider(script_file)
    cancel = threading.Event()
    deltas: list[str] = []

    def on_text(text: str) -> None:
        deltas.append(text)
        cancel.set()

    r = p.complete(request(), on_text=on_text, cancel=cancel)
    assert r.stop_reason == "interrupted"
    assert len(deltas) == 1 and r.message.text() == deltas[0]
    assert r.message.tool_uses() == []


def test_a_cancel_ends_the_pause_between_chunks_at_once(script_file: Path) -> None:
    """The pause comes between chunks (none after the last) and a cancel from another thread ends it: a test that
    interrupts mid-stream needs no race with the pacing."""
    p = ScriptedProvider(script_file, chunk_delay=600)
    cancel = threading.Event()
    deltas: list[str] = []
    timer = threading.Timer(0.2, cancel.set)
    started = time.monotonic()
    timer.start()
    r = p.complete(request(), on_text=deltas.append, cancel=cancel)
    assert time.monotonic() - started < 60  # not the 600 s pause
    assert r.stop_reason == "interrupted" and len(deltas) == 1 and r.message.text() == deltas[0]
    whole = ScriptedProvider(script_file, chunk_delay=0.2)
    started = time.monotonic()
    chunks: list[str] = []
    whole.complete(request(), on_text=chunks.append)
    assert time.monotonic() - started >= 0.2 * (len(chunks) - 1) and len(chunks) >= 2  # paced between chunks


def test_cancel_before_start(script_file: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    p = ScriptedProvider(script_file)
    assert p.complete(request(), cancel=cancel).stop_reason == "interrupted"
    # the interrupted request did not use up the turn
    assert p.complete(request()).message.text() == "Let me look at the files."


def test_a_fresh_provider_resumes_where_the_history_stopped(script_file: Path) -> None:
    first = ScriptedProvider(script_file)
    r1 = first.complete(request())
    history = [Message.user_text("go"), r1.message, Message("user", [ToolResultBlock("toolu_0001_0", "x")])]
    resumed = ScriptedProvider(script_file)  # a new process after SIGKILL / --resume
    r2 = resumed.complete(request(*history))
    assert r2.message.text() == "All done: it is a Python project."
