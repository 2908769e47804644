"""Messages API rules on prompt-caching breakpoints ([prompt-caching]): "up to 4 cache breakpoints", the type and
TTL of a breakpoint, "Thinking blocks cannot be cached directly with cache_control", and "longer TTL entries must
appear before shorter ones" in the order the API reads a request (tools, system, messages)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coder_testkit.fake_rules.book import CACHING, Found, Rules
from coder_testkit.fake_rules.context import MessagesCall

RULES: Rules[MessagesCall] = Rules()

MAX_BREAKPOINTS = 4


def _marks(call: MessagesCall) -> list[tuple[str, str | None, Any]]:
    """(path, block type, cache_control) in the order the API processes them: tools, system, messages."""
    marks: list[tuple[str, str | None, Any]] = []
    if "cache_control" in call.body:
        marks.append(("cache_control", None, call.body["cache_control"]))
    tools = call.body.get("tools")
    for i, tool in enumerate(tools if isinstance(tools, list) else []):
        if "cache_control" in tool:
            marks.append((f"tools.{i}", tool.get("type"), tool["cache_control"]))
    for block in call.system_blocks + call.blocks:
        if "cache_control" in block.block:
            marks.append((block.path, block.type, block.block["cache_control"]))
    return marks


def _each(call: MessagesCall, broken: Callable[[str, Any, Any], Found]) -> Found:
    for path, kind, control in _marks(call):
        fields = broken(path, kind, control)
        if fields is not None:
            return fields
    return None


@RULES.rule("cache.type", "a breakpoint's type is ephemeral", "{path}.cache_control.type: Input should be 'ephemeral'",
            CACHING, "schema")
def _type(call: MessagesCall) -> Found:
    return _each(call, lambda path, kind, control: {"path": path}
                 if not isinstance(control, dict) or control.get("type") != "ephemeral" else None)


@RULES.rule("cache.fields", "a breakpoint holds only type and ttl",
            "{path}.cache_control.{key}: Extra inputs are not permitted", CACHING, "schema")
def _fields(call: MessagesCall) -> Found:
    def broken(path: str, kind: Any, control: dict[str, Any]) -> Found:
        extra = sorted(set(control) - {"type", "ttl"})
        return {"path": path, "key": extra[0]} if extra else None
    return _each(call, broken)


@RULES.rule("cache.ttl", "a breakpoint's ttl is 5m or 1h", "{path}.cache_control.ttl: Input should be '5m' or '1h'",
            CACHING, "schema")
def _ttl(call: MessagesCall) -> Found:
    return _each(call, lambda path, kind, control: {"path": path} if control.get("ttl", "5m") not in ("5m", "1h")
                 else None)


@RULES.rule("cache.thinking", "no breakpoint on a thinking block",
            "{path}.{kind}.cache_control: Extra inputs are not permitted", CACHING, "schema")
def _thinking(call: MessagesCall) -> Found:
    return _each(call, lambda path, kind, control: {"path": path, "kind": kind}
                 if kind in ("thinking", "redacted_thinking") else None)


@RULES.rule("cache.ttl-order", "no 1h breakpoint after a 5m one (order: tools, system, messages)",
            "{path}: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that "
            "blocks are processed in the following order: `tools`, `system`, `messages`.", CACHING, "closest")
def _ttl_order(call: MessagesCall) -> Found:
    seen_short = False
    for path, _, control in _marks(call):
        ttl = control.get("ttl", "5m")
        if ttl == "1h" and seen_short:
            return {"path": path}
        seen_short = seen_short or ttl == "5m"
    return None


@RULES.rule("cache.count", "at most 4 breakpoints", "A maximum of 4 blocks with cache_control may be provided. Found "
            "{count}.", CACHING, "seen", seen="https://github.com/tghamm/Anthropic.SDK/issues/50")
def _count(call: MessagesCall) -> Found:
    count = len(_marks(call))
    return {"count": count} if count > MAX_BREAKPOINTS else None
