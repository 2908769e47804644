"""The documented rules a Messages API request must obey, applied to the history before it is sent.

Each rule names its source (platform.claude.com/docs unless a full URL is given); the model facts come from the
model table (coder/models/model_table.json):

- Text blocks may not be empty or whitespace only ("text content blocks must contain non-whitespace text"), and
  every message but an optional final assistant one needs content: blank text is dropped, and a message left
  empty gets PLACEHOLDER.
- Thinking per model ([thinking-troubleshooting]): budget models take {"type": "enabled", "budget_tokens": N}
  with 1024 <= N < max_tokens; adaptive models take {"type": "adaptive"} plus output_config.effort and refuse
  (4.7 and later) or deprecate (4.6) "enabled"; models that always think refuse "enabled" and "disabled".
  max_tokens never exceeds the model's output limit (overview, "Max output").
- One thinking configuration per assistant turn ([thinking-tool-workflows]: "a tool-use loop is one assistant
  turn, so change the configuration only between turns"; the API refuses a final assistant message in a tool loop
  that does not start with a thinking block while thinking is on). When the unfinished loop's assistant message
  has no thinking block, thinking stays off for the rest of the loop (omitted, or the model's `disable` type when
  it thinks by default). Models that always think cannot turn it off: there, a tool call without a thinking
  block before it is sent as text (call and result), which ends the loop in the API's eyes.
- Preserved thinking ([preserved] prefix-checks): on those models a thinking block is valid only while system,
  tools and every earlier message and block are exactly what they were when it was made, and only for the model
  family that made it. Each block records that prefix (`bound`) when it arrives; a block whose prefix no longer
  matches (compaction, masking, a changed system prompt or tool list, another model) is dropped rather than sent
  back, as the docs prescribe for "trim, collapse or summarise older turns": "remove the thinking of the kept
  turns". Drops apply in order, so a block made after an earlier drop stays valid.
- A `tool_reference` in a tool result must name a tool of the request's `tools` marked `defer_loading`
  ([tool-search-tool]; the API answers 400 `tool_reference_unresolved` otherwise). The history records which tools a
  tool search loaded whatever the route; a session resumed on another route or mode may send such a tool whole
  (the other route's editor, `exit_plan` in plan mode) or no longer have it (an MCP server removed). Such a
  reference is left out: the model has the definition already, or there is none to give. A result left without
  references carries its own text instead ("Loaded: NAME" when it has none). The choice depends only on the
  request's tool list, fixed for a session, so every request renders the same history the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from coder.models.model_table import ModelInfo
from coder.models.tool_names import ToolMap
from coder.models.types import (
    ImageBlock,
    Message,
    RedactedThinkingBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

PLACEHOLDER = "(empty)"
MIN_BUDGET = 1024  # [extended-thinking] "The minimum budget is 1,024 tokens"
THINKING_TYPES = ("thinking", "redacted_thinking")


def canonical(obj: Any) -> str:
    """Stable serialisation used for token counts, cache keys and thinking prefixes (cache_control never counts:
    breakpoints move from request to request)."""
    return json.dumps(_strip_cache_control(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _strip_cache_control(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_cache_control(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_cache_control(v) for v in obj]
    return obj


# ------------------------------------------------------------------------------------------------- blocks


def block_to_api(block: Any, tools: ToolMap | None = None, loadable: Collection[str] = ()) -> dict[str, Any]:
    """`block` as the Messages API takes it; `loadable`: the API names of the request's tools marked
    `defer_loading`, the only ones a `tool_reference` may name."""
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, RedactedThinkingBlock):
        return {"type": "redacted_thinking", "data": block.data}
    if isinstance(block, ToolUseBlock):
        tools = tools or ToolMap()
        return {"type": "tool_use", "id": block.id, "name": tools.api_name(block.name),
                "input": tools.api_input(block.name, block.input)}
    if isinstance(block, ServerToolBlock):
        return dict(block.data)
    if isinstance(block, ImageBlock):  # `name`, `width` and `height` are ours: never sent
        return {"type": "image", "source": {"type": "base64", "media_type": block.media_type, "data": block.data}}
    if isinstance(block, ToolResultBlock):
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": block.content}
        if block.images:  # [vision] a tool result's content may hold images after its text
            text = [{"type": "text", "text": block.content}] if block.content.strip() else []
            out["content"] = text + [block_to_api(i) for i in block.images]
        if block.tool_references:  # the API expands each into the tool's definition, here in the conversation
            names = [api for api in map((tools or ToolMap()).api_name, block.tool_references) if api in loadable]
            if names:
                out["content"] = [{"type": "tool_reference", "tool_name": name} for name in names]
            elif not block.content.strip():  # every tool it loaded is whole here, or gone: never an empty result
                out["content"] = "Loaded: " + ", ".join(block.tool_references)
        if block.is_error:
            out["is_error"] = True
        return out
    raise TypeError(f"unknown block {block!r}")


def message_blocks(message: Message, tools: ToolMap | None = None,
                   loadable: Collection[str] = ()) -> list[tuple[dict[str, Any], Any]]:
    """(API block, our block) for every block the API accepts: blank text blocks are dropped."""
    return [(block_to_api(b, tools, loadable), b) for b in message.content
            if not (isinstance(b, TextBlock) and not b.text.strip())]


class _Prefix:
    """A running digest of system, tools and every block so far: what a thinking block is bound to."""

    def __init__(self, family: str, system: Any, tools: Any) -> None:
        self.family = family
        self._hash = hashlib.sha256()
        for part in (system, tools):
            self.feed(part)

    def feed(self, obj: Any) -> None:
        self._hash.update(canonical(obj).encode("utf-8") + b"\x00")

    def bound(self) -> str:
        return f"{self.family}:{self._hash.copy().hexdigest()[:32]}"

    def copy(self) -> _Prefix:
        twin = _Prefix.__new__(_Prefix)
        twin.family, twin._hash = self.family, self._hash.copy()
        return twin


def _keep_thinking(block: Any, info: ModelInfo, prefix: _Prefix | None) -> bool:
    """Whether a thinking block may be sent back to `info`'s model at this point of the conversation (`prefix`
    is hashed only for preserved-thinking models: the others never compare it)."""
    bound = getattr(block, "bound", "")
    if prefix is not None:
        return bound == prefix.bound()
    return not bound or bound.split(":", 1)[0] == info.family  # another model's block is not ours to send


def shape_messages(messages: list[Message], tools: ToolMap, info: ModelInfo, system: Any,
                   api_tools: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], set[str]]:
    """The history as API messages under every rule above (one API message per message, so indexes hold), and the
    API names of the tools whose `tool_reference` went out as text with its call (coder.models.tool_loading then
    sends them whole: a reference in text loads nothing)."""
    prefix = _Prefix(info.family, system, api_tools) if info.preserved_thinking else None
    loadable = {str(t["name"]) for t in api_tools if t.get("defer_loading")}
    out: list[dict[str, Any]] = []
    as_text: dict[str, str] = {}  # tool_use ids sent as text (models that always think) -> tool name
    lost: set[str] = set()
    for message in messages:
        if prefix is not None:
            prefix.feed({"role": message.role})
        running = prefix.copy() if prefix is not None else None  # a block's prefix holds the blocks before it
        kept: list[dict[str, Any]] = []
        for api, block in message_blocks(message, tools, loadable):
            if api["type"] in THINKING_TYPES and not _keep_thinking(block, info, running):
                continue
            kept.append(api)
            if running is not None:
                running.feed(api)
        if message.role == "assistant" and info.thinking == "always":
            kept = _calls_as_text(kept, as_text)
        elif message.role == "user" and as_text:
            kept = _results_as_text(kept, as_text, lost)
            as_text = {}
        if not kept:
            kept = [{"type": "text", "text": PLACEHOLDER}]
        if prefix is not None:
            for api in kept:
                prefix.feed(api)
        out.append({"role": message.role, "content": kept})
    return out, lost


def bind_answer(body: dict[str, Any], info: ModelInfo, answer: Message, tools: ToolMap) -> None:
    """Record on each thinking block of `answer` (the reply to `body`) the prefix it was made after."""
    if not info.thinks:
        return
    if not info.preserved_thinking:  # only the model family is recorded: nothing to hash
        for api, block in message_blocks(answer, tools):
            if api["type"] in THINKING_TYPES:
                block.bound = f"{info.family}:"
        return
    prefix = _Prefix(info.family, body.get("system", []), body.get("tools", []))
    for message in body["messages"]:
        prefix.feed({"role": message["role"]})
        for api in message["content"]:
            prefix.feed(api)
    if body["messages"][-1]["role"] != "assistant":  # else the answer continues it (a paused turn): one message
        prefix.feed({"role": "assistant"})
    for api, block in message_blocks(answer, tools):
        if api["type"] in THINKING_TYPES:
            block.bound = prefix.bound()
        prefix.feed(api)


def first_own(content: list[dict[str, Any]]) -> str:
    """The type of an assistant message's first block of the model's own: an answer that continues a turn whose
    server tool waited for the client's results begins with that tool's result block ([server-tools] "Mixing
    server tools and client tools in one turn"), which the API ran, not the model."""
    for block in content:
        if not str(block.get("type", "")).endswith("_tool_result"):
            return str(block.get("type"))
    return "text"


def _calls_as_text(blocks: list[dict[str, Any]], as_text: dict[str, str]) -> list[dict[str, Any]]:
    """A tool call with no thinking block before it, for a model that always thinks: as text."""
    if not blocks or first_own(blocks) in THINKING_TYPES or not any(b["type"] == "tool_use" for b in blocks):
        return blocks
    out = []
    for b in blocks:
        if b["type"] == "tool_use":
            as_text[b["id"]] = b["name"]
            out.append({"type": "text", "text": f"[tool call {b['name']} {canonical(b['input'])}]"})
        else:
            out.append(b)
    return out


def _results_as_text(blocks: list[dict[str, Any]], as_text: dict[str, str], lost: set[str]) -> list[dict[str, Any]]:
    out = []
    for b in blocks:
        if b["type"] == "tool_result" and b["tool_use_id"] in as_text:
            flag = " (error)" if b.get("is_error") else ""
            parts = b["content"] if isinstance(b["content"], list) else [{"type": "text", "text": b["content"]}]
            loads = [str(p["tool_name"]) for p in parts if p.get("type") == "tool_reference"]
            lost.update(loads)
            content = "\n".join(p["text"] if p.get("type") == "text" else canonical(p) for p in parts
                                if p.get("type") not in ("image", "tool_reference"))
            content = "\n".join(x for x in (content, "Loaded: " + ", ".join(loads) if loads else "") if x)
            out.append({"type": "text", "text": f"[tool result of {as_text[b['tool_use_id']]}{flag}]\n"
                                                f"{content.strip() or '(no output)'}"})
            out.extend(p for p in parts if p.get("type") == "image")  # images stay images
        else:
            out.append(b)
    return out


# ------------------------------------------------------------------------------------------------ thinking


@dataclass
class ThinkingPlan:
    """The thinking fields of one request."""

    max_tokens: int
    thinking: dict[str, Any] | None = None
    effort: str | None = None
    active: bool = False  # the model thinks up front on this request


def in_open_loop(messages: list[dict[str, Any]]) -> bool:
    """The request continues a tool loop: tool results answer the last assistant message."""
    return (len(messages) >= 2 and messages[-1]["role"] == "user" and messages[-2]["role"] == "assistant"
            and any(b["type"] == "tool_result" for b in messages[-1]["content"]))


def loop_has_thinking(messages: list[dict[str, Any]]) -> bool:
    """Outside a tool loop, or inside one whose assistant message starts with a thinking block."""
    return not in_open_loop(messages) or first_own(messages[-2]["content"]) in THINKING_TYPES


def effort_for(budget: int) -> str:
    """The effort level a configured thinking budget stands for on adaptive models (never xhigh/max, which
    some models refuse together with turning thinking off)."""
    return "low" if budget < 8192 else "medium" if budget < 32768 else "high"


def plan_thinking(info: ModelInfo, budget: int | None, max_tokens: int, loop_ok: bool) -> ThinkingPlan:
    """thinking / output_config / max_tokens for `info`'s model. `loop_ok`: see loop_has_thinking."""
    plan = ThinkingPlan(max(1, min(max_tokens, info.max_output)))
    want = bool(budget) and info.thinks
    if info.thinking == "budget":
        if want and loop_ok:
            tokens = max(MIN_BUDGET, int(budget or 0))
            plan.max_tokens = min(info.max_output, max(plan.max_tokens, tokens + MIN_BUDGET))
            tokens = min(tokens, plan.max_tokens - MIN_BUDGET)
            if tokens >= MIN_BUDGET:
                plan.thinking, plan.active = {"type": "enabled", "budget_tokens": tokens}, True
        return plan
    if info.thinking not in ("adaptive", "always"):
        return plan
    on_by_default = info.thinks_by_default or info.thinking == "always"
    if loop_ok or info.thinking == "always":  # always: calls without thinking were sent as text
        if want:
            plan.thinking, plan.active = {"type": "adaptive"}, True
            plan.effort = effort_for(int(budget or 0)) if info.effort else None
        else:
            plan.active = on_by_default
    elif on_by_default and info.disable:
        plan.thinking = {"type": info.disable}  # at the default effort, where every documented disable works
    return plan


def cacheable(content: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The last block that may carry cache_control ([prompt-caching]: thinking blocks may not)."""
    for block in reversed(list(content)):
        if block.get("type") not in THINKING_TYPES:
            return block
    return None
