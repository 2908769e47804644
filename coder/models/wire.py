"""The Anthropic wire format without the SDK: request bodies, token estimates and prompt-cache accounting.

Three places need the same arithmetic: the Anthropic provider (to build its request and estimate tokens
locally), the scripted provider (which must report the usage the fake server would report for the same
request) and the fake server (which counts the bodies it receives). Keeping it in one SDK-free module makes
"the same script in-process and over HTTP gives the same numbers" true by construction.

Token estimate: ceil(characters / 4) per segment, where a segment is one tool definition, one system block,
or one content block of one message, serialised canonically (sorted keys, no whitespace, `cache_control`
removed). The request's input tokens are the sum over its segments, so cached / written / uncached parts
always add up to the total exactly. What the API bills without showing it in the body (the tool-use system prompt,
a server-defined tool's own definition) is counted at its documented size (coder.models.hidden_tokens).
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from coder.models.hidden_tokens import server_tool_tokens, tool_prompt_tokens
from coder.models.images import fitted_size, image_tokens, max_images, request_image_size, within_limits
from coder.models.model_table import model_info, server_tool_names
from coder.models.request_rules import (  # noqa: F401 - canonical and block_to_api are part of this module's API
    block_to_api,
    cacheable,
    canonical,
    loop_has_thinking,
    plan_thinking,
    shape_messages,
)
from coder.models.server_blocks import settle
from coder.models.tool_loading import Declared, declare
from coder.models.tool_names import ToolMap
from coder.models.types import ModelRequest

MAX_CACHE_BREAKPOINTS = 4  # [prompt-caching] "up to 4 cache breakpoints"
EPHEMERAL = {"type": "ephemeral"}
HEADER_CHARS = 4 * 32 * 1024  # the base64 of an image's first 96 KB: where its size is (a JPEG's after EXIF)

def estimate_tokens(text: str) -> int:
    """Deterministic token estimate: one token per four characters, rounded up."""
    return (len(text) + 3) // 4


def server_tool_supported(tool_type: str, model: str, name: str | None = None) -> bool:
    """True when `model` is documented to take the server-defined tool `tool_type` (declared under `name`, when
    given: each type has one fixed name)."""
    if name is not None and server_tool_names().get(tool_type) != name:
        return False
    return tool_type in model_info(model).server_tools


# ----------------------------------------------------------------------------------------------- requests


def build_anthropic_body(request: ModelRequest, model: str) -> dict[str, Any]:
    """The Messages API body for `request` (without `stream`), shaped by coder.models.request_rules for `model`.

    Breakpoints, at most four, in priority order: end of system prompt (it caches tools + system), the latest
    message breakpoints, then the end of the tools (only useful when the system prompt changes).
    """
    info = model_info(model)
    names = ToolMap.of(request.tools)
    system: list[dict[str, Any]] = [{"type": "text", "text": request.system}] if request.system.strip() else []
    fitted = within_limits(request.messages, max_images(info.context_window), info.vision)
    whole: set[str] = set()
    while True:  # coder.models.tool_loading: a load sent as text declares its tool whole (at most once per tool)
        tools = _api_tools(declare(request.tools, fitted, info.defers_tools, whole), names, model)
        settled = settle(fitted, {str(t["name"]) for t in tools if "type" in t})
        messages, lost = shape_messages(settled, names, info, system, tools)
        unloaded = {s.name for s in request.tools if s.deferred and names.api_name(s.name) in lost} - whole
        if not unloaded or not info.defers_tools:
            break
        whole |= unloaded
    plan = plan_thinking(info, request.thinking_budget, request.max_tokens, loop_has_thinking(messages))

    budget = MAX_CACHE_BREAKPOINTS
    if request.cache_system and system:
        system[-1]["cache_control"] = dict(EPHEMERAL)
        budget -= 1
    for index in sorted(set(request.cache_breakpoints), reverse=True):
        if budget <= 0:
            break
        if 0 <= index < len(messages):
            target = cacheable(messages[index]["content"])
            if target is not None and "cache_control" not in target:
                target["cache_control"] = dict(EPHEMERAL)
                budget -= 1
    loaded = [t for t in tools if not t.get("defer_loading")]
    if request.cache_system and loaded and budget > 0:
        loaded[-1]["cache_control"] = dict(EPHEMERAL)

    body: dict[str, Any] = {"model": model, "max_tokens": plan.max_tokens, "messages": messages}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = tools
    if plan.thinking:
        body["thinking"] = plan.thinking
    if plan.effort:
        body["output_config"] = {"effort": plan.effort}
    if request.temperature is not None and info.sampling and not plan.active:
        body["temperature"] = request.temperature  # thinking requires the default temperature
    return body


def _api_tools(declared: Declared, names: ToolMap, model: str) -> list[dict[str, Any]]:
    """The `tools` array: a server tool by its type where the model takes it, every other tool as a schema (marked
    `defer_loading` when the plan defers it: the API leaves it out of the prompt until a tool_reference loads it,
    so neither the number of deferred tools nor a load changes the cached prefix: tools, then system, then
    messages)."""
    tools: list[dict[str, Any]] = []
    for spec in declared.specs:
        if spec.anthropic_type and server_tool_supported(spec.anthropic_type, model, spec.name):
            tools.append({"type": spec.anthropic_type, "name": spec.name, **spec.server_params})
        else:
            tools.append({"name": names.api_name(spec.name), "description": spec.description,
                          "input_schema": names.api_schema(spec)})
            if spec.name in declared.deferred:
                tools[-1]["defer_loading"] = True
    return tools


# ------------------------------------------------------------------------------------------------- usage


@dataclass
class Segment:
    text: str
    tokens: int
    breakpoint: bool


def segments(body: dict[str, Any]) -> list[Segment]:
    """The cacheable prefix in API order (tools, system, messages), one segment per block, led by the tool-use
    system prompt the API adds to a request with tools (coder.models.hidden_tokens)."""
    out: list[Segment] = []

    def add(obj: Any) -> None:
        text = canonical(obj)
        out.append(Segment(text, estimate_tokens(text), isinstance(obj, dict) and "cache_control" in obj))

    prompt = tool_prompt_tokens(body)  # billed, not in the body: the first thing the API renders (hidden_tokens)
    if prompt:
        out.append(Segment(f"[tool use system prompt: {prompt} tokens]", prompt, False))
    deferred: dict[str, str] = {}  # name -> definition of each deferred tool: counted where it is loaded
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("defer_loading"):
            deferred[str(tool.get("name"))] = canonical(tool)
        else:
            add(tool)
            hidden = server_tool_tokens(tool)
            if hidden is not None:  # the API's own definition, not the few tokens of the declaration
                out[-1].tokens = hidden
    system = body.get("system")
    if isinstance(system, str):
        add({"type": "text", "text": system})
    else:
        for block in system or []:
            add(block)
    for index, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            marked = isinstance(block, dict) and "cache_control" in block
            text = canonical({"m": index, "role": message.get("role"), "block": block})
            inner = block.get("content") if isinstance(block, dict) else None
            for ref in inner if isinstance(inner, list) else []:
                if isinstance(ref, dict) and ref.get("type") == "tool_reference":
                    text += deferred.get(str(ref.get("tool_name")), "")  # the definition, expanded in place
            out.append(Segment(text, _priced(block, text), marked))
    return out


def _priced(block: Any, text: str) -> int:
    """The tokens of one content block: its text at four characters a token, but an image (alone or in a tool
    result) at the documented width * height / 750 ([vision]) and its base64 data not at all."""
    inner = block.get("content") if isinstance(block, dict) else None
    images = [block] if isinstance(block, dict) and block.get("type") == "image" else \
        [b for b in inner if isinstance(b, dict) and b.get("type") == "image"] if isinstance(inner, list) else []
    tokens = estimate_tokens(text)
    for image in images:
        source = image.get("source")
        data = source.get("data") if isinstance(source, dict) else None
        data = data if isinstance(data, str) else ""
        tokens += _image_price(data) - len(canonical(image)) // 4  # the price, not the block's JSON
    return max(tokens, 1)


def chat_item_tokens(item: Any) -> int:
    """The tokens of one Chat Completions message or tool, an image part priced as on the Anthropic route (the
    local estimate has one formula; OpenAI's own tiles differ, and its usage report calibrates the estimate)."""
    text = canonical(item)
    tokens = estimate_tokens(text)
    content = item.get("content") if isinstance(item, dict) else None
    for part in content if isinstance(content, list) else []:
        url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) and \
            isinstance(part.get("image_url"), dict) else ""
        if isinstance(url, str) and url.startswith("data:"):
            data = url.partition(",")[2]
            tokens += _image_price(data) - len(data) // 4
    return max(tokens, 1)


def _image_price(data: str) -> int:
    try:
        size = request_image_size(base64.b64decode(data[:HEADER_CHARS], validate=False))
    except ValueError:
        size = None
    return image_tokens(*fitted_size(*size)) if size else 0


def input_tokens(body: dict[str, Any]) -> int:
    """Total input tokens of an Anthropic body, as the fake server and the scripted provider count them."""
    return sum(s.tokens for s in segments(body))


@dataclass
class CacheUsage:
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


@dataclass
class PrefixCache:
    """Emulation of prompt caching, as the Messages API documents it: the prefix ending at each cache_control
    breakpoint is written to the cache; at each breakpoint a request also looks back up to 20 blocks for the
    longest prefix an earlier request wrote, and reads it. `every_segment=True` treats every segment as a
    breakpoint (OpenAI-style automatic caching, whose usage only reports reads)."""

    every_segment: bool = False
    lookback: int = 20
    _keys: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def account(self, segs: list[Segment]) -> CacheUsage:
        total = sum(s.tokens for s in segs)
        digest = hashlib.sha256()
        keys: list[str] = []  # prefix key after each segment
        ends: list[int] = []  # token count after each segment
        running = 0
        for seg in segs:
            digest.update(seg.text.encode("utf-8") + b"\x00")
            running += seg.tokens
            keys.append(digest.hexdigest())
            ends.append(running)
        breaks = [i for i, seg in enumerate(segs) if seg.breakpoint or self.every_segment]
        read = 0
        with self._lock:
            for b in breaks:
                for i in range(b, max(-1, b - self.lookback - 1), -1):
                    if keys[i] in self._keys:
                        read = max(read, ends[i])
                        break
            self._keys.update(keys[b] for b in breaks)
        last_break = ends[breaks[-1]] if breaks else 0
        if self.every_segment:
            return CacheUsage(total - read, read, 0)
        return CacheUsage(total - last_break, read, last_break - read)


def output_tokens(text: str, thinking: str, tool_calls: list[dict[str, Any]]) -> int:
    """Deterministic output token count of one scripted answer."""
    parts = [text, thinking] + [canonical(c.get("input", {})) + str(c.get("name", "")) for c in tool_calls]
    return max(1, sum(estimate_tokens(p) for p in parts if p))


def chunk_text(text: str, pieces: int = 3) -> list[str]:
    """Split text into a few chunks on word boundaries (how the fake streams it)."""
    if not text:
        return []
    words = re.findall(r"\S+\s*|\s+", text)
    size = max(1, -(-len(words) // pieces))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


def signature_for(thinking: str) -> str:
    """A deterministic stand-in for the thinking signature the real API returns."""
    return "sig_" + hashlib.sha256(thinking.encode("utf-8")).hexdigest()[:40]
