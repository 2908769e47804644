"""OpenAIProvider on the real openai SDK against the fake server's chat-completions route."""
# ruff: noqa: F811  (pytest fixtures imported from models_support are parameters here)

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from fake_rules_support import png
from models_support import fake, script_file  # noqa: F401 (fixtures; see models_support.py)

from coder.base.errors import ContextOverflowError, ModelError
from coder.models.openai_provider import OpenAIProvider, to_openai_messages
from coder.models.retry import RetryPolicy
from coder.models.types import (
    ImageBlock,
    Message,
    ModelRequest,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from coder_testkit.fake_rules import check_chat
from coder_testkit.fake_server import FakeServer

BASH = ToolSpec("bash", "Run a shell command.", {"type": "object", "properties": {"command": {"type": "string"}}},
                anthropic_type="bash_20250124")


def provider(server: FakeServer, retries: int = 3) -> OpenAIProvider:
    return OpenAIProvider("qwen2.5-coder", api_key="no-key-needed", base_url=server.base_url + "/v1",
                          policy=RetryPolicy(max_retries=retries, base_delay=0.01, max_delay=0.05))


def request() -> ModelRequest:
    return ModelRequest("You are coder. " * 20, [Message.user_text("What is here?")], [BASH])


def test_tool_call_round_trip_with_streaming_and_cached_usage(fake: FakeServer) -> None:
    p = provider(fake)
    deltas: list[str] = []
    r1 = p.complete(request(), on_text=deltas.append)
    assert "".join(deltas) == "Let me look at the files." and len(deltas) >= 2
    assert r1.stop_reason == "tool_use"
    call = r1.message.tool_uses()[0]
    assert call.name == "bash" and call.input == {"command": "ls -la"} and call.id.startswith("call_")
    assert r1.usage.input_tokens > 0 and r1.usage.cache_read_tokens == 0 and r1.usage.output_tokens > 0
    assert not r1.cost_known  # a local model has no price: the UI says "cost unknown"

    req2 = request()
    req2.messages += [r1.message, Message("user", [ToolResultBlock(call.id, "README.md")])]
    r2 = p.complete(req2)
    assert r2.stop_reason == "end_turn" and r2.message.text() == "All done: it is a Python project."
    assert r2.usage.cache_read_tokens > 0  # system + first user message were sent before
    body = fake.requests[1]
    assert body["tools"][0]["function"]["name"] == "bash"  # plain schema, never the Anthropic server type
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert body["messages"][3] == {"role": "tool", "tool_call_id": call.id, "content": "README.md"}
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_block_conversion_orders_tool_results_before_text_and_drops_thinking() -> None:
    req = ModelRequest("S", [
        Message.user_text("task"),
        Message("assistant", [ThinkingBlock("hmm", "sig"), TextBlock("running"),
                              ToolUseBlock("t1", "bash", {"command": "ls"})]),
        Message("user", [TextBlock("also this"), ToolResultBlock("t1", "boom", is_error=True)]),
    ])
    out = to_openai_messages(req)
    assert out[2]["tool_calls"][0]["function"] == {"name": "bash", "arguments": json.dumps({"command": "ls"})}
    assert out[2]["content"] == "running"
    assert out[3] == {"role": "tool", "tool_call_id": "t1", "content": "[tool error] boom"}
    assert out[4] == {"role": "user", "content": "also this"}


@pytest.mark.parametrize("fault", ["429@1:retry-after=0.1", "500@1", "cut@1", "529@1-2", "overload@1"])
def test_faults_end_in_success(script_file: Path, fault: str) -> None:
    with FakeServer(script_file, faults=[fault]) as server:
        deltas: list[str] = []
        response = provider(server).complete(request(), on_text=deltas.append)
    assert response.message.tool_uses()[0].input == {"command": "ls -la"}
    assert "".join(deltas) == "Let me look at the files."


def test_retries_exhausted_name_the_provider_and_local_server_hint(script_file: Path) -> None:
    with FakeServer(script_file, faults=["503@*"]) as server, \
            pytest.raises(ModelError, match="OpenAI API kept failing.*503.*OPENAI_BASE_URL"):
        provider(server, retries=1).complete(request())


def test_context_length_error_is_overflow_without_retry(script_file: Path) -> None:
    with FakeServer(script_file, context_window=20) as server:
        with pytest.raises(ContextOverflowError, match="context window of qwen2.5-coder"):
            provider(server).complete(request())
        assert len(server.requests) == 1


def test_unreachable_server_gives_model_error() -> None:
    p = OpenAIProvider("m", api_key="k", base_url="http://127.0.0.1:9/v1",
                       policy=RetryPolicy(max_retries=1, base_delay=0.01))
    with pytest.raises(ModelError, match="connection problem"):
        p.complete(request())


def test_raw_sdk_non_streaming_completion(fake: FakeServer) -> None:
    import openai

    client = openai.OpenAI(api_key="k", base_url=fake.base_url + "/v1", max_retries=0)
    completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "Let me look at the files."
    assert json.loads(choice.message.tool_calls[0].function.arguments) == {"command": "ls -la"}
    assert completion.usage.prompt_tokens > 0
    with pytest.raises(openai.BadRequestError, match="role 'tool' must be a response"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"},
                                                            {"role": "tool", "tool_call_id": "x", "content": "y"}])


def test_length_finish_with_a_tool_call_stays_max_tokens() -> None:
    script = {"turns": [{"tool_calls": [{"name": "bash", "input": {"command": "ls"}}], "stop_reason": "max_tokens"}]}
    with FakeServer(script) as server:
        assert provider(server).complete(request()).stop_reason == "max_tokens"


def test_cancel_during_a_stalled_stream_returns_interrupted(script_file: Path) -> None:
    import threading
    import time

    with FakeServer(script_file, faults=["stall=60@1"]) as server:  # a cancel that did not work would wait 60 s
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        started = time.monotonic()
        response = provider(server).complete(request(), cancel=cancel)
        assert time.monotonic() - started < 30
    assert response.stop_reason == "interrupted" and response.message.tool_uses() == []


@pytest.mark.parametrize(("model", "effort"), [("gpt-5.6-terra", "none"), ("gpt-5.6-sol", "none"),
                                              ("gpt-6-luna", "none"), ("gpt-5.5", None), ("gpt-5", None)])
def test_gpt5_families_get_the_parameters_their_pages_document(fake: FakeServer, model: str,
                                                               effort: str | None) -> None:
    """Issue 46: GPT-5.6 (and ids after it the table does not list yet) take function tools on Chat Completions only
    with reasoning_effort "none"; GPT-5.5 and earlier with their default (the 5.0 models refuse "none"); no GPT-5
    model takes a temperature but the default; every one takes max_completion_tokens. The fake refuses each."""
    p = OpenAIProvider(model, api_key="k", base_url=fake.base_url + "/v1", policy=RetryPolicy(max_retries=0))
    asked = request()
    asked.temperature = 0.2
    assert p.complete(asked).stop_reason == "tool_use"
    body = fake.requests[-1]
    assert body.get("reasoning_effort") == effort and "temperature" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] > 0
    plain = request()
    plain.tools = []
    p.complete(plain)
    assert "reasoning_effort" not in fake.requests[-1], "only with tools"


def test_an_openai_request_holds_at_most_500_images() -> None:
    """The images-vision guide allowed 500 images a request before its 2026 revision (1500 now): coder keeps the
    newest 500 on every OpenAI-compatible model, which holds against either; the older ones become notes."""
    image = ImageBlock("image/png", base64.b64encode(png(8, 8)).decode(), "dot.png", 8, 8)
    p = OpenAIProvider("gpt-4.1", api_key="k", base_url="http://127.0.0.1:9/v1", context_window=1_047_576)
    body = p._body(ModelRequest("s", [Message("user", [TextBlock("look"), *[image] * 600])]))
    parts = body["messages"][-1]["content"]
    assert sum(1 for x in parts if x["type"] == "image_url") == 500
    assert check_chat(body) is None
