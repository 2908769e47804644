"""What the fake model server says: Anthropic and OpenAI response bodies and stream events built from one
scripted answer, plus the request checks the real Messages API makes (so engine bugs in the history fail
here as they would in production, not only against the real API)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from coder.models.script import Answer
from coder.models.wire import (
    SERVER_TOOL_NAMES,
    PrefixCache,
    Segment,
    canonical,
    chunk_text,
    estimate_tokens,
    output_tokens,
    segments,
    signature_for,
)

_OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
                  "stop_sequence": "stop", "refusal": "content_filter"}


@dataclass
class Reply:
    """One scripted answer rendered for one request."""

    blocks: list[dict[str, Any]]
    stop_reason: str
    usage: dict[str, Any]


# ----------------------------------------------------------------------------------------- anthropic


def thinking_enabled(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def anthropic_reply(answer: Answer, body: dict[str, Any], cache: PrefixCache) -> Reply:
    turn = answer.turn
    blocks: list[dict[str, Any]] = []
    thinking = turn.thinking if thinking_enabled(body) else ""
    if thinking:
        blocks.append({"type": "thinking", "thinking": thinking, "signature": signature_for(thinking)})
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    calls = []
    for call, call_id in zip(turn.tool_calls, answer.tool_ids, strict=True):
        blocks.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.input})
        calls.append({"name": call.name, "input": call.input})
    cached = cache.account(segments(body))
    usage = {
        "input_tokens": cached.input_tokens,
        "output_tokens": output_tokens(turn.text, thinking, calls),
        "cache_creation_input_tokens": cached.cache_write_tokens,
        "cache_read_input_tokens": cached.cache_read_tokens,
    }
    return Reply(blocks, turn.final_stop_reason, usage)


def anthropic_message(reply: Reply, model: str, number: int) -> dict[str, Any]:
    return {
        "id": f"msg_fake_{number:06d}", "type": "message", "role": "assistant", "model": model,
        "content": reply.blocks, "stop_reason": reply.stop_reason, "stop_sequence": None, "usage": reply.usage,
    }


def anthropic_events(reply: Reply, model: str, number: int) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events of the streamed answer, in the order and shape the real API sends them."""
    start = anthropic_message(reply, model, number)
    start.update(content=[], stop_reason=None, usage={**reply.usage, "output_tokens": 1})
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    events.append(("ping", {"type": "ping"}))
    for index, block in enumerate(reply.blocks):
        kind = block["type"]
        if kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": c} for c in chunk_text(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            opening = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": c} for c in chunk_text(block["text"])]
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"], ensure_ascii=False)
            cut = max(1, len(raw) // 2)
            pieces = [""] + [p for p in (raw[:cut], raw[cut:]) if p]
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                "content_block": opening}))
        for delta in deltas:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {
        "type": "message_delta", "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": reply.usage["output_tokens"]},
    }))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def validate_anthropic(body: Any, context_window: int | None) -> str | None:
    """The first reason the real API would answer 400, or None."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: Field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages: first message must use the \"user\" role"
    for i, tool in enumerate(body.get("tools") or []):
        kind = tool.get("type")
        if kind in SERVER_TOOL_NAMES and tool.get("name") != SERVER_TOOL_NAMES[kind]:
            return f"tools.{i}.name: Input should be '{SERVER_TOOL_NAMES[kind]}' for tool type {kind}"
        if kind in (None, "custom") and not isinstance(tool.get("input_schema"), dict):
            return f"tools.{i}.input_schema: Field required"
    marks = _count_cache_control(body)
    if marks > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {marks}."
    for i, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list):
            for j, block in enumerate(content):
                if block.get("type") == "text" and not block.get("text"):
                    return f"messages.{i}.content.{j}.text: text content blocks must be non-empty"
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        ids = [b.get("id") for b in content if b.get("type") == "tool_use"]
        if not ids:
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        answered = set()
        if following and isinstance(following.get("content"), list):
            answered = {b.get("tool_use_id") for b in following["content"] if b.get("type") == "tool_result"}
        missing = [x for x in ids if x not in answered]
        if missing:
            return (f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                    f"`tool_result` block in the next message.")
    for i, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        previous = messages[i - 1] if i > 0 else {}
        known = {b.get("id") for b in previous.get("content") or [] if isinstance(b, dict)
                 and b.get("type") == "tool_use"} if previous.get("role") == "assistant" else set()
        for j, block in enumerate(content):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in known:
                return (f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                        f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                        f"`tool_use` block in the previous message.")
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if budget >= body["max_tokens"]:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
    if context_window is not None:
        total = sum(s.tokens for s in segments(body))
        if total > context_window:
            return f"prompt is too long: {total} tokens > {context_window} maximum"
    return None


def _count_cache_control(obj: Any) -> int:
    if isinstance(obj, dict):
        return int("cache_control" in obj) + sum(_count_cache_control(v) for k, v in obj.items()
                                                 if k != "cache_control")
    if isinstance(obj, list):
        return sum(_count_cache_control(v) for v in obj)
    return 0


# -------------------------------------------------------------------------------------------- openai


def validate_openai(body: Any) -> str | None:
    """The first reason an OpenAI-compatible server would answer 400, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "model is required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    pending: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return (f"messages[{i}]: messages with role 'tool' must be a response to a preceding message "
                        "with 'tool_calls'")
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            return (f"messages[{i}]: an assistant message with 'tool_calls' must be followed by tool messages "
                    f"responding to each 'tool_call_id'. Missing: {', '.join(sorted(pending))}")
        if role == "assistant":
            pending = {c.get("id") for c in message.get("tool_calls") or []}
    return None



def openai_segments(body: dict[str, Any]) -> list[Segment]:
    """Tools then messages, one segment each (OpenAI caches whole-message prefixes automatically)."""
    items = list(body.get("tools") or []) + list(body.get("messages") or [])
    out = []
    for item in items:
        text = canonical(item)
        out.append(Segment(text, estimate_tokens(text), False))
    return out


def openai_reply(answer: Answer, body: dict[str, Any], cache: PrefixCache) -> Reply:
    turn = answer.turn
    calls = []
    for call, call_id in zip(turn.tool_calls, answer.tool_ids, strict=True):
        oid = "call_" + call_id[len("toolu_"):] if call_id.startswith("toolu_") else call_id
        calls.append({"id": oid, "type": "function",
                      "function": {"name": call.name, "arguments": json.dumps(call.input, ensure_ascii=False)}})
    cached = cache.account(openai_segments(body))
    completion = output_tokens(turn.text, "", [{"name": c.name, "input": c.input} for c in turn.tool_calls])
    prompt = cached.input_tokens + cached.cache_read_tokens
    usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
             "prompt_tokens_details": {"cached_tokens": cached.cache_read_tokens}}
    blocks: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    blocks += [{**c, "type": "tool_call"} for c in calls]
    return Reply(blocks, _OPENAI_FINISH.get(turn.final_stop_reason, "stop"), usage)


def openai_completion(reply: Reply, model: str, number: int) -> dict[str, Any]:
    text = "".join(b["text"] for b in reply.blocks if b["type"] == "text")
    calls = [{"id": b["id"], "type": "function", "function": b["function"]} for b in reply.blocks
             if b["type"] == "tool_call"]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return {"id": f"chatcmpl-fake-{number:06d}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": reply.stop_reason, "logprobs": None}],
            "usage": reply.usage}


def openai_chunks(reply: Reply, model: str, number: int, include_usage: bool) -> list[dict[str, Any]]:
    """The `data:` payloads of the streamed completion (the caller adds the final `[DONE]`)."""
    base = {"id": f"chatcmpl-fake-{number:06d}", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    out = [chunk({"role": "assistant", "content": ""})]
    for block in reply.blocks:
        if block["type"] == "text":
            out += [chunk({"content": piece}) for piece in chunk_text(block["text"])]
    index = 0
    for block in reply.blocks:
        if block["type"] != "tool_call":
            continue
        args = block["function"]["arguments"]
        cut = max(1, len(args) // 2)
        out.append(chunk({"tool_calls": [{"index": index, "id": block["id"], "type": "function",
                                          "function": {"name": block["function"]["name"], "arguments": ""}}]}))
        for piece in (args[:cut], args[cut:]):
            if piece:
                out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
        index += 1
    out.append(chunk({}, reply.stop_reason))
    if include_usage:
        out.append({**base, "choices": [], "usage": reply.usage})
    return out
