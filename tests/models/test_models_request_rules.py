"""The six request paths of issue 16, each through the real SDK against the strict fake server, on a model of each
thinking kind: none (claude-3-5-haiku), budget (claude-haiku-4-5), adaptive (claude-opus-4-7, claude-opus-4-8,
claude-sonnet-5, claude-sonnet-5-5) and always (claude-opus-5-5). The fake server refuses what the real API refuses,
so a passing request is the evidence; the control tests show the same server refusing the unrepaired body."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from models_support import BASH

from coder.models.anthropic_provider import AnthropicProvider
from coder.models.openai_provider import OpenAIProvider
from coder.models.retry import RetryPolicy
from coder.models.tool_names import api_tool_name
from coder.models.types import (
    Message,
    ModelRequest,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from coder_testkit.fake_server import FakeServer

SYSTEM = "You are coder, a careful coding agent."
KINDS = {"none": "claude-3-5-haiku", "budget": "claude-haiku-4-5", "adaptive": "claude-opus-4-7",
         "always": "claude-opus-5-5"}
LOOP = {"turns": [
    {"thinking": "I should list the files.", "text": "   ",
     "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
    {"thinking": "It is a Python project.", "text": "A Python project."},
    {"text": "Anything else?"},
]}


def anthropic_provider(server: FakeServer, model: str) -> AnthropicProvider:
    return AnthropicProvider(model, api_key="k", base_url=server.base_url,
                             policy=RetryPolicy(max_retries=0, base_delay=0.01, max_delay=0.05))


def first(max_tokens: int = 1024, budget: int | None = None, tools: list[ToolSpec] | None = None) -> ModelRequest:
    return ModelRequest(SYSTEM, [Message.user_text("What is in this repository?")], tools or [BASH],
                        max_tokens=max_tokens, thinking_budget=budget)


def then(request: ModelRequest, answer: Message, output: str = "README.md setup.py") -> ModelRequest:
    uses = answer.tool_uses()
    messages = request.messages + [answer, Message("user", [ToolResultBlock(u.id, output) for u in uses])]
    return ModelRequest(request.system, messages, request.tools, request.max_tokens,
                        cache_breakpoints=[len(messages) - 1], thinking_budget=request.thinking_budget)


def texts(body: dict[str, Any]) -> list[str]:
    return [b["text"] for m in body["messages"] for b in m["content"] if b["type"] == "text"]


# ------------------------------------------------------------------------------- 1. whitespace-only text


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_whitespace_text_before_a_tool_call_is_not_sent_back(kind: str) -> None:
    with FakeServer(LOOP) as server:
        p = anthropic_provider(server, KINDS[kind])
        r1 = p.complete(first(budget=2048))
        assert TextBlock("   ") in r1.message.content  # the answer really had a blank text block
        r2 = p.complete(then(first(budget=2048), r1.message))
        assert r2.message.text() == "A Python project."
        assert all(t.strip() for t in texts(server.requests[1]))


def test_an_assistant_message_left_empty_gets_placeholder_text() -> None:
    history = [Message.user_text("hi"), Message("assistant", [TextBlock(" \n ")]), Message.user_text("again")]
    with FakeServer({"turns": [{"text": "Hello."}]}) as server:
        response = anthropic_provider(server, "claude-haiku-4-5").complete(ModelRequest(SYSTEM, history))
        assert response.message.text() == "Hello."
        assert server.requests[0]["messages"][1]["content"] == [{"type": "text", "text": "(empty)"}]


# ---------------------------------------------------------------------------- 2. thinking kind per model


@pytest.mark.parametrize(("model", "expected"), [
    ("claude-haiku-4-5", {"type": "enabled", "budget_tokens": 4000}),
    ("claude-opus-4-7", {"type": "adaptive"}),
    ("claude-opus-4-8", {"type": "adaptive"}),
    ("claude-sonnet-5", {"type": "adaptive"}),
    ("claude-opus-5-5", {"type": "adaptive"}),
])
def test_each_model_gets_its_own_thinking_shape(model: str, expected: dict[str, Any]) -> None:
    with FakeServer(LOOP) as server:
        response = anthropic_provider(server, model).complete(first(max_tokens=8000, budget=4000))
        body = server.requests[0]
        assert body["thinking"] == expected
        assert ("output_config" in body) == (expected["type"] == "adaptive")
        assert isinstance(response.message.content[0], ThinkingBlock)


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-5", "claude-3-5-haiku"])
def test_no_thinking_asked_never_sends_disabled_and_always_models_still_think(model: str) -> None:
    with FakeServer(LOOP) as server:
        response = anthropic_provider(server, model).complete(first())
        assert "thinking" not in server.requests[0]
        thinks = isinstance(response.message.content[0], ThinkingBlock)
        assert thinks == (model != "claude-3-5-haiku")  # 5.x models think by default


# ------------------------------------------------------------------------------------ 3. max_tokens


@pytest.mark.parametrize(("max_tokens", "budget"), [(1024, 64_000), (100_000, None), (100_000, 2048)])
def test_max_tokens_stays_within_the_models_output_limit(max_tokens: int, budget: int | None) -> None:
    with FakeServer(LOOP) as server:
        anthropic_provider(server, "claude-haiku-4-5").complete(first(max_tokens, budget))
        body = server.requests[0]
        assert body["max_tokens"] <= 64_000
        if budget:
            assert 1024 <= body["thinking"]["budget_tokens"] < body["max_tokens"]


def test_control_the_fake_refuses_max_tokens_over_the_limit() -> None:
    with FakeServer(LOOP) as server:
        client = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
            client.messages.create(model="claude-haiku-4-5", max_tokens=65_024, timeout=30,
                                   messages=[{"role": "user", "content": "hi"}])


# ----------------------------------------------------------------------- 4. MCP tool names and schemas

LONG = "mcp__github-enterprise.internal__search_issues_and_pull_requests_by_label_and_milestone"
UNION = ToolSpec(LONG, "Search.", {"anyOf": [
    {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
    {"type": "object", "properties": {"milestone": {"type": "string"}}, "required": ["milestone"]}]})


def _mcp_script() -> dict[str, Any]:
    call = {"name": api_tool_name(LONG), "input": {"input": {"label": "bug"}}}
    return {"turns": [{"text": "Searching.", "tool_calls": [call]}, {"text": "Found 3 issues."}]}


@pytest.mark.parametrize("model", ["claude-haiku-4-5", "claude-opus-5-5"])
def test_mcp_tool_with_a_union_schema_and_a_long_name_on_anthropic(model: str) -> None:
    with FakeServer(_mcp_script()) as server:
        p = anthropic_provider(server, model)
        r1 = p.complete(first(tools=[BASH, UNION]))
        call = r1.message.tool_uses()[0]
        assert (call.name, call.input) == (LONG, {"label": "bug"})  # mapped back for the engine's dispatch
        r2 = p.complete(then(first(tools=[BASH, UNION]), r1.message, "3 issues"))
        assert r2.message.text() == "Found 3 issues."
        sent = server.requests[1]["tools"][1]
        assert len(sent["name"]) <= 64 and sent["input_schema"]["type"] == "object"
        assert server.requests[1]["messages"][1]["content"][-1]["input"] == {"input": {"label": "bug"}}


def test_mcp_tool_with_a_union_schema_and_a_long_name_on_openai() -> None:
    with FakeServer(_mcp_script()) as server:
        p = OpenAIProvider("qwen2.5-coder", api_key="k", base_url=server.base_url + "/v1",
                           policy=RetryPolicy(max_retries=0))
        r1 = p.complete(first(tools=[BASH, UNION]))
        call = r1.message.tool_uses()[0]
        assert (call.name, call.input) == (LONG, {"label": "bug"})
        assert p.complete(then(first(tools=[BASH, UNION]), r1.message, "3 issues")).message.text() == \
            "Found 3 issues."
        assert r1.notes and "not in coder's model table" in r1.notes[0]  # said once, on the first answer


def test_control_the_fake_refuses_the_raw_mcp_tool() -> None:
    with FakeServer(_mcp_script()) as server:
        client = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0)
        with pytest.raises(anthropic.BadRequestError):
            client.messages.create(model="claude-haiku-4-5", max_tokens=100, messages=[
                {"role": "user", "content": "hi"}], tools=[{"name": LONG, "description": "x",
                                                           "input_schema": UNION.input_schema}])


# -------------------------------------------------------------------- 5. thinking turned on mid tool loop


@pytest.mark.parametrize(("model", "expected"), [
    ("claude-haiku-4-5", None),  # budget: stays off until the loop ends
    ("claude-opus-4-8", None),  # adaptive, off by default
    ("claude-sonnet-5", {"type": "disabled"}),  # thinks by default: turned off for the rest of the loop
    ("claude-sonnet-5-5", {"type": "between_tools"}),  # its documented way to turn up-front thinking off
    ("claude-opus-5-5", {"type": "adaptive"}),  # always thinks: the call without thinking goes as text
])
def test_thinking_switched_on_inside_a_tool_loop(model: str, expected: dict[str, Any] | None) -> None:
    """The loop was started without thinking (by claude-3-5-haiku: a resumed session on another model, or a
    mode change), then continues on `model` with thinking asked for."""
    with FakeServer(LOOP) as server:
        r1 = anthropic_provider(server, "claude-3-5-haiku").complete(first())
        assert not any(isinstance(b, ThinkingBlock) for b in r1.message.content)
        request = then(first(), r1.message)
        request.thinking_budget = 4000
        r2 = anthropic_provider(server, model).complete(request)
        assert r2.message.text() == "A Python project."
        assert server.requests[1].get("thinking") == expected
        if model == "claude-opus-5-5":
            sent = texts(server.requests[1])
            assert any(t.startswith("[tool call bash") for t in sent)
            assert any(t.startswith("[tool result of bash]") for t in sent)


def test_control_the_fake_refuses_thinking_switched_on_mid_loop() -> None:
    with FakeServer(LOOP) as server:
        r1 = anthropic_provider(server, "claude-haiku-4-5").complete(first())
        body = {"model": "claude-haiku-4-5", "max_tokens": 8000, "system": SYSTEM,
                "thinking": {"type": "enabled", "budget_tokens": 4000},
                "messages": [{"role": "user", "content": "What is in this repository?"},
                             {"role": "assistant", "content": [{"type": "tool_use", "id": u.id, "name": u.name,
                                                                "input": u.input} for u in r1.message.tool_uses()]},
                             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id,
                                                           "content": "x"} for u in r1.message.tool_uses()]}]}
        client = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
            client.messages.create(**body)


# --------------------------------------------------------------- 6. preserved thinking after compaction


def _compacted(history: list[Message]) -> list[Message]:
    """What a summary does: the oldest turns replaced by a handoff, the later ones kept verbatim."""
    return [Message.user_text("[Context handoff] The user asked what is in the repository."),
            Message("assistant", [TextBlock("[Earlier turns were compacted; the handoff follows.]")]),
            *history[1:]]


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"])
def test_compaction_drops_thinking_whose_prefix_changed(model: str) -> None:
    with FakeServer(LOOP) as server:
        p = anthropic_provider(server, model)
        r1 = p.complete(first())
        request = then(first(), r1.message)
        r2 = p.complete(request)  # an untouched prefix: the thinking block goes back and is accepted
        assert server.requests[1]["messages"][1]["content"][0]["type"] == "thinking"
        history = request.messages + [r2.message, Message.user_text("Thanks. Anything else?")]
        r3 = p.complete(ModelRequest(SYSTEM, _compacted(history), [BASH]))
        assert r3.message.text() == "Anything else?"
        sent = server.requests[2]["messages"]
        assert not any(b["type"] == "thinking" for m in sent[:-1] for b in m["content"])


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-5-5"])
def test_compaction_mid_loop_on_a_preserved_model(model: str) -> None:
    """The tool loop's own thinking block loses its prefix to the compaction: dropped, and the loop goes on."""
    with FakeServer(LOOP) as server:
        p = anthropic_provider(server, model)
        r1 = p.complete(first())
        request = then(first(), r1.message)
        compacted = ModelRequest(SYSTEM, _compacted(request.messages), [BASH])
        assert p.complete(compacted).message.text() == "A Python project."


def test_control_the_fake_refuses_thinking_bound_to_a_changed_prefix() -> None:
    with FakeServer(LOOP) as server:
        p = anthropic_provider(server, "claude-opus-5-5")
        r1 = p.complete(first())
        r2 = p.complete(then(first(), r1.message))
        history = _compacted(then(first(), r1.message).messages + [r2.message, Message.user_text("More?")])
        body = server.requests[1] | {"messages": [
            {"role": m.role, "content": [_raw(b) for b in m.content if not (isinstance(b, TextBlock)
                                                                             and not b.text.strip())]}
            for m in history]}
        client = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match="bound to a different conversation"):
            client.messages.create(**body)


def _raw(block: Any) -> dict[str, Any]:
    if isinstance(block, ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultBlock):
        return {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": block.content}
    return {"type": "text", "text": block.text}


@pytest.mark.parametrize(("model", "extra", "message", "needle"), [
    ("claude-haiku-4-5", {}, [{"type": "text", "text": "  "}], "non-whitespace"),
    ("claude-opus-4-7", {"thinking": {"type": "enabled", "budget_tokens": 2000}}, "hi", "not supported"),
    ("claude-opus-5-5", {"thinking": {"type": "disabled"}}, "hi", "not supported"),
])
def test_control_the_fake_refuses_each_unrepaired_shape(model: str, extra: dict[str, Any], message: Any,
                                                        needle: str) -> None:
    with FakeServer(LOOP) as server:
        client = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0)
        with pytest.raises(anthropic.BadRequestError, match=needle):
            client.messages.create(model=model, max_tokens=4000, timeout=30, **extra,
                                   messages=[{"role": "user", "content": message}])


def test_an_unknown_model_gets_the_safest_shape_and_one_note() -> None:
    with FakeServer(LOOP) as server:
        p = anthropic_provider(server, "claude-next-1")
        r1 = p.complete(first(max_tokens=100_000, budget=4000, tools=[BASH]))
        r2 = p.complete(then(first(max_tokens=100_000, budget=4000), r1.message))
        body = server.requests[0]
        assert "thinking" not in body and body["max_tokens"] == 8192 and "type" not in body["tools"][0]
        assert len(r1.notes) == 1 and "claude-next-1" in r1.notes[0] and not r2.notes


def test_cache_breakpoints_stay_within_four() -> None:
    with FakeServer(LOOP) as server:
        p = anthropic_provider(server, "claude-opus-5-5")
        r1 = p.complete(first())
        request = then(first(), r1.message)
        request.cache_breakpoints = list(range(-2, 12))
        assert p.complete(request).message.text() == "A Python project."
        assert 1 <= str(server.requests[1]).count("cache_control") <= 4
