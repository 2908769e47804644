"""The fake server is as strict as the real APIs: one deliberately broken body per documented rule, sent with the
real anthropic / openai SDKs to the fake server on 127.0.0.1, must come back as BadRequestError with the real error
type and message; valid bodies of each thinking kind are accepted (controls, so no refusal passes vacuously)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from coder.models.fake_server import FakeServer

LS = [{"name": "bash", "input": {"command": "ls"}}]
SCRIPT = {"turns": [
    {"when": "list files", "repeat": True, "text": "Looking.", "tool_calls": LS},
    {"when": "[\\s\\S]", "repeat": True, "text": "ok"},
]}
MODEL = "claude-sonnet-4-6"
BASH = {"name": "bash", "description": "Run a command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}
THINK = {"type": "enabled", "budget_tokens": 1024}
USE = {"type": "tool_use", "id": "toolu_a", "name": "bash", "input": {"command": "ls"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_a", "content": "README.md"}
DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(SCRIPT) as srv:
        yield srv


def claude(server: FakeServer) -> anthropic.Anthropic:
    # an explicit timeout: the SDK refuses non-streaming requests with a large max_tokens otherwise
    return anthropic.Anthropic(base_url=server.base_url, api_key="test-key", max_retries=0, timeout=30)


def user(text: str = "hi") -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def loop(assistant: list[dict[str, Any]], results: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """go -> assistant blocks -> user tool results."""
    return [{"role": "user", "content": "go"}, {"role": "assistant", "content": assistant},
            {"role": "user", "content": results if results is not None else [RESULT]}]


def body(model: str = MODEL, messages: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"model": model, "max_tokens": extra.pop("max_tokens", 2048), "messages": messages or user(), **extra}


# (id, request body, the real API's message)
ANTHROPIC_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("unknown-field", body(frobnicate=1), "frobnicate: Extra inputs are not permitted"),
    ("no-messages", body(messages=[]) | {"messages": []},
     "messages: List should have at least 1 item after validation, not 0"),
    ("max-tokens-over-model-limit", body("claude-haiku-4-5", max_tokens=65024),
     "max_tokens: 65024 > 64000, which is the maximum allowed number of output tokens for claude-haiku-4-5"),
    ("budget-below-1024", body(thinking={"type": "enabled", "budget_tokens": 1000}),
     "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
    ("budget-not-below-max-tokens", body(max_tokens=1024, thinking=THINK),
     f"`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at {DOCS}"
     "#max-tokens-and-context-window-size"),
    ("enabled-on-adaptive-model", body("claude-opus-4-7", thinking=THINK),
     '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and '
     '"output_config.effort" to control thinking behavior.'),
    ("enabled-on-always-model", body("claude-fable-5", thinking=THINK),
     '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and '
     '"output_config.effort" to control thinking behavior.'),
    ("disabled-on-always-model", body("claude-opus-5-5", thinking={"type": "disabled"}),
     '"thinking.type.disabled" is not supported for this model. Use "thinking.type.adaptive" and '
     '"output_config.effort" to control thinking behavior.'),
    ("disabled-on-between-tools-model", body("claude-sonnet-5-5", thinking={"type": "disabled"}),
     '"thinking.type.disabled" is not supported for this model. Use "thinking.type.between_tools" to turn off '
     'up-front thinking.'),
    ("disabled-at-max-effort-on-opus-5", body("claude-opus-5", thinking={"type": "disabled"},
                                              output_config={"effort": "max"}),
     '"thinking.type.disabled" is only supported with "output_config.effort" high or below.'),
    ("disabled-at-xhigh-effort-on-haiku-5-5", body("claude-haiku-5-5", thinking={"type": "disabled"},
                                                   output_config={"effort": "xhigh"}),
     '"thinking.type.disabled" is only supported with "output_config.effort" high or below.'),
    ("prefill-on-haiku-5-5", body("claude-haiku-5-5", messages=user() + [{"role": "assistant", "content": "Sure"}]),
     "messages.1: Prefilling the assistant message is not supported for this model."),
    ("between-tools-at-max-effort", body("claude-sonnet-5-5", thinking={"type": "between_tools"},
                                         output_config={"effort": "max"}),
     '"thinking.type.between_tools" is only supported with "output_config.effort" low, medium or high.'),
    ("adaptive-on-budget-model", body("claude-haiku-4-5", thinking={"type": "adaptive"}),
     '"thinking.type.adaptive" is not supported for this model. Use "thinking.type.enabled" with '
     '"thinking.budget_tokens" to control thinking behavior.'),
    ("adaptive-with-budget", body("claude-sonnet-4-6", thinking={"type": "adaptive", "budget_tokens": 2000}),
     "thinking.adaptive.budget_tokens: Extra inputs are not permitted"),
    ("thinking-on-model-without-thinking", body("claude-3-5-haiku", thinking=THINK),
     '"thinking.type.enabled" is not supported for this model.'),
    ("unknown-thinking-type", body("claude-sonnet-4-6", thinking={"type": "between_tools"}),
     "thinking: Input tag 'between_tools' found using 'type' does not match any of the expected tags: "
     "'adaptive', 'disabled', 'enabled'"),
    ("unknown-effort", body("claude-opus-4-7", output_config={"effort": "extreme"}),
     "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"),
    ("forced-tool-with-thinking", body(thinking=THINK, tools=[BASH], tool_choice={"type": "any"}),
     "Thinking may not be enabled when tool_choice forces tool use."),
    ("sampling-on-sonnet-5", body("claude-sonnet-5", temperature=0.2), "`temperature` is deprecated for this model."),
    ("temperature-and-top-p", body(temperature=0.5, top_p=0.9),
     "temperature and top_p cannot both be specified for this model. Please use only one."),
    ("temperature-with-thinking", body(thinking=THINK, temperature=0.5),
     "`temperature` may only be set to 1 when thinking is enabled or in interleaved thinking mode. Please consult "
     "our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility"),
    ("temperature-out-of-range", body(temperature=1.5), "temperature: Input should be less than or equal to 1"),
    ("whitespace-system-block", body(system=[{"type": "text", "text": "  \n"}]),
     "system: text content blocks must contain non-whitespace text"),
    ("tool-name-pattern", body(tools=[BASH | {"name": "my.tool"}]),
     "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"),
    ("tool-name-too-long", body(tools=[BASH | {"name": "t" * 65}]),
     "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"),
    ("tool-without-schema", body(tools=[{"name": "shell", "description": "d"}]),
     "tools.0.custom.input_schema: Field required"),
    ("schema-not-object", body(tools=[BASH | {"input_schema": {"type": "string"}}]),
     "tools.0.custom.input_schema.type: Input should be 'object'"),
    ("schema-top-level-any-of", body(tools=[BASH | {"input_schema": {"type": "object", "anyOf": [
        {"required": ["a"]}, {"required": ["b"]}]}}]),
     "tools.0.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"),
    ("duplicate-tool-names", body(tools=[BASH, BASH]), "tools: Tool names must be unique."),
    ("server-tool-wrong-name", body(tools=[{"type": "bash_20250124", "name": "shell"}]),
     "tools.0.bash_20250124.name: Input should be 'bash'"),
    ("server-tool-unknown-version", body(tools=[{"type": "bash_20990101", "name": "bash"}]),
     "tools.0: Input tag 'bash_20990101' found using 'type' does not match any of the expected tags"),
    ("server-tool-version-of-another-model", body(tools=[{"type": "text_editor_20250124",
                                                         "name": "str_replace_editor"}]),
     "tools.0: 'text_editor_20250124' is not supported by claude-sonnet-4-6. Use the tool version made for this "
     "model."),
    ("bad-role", body(messages=[{"role": "system", "content": "x"}]),
     "messages.0.role: Input should be 'user' or 'assistant'"),
    ("empty-content", body(messages=[{"role": "user", "content": ""}]),
     "messages.0: all messages must have non-empty content except for the optional final assistant message"),
    ("empty-text-block", body(messages=[{"role": "user", "content": [{"type": "text", "text": ""}]}]),
     "messages: text content blocks must be non-empty"),
    ("whitespace-text-before-tool-call", body(messages=loop([{"type": "text", "text": "   "}, USE])),
     "messages: text content blocks must contain non-whitespace text"),
    ("whitespace-text-in-tool-result", body(messages=loop([USE], [RESULT | {"content": [
        {"type": "text", "text": " "}]}])), "messages: text content blocks must contain non-whitespace text"),
    ("block-not-an-object", body(messages=[{"role": "user", "content": ["hi"]}]),
     "messages.0.content.0: Input should be a valid dictionary or object"),
    ("tool-use-id-pattern", body(messages=loop([USE | {"id": "tool.1"}], [RESULT | {"tool_use_id": "tool.1"}])),
     "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"),
    ("tool-use-id-reused-after-resume", body(messages=loop([USE]) + [
        {"role": "assistant", "content": [USE]}, {"role": "user", "content": [RESULT]}]),
     "messages.3.content.0: `tool_use` ids must be unique"),
    ("tool-use-without-result", body(messages=loop([USE], [{"type": "text", "text": "no result"}])),
     "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. Each "
     "`tool_use` block must have a corresponding `tool_result` block in the next message."),
    ("tool-result-not-first", body(messages=loop([USE], [{"type": "text", "text": "here"}, RESULT])),
     "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following "
     "`tool_use` blocks must begin with a matching number of `tool_result` blocks."),
    ("tool-result-not-first-after-merge", body(messages=loop([USE], [{"type": "text", "text": "here"}]) + [
        {"role": "user", "content": [RESULT]}]),
     "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following "
     "`tool_use` blocks must begin with a matching number of `tool_result` blocks."),
    ("tool-result-unknown-id", body(messages=loop([USE], [RESULT, RESULT | {"tool_use_id": "toolu_b"}])),
     "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_b. Each `tool_result` "
     "block must have a corresponding `tool_use` block in the previous message."),
    ("two-results-for-one-call", body(messages=loop([USE], [RESULT, RESULT])),
     "messages.2.content.1: each tool_use must have a single result. Found multiple `tool_result` blocks with id: "
     "toolu_a"),
    ("thinking-not-first-in-message", body(thinking=THINK, messages=loop([
        {"type": "text", "text": "x"}, {"type": "thinking", "thinking": "t", "signature": "s"}, USE])),
     "messages.1.content.0: If an assistant message contains any thinking blocks, the first block must be "
     "thinking or redacted_thinking. Found text."),
    ("final-block-thinking", body(thinking=THINK, messages=user() + [{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t", "signature": "s"}]}]),
     "messages.1: The final block in an assistant message cannot be `thinking`."),
    ("thinking-in-final-message-when-disabled", body(messages=user() + [{"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "text", "text": "so"}]}]),
     "messages.1.content.0: When thinking is disabled, an `assistant` message in the final position cannot "
     "contain `thinking`. To use thinking blocks, enable `thinking` in your request."),
    ("thinking-turned-on-mid-tool-loop", body(thinking=THINK, messages=loop([{"type": "text", "text": "x"}, USE])),
     "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is "
     "enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
     "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To "
     f"avoid this requirement, disable `thinking`. Please consult our documentation at {DOCS}"),
    ("forged-signature", body(thinking=THINK, messages=loop([
        {"type": "thinking", "thinking": "t", "signature": "sig_forged"}, USE])),
     "messages.1.content.0: Invalid `signature` in `thinking` block."),
    ("thinking-without-signature", body(thinking=THINK, messages=loop([{"type": "thinking", "thinking": "t"}, USE])),
     "messages.1.content.0.thinking.signature: Field required"),
    ("too-many-cache-breakpoints", body(messages=[{"role": "user", "content": [
        {"type": "text", "text": f"b{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)]}]),
     "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    ("cache-control-type", body(system=[{"type": "text", "text": "s", "cache_control": {"type": "persistent"}}]),
     "system.0.cache_control.type: Input should be 'ephemeral'"),
    ("cache-control-ttl", body(system=[{"type": "text", "text": "s", "cache_control": {"type": "ephemeral",
                                                                                       "ttl": "10m"}}]),
     "system.0.cache_control.ttl: Input should be '5m' or '1h'"),
    ("cache-control-extra-key", body(system=[{"type": "text", "text": "s", "cache_control": {
        "type": "ephemeral", "scope": "org"}}]), "system.0.cache_control.scope: Extra inputs are not permitted"),
    ("cache-control-on-thinking", body(thinking=THINK, messages=loop([
        {"type": "thinking", "thinking": "t", "signature": "s", "cache_control": {"type": "ephemeral"}}, USE])),
     "messages.1.content.0.thinking.cache_control: Extra inputs are not permitted"),
    ("cache-ttl-1h-after-5m", body(tools=[BASH | {"cache_control": {"type": "ephemeral"}}], system=[
        {"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]),
     "system.0: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that "
     "blocks are processed in the following order: `tools`, `system`, `messages`."),
    ("prompt-longer-than-model-window", body("claude-haiku-4-5", messages=user("x" * 800_400)),
     "prompt is too long: 200114 tokens > 200000 maximum"),
]


def refusal(call: Any) -> dict[str, Any]:
    with pytest.raises(anthropic.BadRequestError) as info:
        call()
    assert info.value.status_code == 400
    payload = info.value.body
    assert isinstance(payload, dict) and payload["type"] == "error"
    return payload["error"]


@pytest.mark.parametrize(("case", "request_body", "message"), ANTHROPIC_CASES, ids=[c[0] for c in ANTHROPIC_CASES])
def test_each_broken_messages_body_gets_the_real_400(server: FakeServer, case: str, request_body: dict[str, Any],
                                                      message: str) -> None:
    fields = dict(request_body)
    known = {k: fields.pop(k) for k in list(fields) if k in ("model", "max_tokens", "messages", "system", "tools",
                                                               "tool_choice", "thinking")}
    served = len(server.requests)
    error = refusal(lambda: claude(server).messages.create(**known, extra_body=fields or None))
    assert error == {"type": "invalid_request_error", "message": message}
    assert len(server.requests) == served + 1  # the request did reach the server


def test_count_tokens_is_checked_with_its_own_fields(server: FakeServer) -> None:
    c = claude(server)
    error = refusal(lambda: c.messages.count_tokens(model=MODEL, messages=user(), extra_body={"max_tokens": 5}))
    assert error["message"] == "max_tokens: Extra inputs are not permitted"
    assert c.messages.count_tokens(model=MODEL, messages=user()).input_tokens > 0  # control


# --------------------------------------------------------------------------------------------- controls


@pytest.mark.parametrize(("model", "thinking", "thinks"), [
    ("claude-3-5-haiku", None, False),  # none
    ("claude-haiku-4-5", THINK, True),  # budget
    ("claude-sonnet-4-6", THINK, True),  # both
    ("claude-sonnet-4-6", {"type": "adaptive"}, True),
    ("claude-opus-4-7", {"type": "adaptive"}, True),  # adaptive, off by default
    ("claude-opus-4-7", None, False),
    ("claude-sonnet-5", None, True),  # adaptive, on by default
    ("claude-sonnet-5", {"type": "disabled"}, False),
    ("claude-sonnet-5-5", {"type": "between_tools"}, False),
    ("claude-haiku-5-5", {"type": "disabled"}, False),  # adaptive, may be disabled at effort high or below
    ("claude-opus-5-5", None, True),  # always: thinks although not asked
    ("claude-fable-5", {"type": "adaptive"}, True),
    ("claude-opus-4-9", THINK, True),  # unknown id: the conservative shape is accepted
])
def test_valid_bodies_of_each_thinking_kind_are_accepted(server: FakeServer, model: str,
                                                         thinking: dict[str, Any] | None, thinks: bool) -> None:
    extra = {"thinking": thinking} if thinking else {}
    message = claude(server).messages.create(model=model, max_tokens=4096, messages=user(), **extra)
    kinds = [b.type for b in message.content]
    assert kinds == (["thinking", "text"] if thinks else ["text"])
    if thinks:
        assert message.content[0].signature.startswith("sig_")


def tool_loop(c: anthropic.Anthropic, model: str, system: str) -> list[dict[str, Any]]:
    """One tool round trip on `model`, returned as history ending in the tool result."""
    first = c.messages.create(model=model, max_tokens=4096, system=system, tools=[BASH],
                              messages=user("list files"))
    assert first.content[0].type == "thinking" and first.stop_reason == "tool_use"
    return [{"role": "user", "content": "list files"},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[-1].id,
                                          "content": "README.md"}]}]


def test_preserved_thinking_refuses_a_changed_prefix(server: FakeServer) -> None:
    c = claude(server)
    history = tool_loop(c, "claude-opus-5-5", "You are careful.")
    # control: the unchanged conversation goes on, and the thinking block carries the fake's binding
    ok = c.messages.create(model="claude-opus-5-5", max_tokens=4096, system="You are careful.", tools=[BASH],
                           messages=history)
    assert ok.content[0].type == "thinking"
    bound = ("messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different "
             "conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "
             '"drop_block".')
    changed_system = refusal(lambda: c.messages.create(model="claude-opus-5-5", max_tokens=4096,
                                                       system="You are careful. Today is Monday.", tools=[BASH],
                                                       messages=history))
    assert changed_system == {"type": "invalid_request_error", "message": bound}
    summarised = [{"role": "user", "content": "Summary: the user asked for files."}] + history[1:]
    changed_message = refusal(lambda: c.messages.create(model="claude-opus-5-5", max_tokens=4096,
                                                        system="You are careful.", tools=[BASH], messages=summarised))
    assert changed_message["message"] == bound
    other_model = refusal(lambda: c.messages.create(model="claude-fable-5-1", max_tokens=4096,
                                                    system="You are careful.", tools=[BASH], messages=history))
    assert other_model["message"] == bound
    # the documented escape hatch is honoured
    dropped = c.messages.create(model="claude-opus-5-5", max_tokens=4096, system="You are careful. Today is Monday.",
                                tools=[BASH], messages=history, thinking={
                                    "type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}})
    assert dropped.content[0].type == "thinking"


def test_masked_tool_result_before_kept_thinking_is_refused(server: FakeServer) -> None:
    c = claude(server)
    history = tool_loop(c, "claude-sonnet-5-5", "S")
    second = c.messages.create(model="claude-sonnet-5-5", max_tokens=4096, system="S", tools=[BASH],
                               messages=history)
    history += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in second.content]},
                {"role": "user", "content": "next please"}]
    c.messages.create(model="claude-sonnet-5-5", max_tokens=4096, system="S", tools=[BASH], messages=history)
    masked = [dict(m) for m in history]
    masked[2] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": history[2]["content"][0][
        "tool_use_id"], "content": "[output cleared]"}]}
    error = refusal(lambda: c.messages.create(model="claude-sonnet-5-5", max_tokens=4096, system="S", tools=[BASH],
                                              messages=masked))
    assert error["message"].startswith("messages.3.content.0: Invalid `signature` in `thinking` block. The block is "
                                       "bound to a different conversation.")


def test_cache_breakpoints_moving_between_turns_keep_the_binding(server: FakeServer) -> None:
    c = claude(server)
    history = tool_loop(c, "claude-opus-5-5", "S")
    history[2]["content"][0]["cache_control"] = {"type": "ephemeral"}
    ok = c.messages.create(model="claude-opus-5-5", max_tokens=4096, system="S", tools=[BASH], messages=history)
    assert ok.content[0].type == "thinking"


def test_tool_use_ids_stay_unique_when_a_resumed_session_meets_a_restarted_server() -> None:
    script = {"turns": [{"text": "Looking.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]}] * 2}
    with FakeServer(script) as first:
        one = claude(first).messages.create(model=MODEL, max_tokens=256, messages=user("go"))
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in one.content]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": one.content[-1].id,
                                             "content": "ok"}]}]
    with FakeServer(script) as restarted:
        two = claude(restarted).messages.create(model=MODEL, max_tokens=256, messages=history)
        fresh = claude(restarted).messages.create(model=MODEL, max_tokens=256, messages=user("go"))
    assert two.content[-1].id != one.content[-1].id
    assert fresh.content[-1].id == "toolu_0002_0"  # no clash: the deterministic id of the script is kept
    history += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in two.content]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": two.content[-1].id,
                                              "content": "ok"}]}]
    with FakeServer(script) as third:
        assert claude(third).messages.create(model=MODEL, max_tokens=256, messages=history).content


# ------------------------------------------------------------------------------------------------ openai


def gpt(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url + "/v1", api_key="test-key", max_retries=0)


FUNCTION = {"type": "function", "function": {"name": "bash", "description": "Run.", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}}}}
CALL = {"id": "call_a", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}

OPENAI_CASES: list[tuple[str, dict[str, Any], str, str | None, str | None]] = [
    ("unknown-field", {"frobnicate": 1}, "Unrecognized request argument supplied: frobnicate", None, None),
    ("tool-message-without-call", {"messages": [{"role": "user", "content": "x"},
                                                {"role": "tool", "tool_call_id": "call_a", "content": "r"}]},
     "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
     "messages.[1].role", None),
    ("call-not-answered", {"messages": [{"role": "user", "content": "x"},
                                        {"role": "assistant", "content": None, "tool_calls": [CALL]},
                                        {"role": "user", "content": "y"}]},
     "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
     "The following tool_call_ids did not have response messages: call_a", "messages.[1].role", None),
    ("null-content-without-calls", {"messages": [{"role": "user", "content": "x"},
                                                 {"role": "assistant", "content": None},
                                                 {"role": "user", "content": "y"}]},
     "Invalid value for 'content': expected a string, got null.", "messages.[1].content", None),
    ("name-pattern", {"tools": [{"type": "function", "function": FUNCTION["function"] | {"name": "my.tool"}}]},
     "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern "
     "'^[a-zA-Z0-9_-]+$'.", "tools[0].function.name", "invalid_value"),
    ("name-too-long", {"tools": [{"type": "function", "function": FUNCTION["function"] | {"name": "n" * 70}}]},
     "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, but got a "
     "string with length 70 instead.", "tools[0].function.name", "string_above_max_length"),
    ("parameters-not-object", {"tools": [{"type": "function", "function": FUNCTION["function"] | {
        "parameters": {"type": "array"}}}]},
     "Invalid schema for function 'bash': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'.",
     "tools[0].function.parameters", "invalid_function_parameters"),
    ("max-tokens-on-reasoning-model", {"model": "gpt-5", "max_tokens": 100},
     "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
     "max_tokens", "unsupported_parameter"),
    ("bad-role", {"messages": [{"role": "robot", "content": "x"}]},
     "Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and "
     "'developer'.", "messages[0].role", "invalid_value"),
    ("no-messages", {"messages": []}, "[] is too short - 'messages'", "messages", "empty_array"),
]


@pytest.mark.parametrize(("case", "patch", "message", "param", "code"), OPENAI_CASES, ids=[c[0] for c in OPENAI_CASES])
def test_each_broken_chat_body_gets_the_real_400(server: FakeServer, case: str, patch: dict[str, Any], message: str,
                                                 param: str | None, code: str | None) -> None:
    fields: dict[str, Any] = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]} | patch
    known = {k: fields.pop(k) for k in ("model", "messages", "tools", "max_tokens") if k in fields}
    with pytest.raises(openai.BadRequestError) as info:
        gpt(server).chat.completions.create(**known, extra_body=fields or None)
    error = info.value
    assert error.status_code == 400
    assert isinstance(error.body, dict)
    assert (error.type, error.body["message"], error.param, error.code) == ("invalid_request_error", message, param,
                                                                          code)


def test_valid_chat_tool_loop_is_accepted(server: FakeServer) -> None:
    g = gpt(server)
    first = g.chat.completions.create(model="gpt-4.1", tools=[FUNCTION],
                                      messages=[{"role": "user", "content": "list files"}])
    call = first.choices[0].message.tool_calls[0]
    assert first.choices[0].message.content == "Looking." and call.function.name == "bash"
    second = g.chat.completions.create(model="gpt-4.1", tools=[FUNCTION], messages=[
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "README.md"}])
    assert second.choices[0].message.content == "ok"
    assert g.chat.completions.create(model="gpt-5", max_completion_tokens=100,
                                     messages=[{"role": "user", "content": "hi"}]).choices[0].message.content == "ok"
