"""AnthropicProvider on the real SDK against the fake server: streaming, tools, caching, thinking, every
fault ending in success, retries running out, context overflow, cancellation."""
# ruff: noqa: F811  (pytest fixtures imported from models_support are parameters here)

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from models_support import BASH, fake, script_file  # noqa: F401 (fixtures; see models_support.py)

from coder.base.errors import ContextOverflowError, ModelError
from coder.models.anthropic_provider import AnthropicProvider
from coder.models.retry import RetryPolicy
from coder.models.scripted import ScriptedProvider
from coder.models.types import (
    Message,
    ModelRequest,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
)
from coder_testkit.fake_server import FakeServer

SYSTEM = "You are coder, a careful coding agent. " * 30


def provider(server: FakeServer, model: str = "claude-sonnet-4-6", retries: int = 4, **kw: Any) -> AnthropicProvider:
    return AnthropicProvider(model, api_key="test-key", base_url=server.base_url,
                             policy=RetryPolicy(max_retries=retries, base_delay=0.01, max_delay=0.05), **kw)


def first_request() -> ModelRequest:
    return ModelRequest(SYSTEM, [Message.user_text("What is in this repository?")], [BASH], max_tokens=1024)


def follow_up(request: ModelRequest, answer: Message, output: str) -> ModelRequest:
    tool_id = answer.tool_uses()[0].id
    messages = request.messages + [answer, Message("user", [ToolResultBlock(tool_id, output)])]
    return ModelRequest(request.system, messages, request.tools, max_tokens=1024,
                        cache_breakpoints=[len(messages) - 1])


def test_streams_text_and_returns_tool_use(fake: FakeServer) -> None:
    deltas: list[str] = []
    response = provider(fake).complete(first_request(), on_text=deltas.append)
    assert len(deltas) >= 2 and "".join(deltas) == "Let me look at the files."
    assert response.stop_reason == "tool_use"
    call = response.message.tool_uses()[0]
    assert call.name == "bash" and call.input == {"command": "ls -la"}
    assert response.usage.output_tokens > 0 and response.usage.total_input > 0
    assert response.cost_known and response.cost_usd > 0
    assert response.request_id and response.request_id.startswith("req_fake_")


def test_request_shape_server_tool_and_cache_breakpoints(fake: FakeServer) -> None:
    p = provider(fake)
    r1 = p.complete(first_request())
    p.complete(follow_up(first_request(), r1.message, "README.md\nsrc/"))
    body = fake.requests[1]
    assert body["tools"] == [{"type": "bash_20250124", "name": "bash", "cache_control": {"type": "ephemeral"}}]
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["stream"] is True


def test_non_claude_model_gets_plain_schema_and_breakpoints_capped_at_four(fake: FakeServer) -> None:
    p = provider(fake, model="my-proxy-model")
    msgs = [Message.user_text(f"m{i}") if i % 2 == 0 else Message("assistant", [TextBlock(f"a{i}")])
            for i in range(9)]
    p.complete(ModelRequest("sys", msgs, [BASH], cache_breakpoints=[0, 2, 4, 6, 8]))
    body = fake.requests[0]
    assert body["tools"][0]["input_schema"]["required"] == ["command"]
    marked = [i for i, m in enumerate(body["messages"]) if "cache_control" in m["content"][-1]]
    assert marked == [4, 6, 8]  # system + the three latest; tools and older ones dropped
    assert "cache_control" not in body["tools"][0]


def test_second_request_reads_the_cache(fake: FakeServer) -> None:
    p = provider(fake)
    r1 = p.complete(first_request())
    assert r1.usage.cache_write_tokens > 0 and r1.usage.cache_read_tokens == 0
    r2 = p.complete(follow_up(first_request(), r1.message, "README.md"))
    assert r2.usage.cache_read_tokens == r1.usage.cache_write_tokens
    assert r2.cost_usd < r1.cost_usd * 5  # cache reads are cheap


def test_thinking_is_not_switched_on_inside_a_tool_loop(fake: FakeServer) -> None:
    """The loop started without thinking, so it ends without (one configuration per assistant turn); the
    thinking round trips themselves are in test_models_request_rules.py."""
    p = provider(fake, model="claude-haiku-4-5")
    r1 = p.complete(first_request())
    request = follow_up(first_request(), r1.message, "README.md")
    request.thinking_budget = 2000
    r2 = p.complete(request)
    assert "thinking" not in fake.requests[1] and fake.requests[1]["max_tokens"] == 1024
    assert not any(isinstance(b, ThinkingBlock) for b in r2.message.content)


@pytest.mark.parametrize(("fault", "attempts"), [
    ("429@1:retry-after=0.3", 2), ("500@1", 2), ("529@1", 2), ("cut@1", 2), ("delay=0.3@1", 1), ("503@1-2", 3),
    ("529@1-3", 4), ("cut@1-2", 3), ("overload@1", 2), ("overload@1-2", 3),
])
def test_each_fault_ends_in_success(script_file: Path, fault: str, attempts: int) -> None:
    with FakeServer(script_file, faults=[fault]) as server:
        deltas: list[str] = []
        started = time.monotonic()
        response = provider(server).complete(first_request(), on_text=deltas.append)
        elapsed = time.monotonic() - started
        assert response.stop_reason == "tool_use"
        assert response.message.text() == "Let me look at the files."
        # text shown during a cut attempt is not shown twice
        assert "".join(deltas) == "Let me look at the files."
        if "retry-after" in fault or "delay" in fault:
            assert elapsed >= 0.3
        assert len(server.requests) == attempts


def test_retries_exhausted_raise_model_error_with_status_and_advice(script_file: Path) -> None:
    with FakeServer(script_file, faults=["529@*"]) as server:
        with pytest.raises(ModelError) as info:
            provider(server, retries=2).complete(first_request())
        assert len(server.requests) == 3
    message = str(info.value)
    assert "529" in message and "overloaded" in message and "3 attempts" in message
    assert "max_retries" in message and "\n" not in message


def test_cut_streams_exhausted_raise_model_error(script_file: Path) -> None:
    with FakeServer(script_file, faults=["cut@*"]) as server, \
            pytest.raises(ModelError, match="connection problem|cut mid-way"):
        provider(server, retries=1).complete(first_request())


def test_prompt_too_long_is_context_overflow_without_retry(script_file: Path) -> None:
    with FakeServer(script_file, context_window=100) as server:
        with pytest.raises(ContextOverflowError, match="context window"):
            provider(server).complete(first_request())
        assert len(server.requests) == 1


def test_auth_and_bad_request_are_not_retried(script_file: Path) -> None:
    with FakeServer(script_file, faults=["401@1", "400@2"]) as server:
        p = provider(server)
        with pytest.raises(ModelError, match="ANTHROPIC_API_KEY"):
            p.complete(first_request())
        with pytest.raises(ModelError, match="HTTP 400"):
            p.complete(first_request())
        assert len(server.requests) == 2


def test_cancel_during_a_stalled_stream_returns_interrupted(script_file: Path) -> None:
    with FakeServer(script_file, faults=["stall=60@1"]) as server:  # a cancel that did not work would wait 60 s
        cancel = threading.Event()
        deltas: list[str] = []

        def on_text(text: str) -> None:
            deltas.append(text)
            cancel.set()

        started = time.monotonic()
        response = provider(server).complete(first_request(), on_text=on_text, cancel=cancel)
        assert time.monotonic() - started < 30
    assert response.stop_reason == "interrupted"
    assert response.message.tool_uses() == []  # a half-received tool call never enters the history
    assert deltas and response.message.text().startswith(deltas[0])


def test_cancel_during_backoff_returns_interrupted(script_file: Path) -> None:
    with FakeServer(script_file, faults=["429@1:retry-after=120"]) as server:
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        started = time.monotonic()
        response = provider(server).complete(first_request(), cancel=cancel)
        assert time.monotonic() - started < 30  # the retry-after is 120 s
    assert response.stop_reason == "interrupted"


def test_count_tokens_local_estimate_and_api_agree_with_the_server(fake: FakeServer) -> None:
    request = first_request()
    local = provider(fake).count_tokens(request)
    remote = provider(fake, count_tokens_api=True).count_tokens(request)
    response = provider(fake).complete(request)
    assert local == remote == response.usage.total_input


def test_scripted_provider_and_fake_server_report_the_same_usage(fake: FakeServer, script_file: Path) -> None:
    over_http = provider(fake)
    in_process = ScriptedProvider(script_file, price_as="claude-sonnet-4-6")
    r_http = over_http.complete(first_request())
    r_local = in_process.complete(first_request())
    assert r_http.usage == r_local.usage
    assert r_http.message.to_dict() == r_local.message.to_dict()
    assert r_http.cost_usd == pytest.approx(r_local.cost_usd)


def test_max_tokens_with_a_tool_call_stays_max_tokens() -> None:
    script = {"turns": [{"text": "x", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}],
                         "stop_reason": "max_tokens"}]}
    with FakeServer(script) as server:
        response = provider(server).complete(first_request())
    assert response.stop_reason == "max_tokens"


def test_cancel_from_another_thread_while_the_read_is_blocked(script_file: Path) -> None:
    with FakeServer(script_file, faults=["stall=5@1"]) as server:
        cancel = threading.Event()
        deltas: list[str] = []
        threading.Timer(0.4, cancel.set).start()
        started = time.monotonic()
        response = provider(server).complete(first_request(), on_text=deltas.append, cancel=cancel)
        assert time.monotonic() - started < 3
        time.sleep(0.1)
        shown = list(deltas)
    assert response.stop_reason == "interrupted"
    assert response.message.text() == "".join(shown)  # what was on screen is what the history keeps


def test_temperature_reaches_the_api(tmp_path) -> None:
    """The installed SDK's stream() has no `temperature` argument; it must still reach the request body."""
    import os

    from coder.models.registry import create_provider
    from coder.models.types import Message, ModelRequest
    from coder_testkit.fake_server import FakeServer

    with FakeServer({"turns": [{"text": "warm"}]}) as server:
        os.environ["ANTHROPIC_BASE_URL"], os.environ["ANTHROPIC_API_KEY"] = server.base_url, "k"
        try:
            provider = create_provider("anthropic:claude-sonnet-4-6", {})
            response = provider.complete(ModelRequest("sys", [Message.user_text("hi")], temperature=0.3))
        finally:
            del os.environ["ANTHROPIC_BASE_URL"], os.environ["ANTHROPIC_API_KEY"]
        body = server.requests[0]
    assert response.message.text() == "warm" and body["temperature"] == 0.3
