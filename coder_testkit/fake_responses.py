"""What the fake model server says: Anthropic and OpenAI response bodies and stream events built from one
scripted answer. The request checks live in coder_testkit.fake_rules (written from the APIs' documentation,
sharing no code with the client); usage arithmetic is shared with the scripted provider on purpose
(coder.models.wire), so the same script gives the same numbers in-process and over HTTP.

Thinking follows the model (coder_testkit.fake_rules.facts): when the request turns it on, or the model thinks by
default or always, the answer starts with a thinking block (the scripted `thinking`, else THINKING_PLACEHOLDER) whose
signature coder_testkit.fake_rules issues, bound to the conversation on models with preserved thinking."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from coder.models.script import Answer
from coder.models.wire import (
    PrefixCache,
    Segment,
    canonical,
    chat_item_tokens,
    chunk_text,
    output_tokens,
    segments,
)
from coder_testkit.fake_rules import facts_for, sign, thinking_active

# What a thinking model "thought" when the script gives no thinking for the turn (the real API always starts the
# answer with a thinking block when thinking is on).
THINKING_PLACEHOLDER = "Thinking about the request."

_OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
                  "stop_sequence": "stop", "refusal": "content_filter"}


@dataclass
class Reply:
    """One scripted answer rendered for one request."""

    blocks: list[dict[str, Any]]
    stop_reason: str
    usage: dict[str, Any]


# ----------------------------------------------------------------------------------------- anthropic


def anthropic_reply(answer: Answer, body: dict[str, Any], cache: PrefixCache,
                    waiting: dict[str, Any] | None = None) -> Reply:
    """The answer to `body`. `waiting` (call id -> result content) holds the scripted results of the server tool
    calls left waiting by earlier answers: the calls the request's turn left waiting run first ("the next response
    begins with the result block", [server-tools]); this answer's own waiting calls are added to it."""
    waiting = {} if waiting is None else waiting
    resumed = [{"type": f"{use.get('name')}_tool_result", "tool_use_id": use["id"],
                "content": waiting.pop(str(use["id"]), None) or search_results(
                    [{"url": "https://search.example.test/" + hashlib.sha256(
                        canonical(use.get("input")).encode()).hexdigest()[:8], "title": str(use.get("input"))}])}
               for use in waiting_calls(body)]
    turn = answer.turn
    blocks: list[dict[str, Any]] = list(resumed or [])
    facts = facts_for(str(body.get("model", "")))
    thinking = ""
    if thinking_active(body):
        thinking = turn.thinking or THINKING_PLACEHOLDER
        blocks.append({"type": "thinking", "thinking": thinking,
                       "signature": sign(body, facts, thinking, lead=blocks)})
    searches = web_searches(turn.web_search, body, answer.index)
    for search, use in zip(turn.web_search, (b for b in searches if b["type"] == "server_tool_use"), strict=False):
        if search.get("pending"):
            waiting[use["id"]] = search_results(search.get("results") or [])
    blocks += searches
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    calls = []
    for call, call_id in zip(turn.tool_calls, answer.tool_ids, strict=True):
        blocks.append({"type": "tool_use", "id": call_id, "name": call.name, "input": call.input})
        calls.append({"name": call.name, "input": call.input})
    cached = cache.account(segments(body))
    usage: dict[str, Any] = {
        "input_tokens": cached.input_tokens,
        "output_tokens": output_tokens(turn.text, thinking, calls),
        "cache_creation_input_tokens": cached.cache_write_tokens,
        "cache_read_input_tokens": cached.cache_read_tokens,
    }
    ran = [b for b in searches if b["type"] == "server_tool_use" and _answered(b, searches)
           and not _failed(b, searches)]
    if ran or resumed:
        usage["server_tool_use"] = {"web_search_requests": len(ran) + len(resumed or [])}
    return Reply(blocks, turn.final_stop_reason, usage)


def web_searches(scripted: list[dict[str, Any]], body: dict[str, Any], number: int) -> list[dict[str, Any]]:
    """The server tool blocks of a turn's scripted web searches ([web-search]): a server_tool_use and its
    web_search_tool_result each, only when the request declares the web search tool, and an error result past its
    `max_uses`, as the API answers."""
    declared = next((t for t in body.get("tools") or [] if isinstance(t, dict)
                     and str(t.get("type", "")).startswith("web_search_")), None)
    if declared is None:
        return []
    blocks: list[dict[str, Any]] = []
    for n, search in enumerate(scripted):
        use_id = f"srvtoolu_fake_{number:04d}_{n}"
        blocks.append({"type": "server_tool_use", "id": use_id, "name": declared.get("name"),
                       "input": {"query": search["query"]}})
        if search.get("pending"):  # the call waits: its result opens the answer that continues the turn
            continue
        if n >= int(declared.get("max_uses") or len(scripted)):
            content: Any = {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
        else:
            content = search_results(search.get("results") or [])
        blocks.append({"type": "web_search_tool_result", "tool_use_id": use_id, "content": content})
    return blocks


def search_results(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`web_search_result` blocks: a page's text travels only as `encrypted_content` ([web-search]); `page_age`
    is left out when unknown, as the SDK's round trip (exclude_none) sends it back."""
    return [{"type": "web_search_result", "url": str(r.get("url", "")), "title": str(r.get("title", "")),
             "encrypted_content": "fake-" + hashlib.sha256(str(r.get("url", "")).encode()).hexdigest()[:16]}
            for r in results]


def waiting_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The server tool calls of the request that have no result block anywhere: those its turn left waiting (the
    rules have checked that the request continues that turn)."""
    blocks = [b for m in body.get("messages") or [] if isinstance(m.get("content"), list) for b in m["content"]
              if isinstance(b, dict)]
    done = {b.get("tool_use_id") for b in blocks if str(b.get("type", "")).endswith("_tool_result")}
    return [b for b in blocks if b.get("type") == "server_tool_use" and b.get("id") not in done]


def _answered(use: dict[str, Any], blocks: list[dict[str, Any]]) -> bool:
    return any(b.get("tool_use_id") == use["id"] for b in blocks)


def _failed(use: dict[str, Any], blocks: list[dict[str, Any]]) -> bool:
    return any(b.get("tool_use_id") == use["id"] and isinstance(b.get("content"), dict) for b in blocks)


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
        elif kind == "web_search_tool_result":  # [web-search] streamed whole in its start event
            opening, deltas = block, []
        else:
            opening = {"type": kind, "id": block["id"], "name": block["name"], "input": {}}
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


_STATUS_ERRORS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                  404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                  529: "overloaded_error"}


def error_body(status: int, message: str, openai: bool, request_id: str, kind: str | None = None,
               param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """An error answer: OpenAI's `{"error": {message, type, param, code}}` or the Messages API's."""
    kind = kind or _STATUS_ERRORS.get(status, "api_error" if status >= 500 else "invalid_request_error")
    if openai:
        return {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return anthropic_error(kind, message, request_id)


def anthropic_error(kind: str, message: str, request_id: str | None = None) -> dict[str, Any]:
    """The Messages API's error body ([errors] "Error shapes": the request id rides along)."""
    body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    if request_id:
        body["request_id"] = request_id
    return body


# -------------------------------------------------------------------------------------------- openai


def openai_segments(body: dict[str, Any]) -> list[Segment]:
    """Tools then messages, one segment each (OpenAI caches whole-message prefixes automatically)."""
    items = list(body.get("tools") or []) + list(body.get("messages") or [])
    out = []
    for item in items:
        out.append(Segment(canonical(item), chat_item_tokens(item), False))
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
