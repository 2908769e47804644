"""Messages API rules on tools the API runs itself and on tools loaded on demand ([server-tools], [web-search],
[tool-search], and the SDK's request types): the web search tool's fields and domain lists, deferred tools, and a
server tool call's place in the conversation (a call may wait for its result only while the request continues the
turn that made it)."""

from __future__ import annotations

import re
from typing import Any

from coder_testkit.fake_rules.book import (
    ANTHROPIC_SDK,
    SERVER_TOOLS,
    TOOL_SEARCH,
    Found,
    Rules,
)
from coder_testkit.fake_rules.context import Block, MessagesCall

RULES: Rules[MessagesCall] = Rules()

#: the fields of each web search tool version (anthropic 2.14: WebSearchTool20250305Param, ..20260209, ..20260318)
_SEARCH_FIELDS = frozenset({"name", "type", "allowed_callers", "allowed_domains", "blocked_domains", "cache_control",
                            "defer_loading", "max_uses", "strict", "user_location"})
WEB_SEARCH_FIELDS = {"web_search_20250305": _SEARCH_FIELDS, "web_search_20260209": _SEARCH_FIELDS,
                     "web_search_20260318": _SEARCH_FIELDS | {"response_inclusion"}}
#: the fields of a custom tool (anthropic 2.14: ToolParam)
CUSTOM_FIELDS = frozenset({"name", "description", "input_schema", "type", "allowed_callers", "cache_control",
                           "defer_loading", "eager_input_streaming", "input_examples", "strict"})
MAX_DEFERRED = 10_000  # [tool-search] "Maximum deferred tools: 10,000 tools with defer_loading: true per request"
#: [server-tools] "Domain filtering": no scheme; a `*` only in the path after the domain (never `*.example.com`)
_DOMAIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+"
                     r"(?:/[^\s*]*(?:\*[^\s*]*)?)?$")


def _tools(call: MessagesCall) -> list[tuple[int, dict[str, Any]]]:
    tools = call.body.get("tools")
    return [(i, t) for i, t in enumerate(tools) if isinstance(t, dict)] if isinstance(tools, list) else []


def _searches(call: MessagesCall) -> list[tuple[int, dict[str, Any]]]:
    return [(i, t) for i, t in _tools(call) if t.get("type") in WEB_SEARCH_FIELDS]


@RULES.rule("tools.custom-fields", "a custom tool holds only the fields a tool definition has",
            "tools.{index}.custom.{key}: Extra inputs are not permitted", ANTHROPIC_SDK, "schema")
def _custom_fields(call: MessagesCall) -> Found:
    for index, tool in _tools(call):
        extra = sorted(set(tool) - CUSTOM_FIELDS) if tool.get("type") in (None, "custom") else []
        if extra:
            return {"index": index, "key": extra[0]}
    return None


@RULES.rule("tools.web-search-fields", "the web search tool holds only its version's fields",
            "tools.{index}.{tag}.{key}: Extra inputs are not permitted", ANTHROPIC_SDK, "schema")
def _search_fields(call: MessagesCall) -> Found:
    for index, tool in _searches(call):
        extra = sorted(set(tool) - WEB_SEARCH_FIELDS[tool["type"]])
        if extra:
            return {"index": index, "tag": tool["type"], "key": extra[0]}
    return None


@RULES.rule("tools.web-search-max-uses", "the web search tool's max_uses is a whole number above 0",
            "tools.{index}.{tag}.max_uses: {problem}", ANTHROPIC_SDK, "schema")
def _max_uses(call: MessagesCall) -> Found:
    for index, tool in _searches(call):
        value = tool.get("max_uses")
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool):
            return {"index": index, "tag": tool["type"], "problem": "Input should be a valid integer"}
        if value < 1:
            return {"index": index, "tag": tool["type"], "problem": "Input should be greater than 0"}
    return None


@RULES.rule("tools.web-search-domain-list", "allowed_domains / blocked_domains are lists of strings",
            "tools.{index}.{tag}.{key}: Input should be a valid list of strings", ANTHROPIC_SDK, "schema")
def _domain_list(call: MessagesCall) -> Found:
    for index, tool in _searches(call):
        for key in ("allowed_domains", "blocked_domains"):
            value = tool.get(key)
            if value is not None and not (isinstance(value, list) and all(isinstance(d, str) for d in value)):
                return {"index": index, "tag": tool["type"], "key": key}
    return None


@RULES.rule("tools.web-search-domain-format", "each domain has no scheme and a * only in its path, at most one; ASCII",
            "tools.{index}.{tag}.{key}: Invalid domain format: '{domain}'. Domains must not include a scheme, and a "
            "wildcard (*) may only appear in the path after the domain.", SERVER_TOOLS, "closest")
def _domain_format(call: MessagesCall) -> Found:
    for index, tool in _searches(call):
        for key in ("allowed_domains", "blocked_domains"):
            for domain in tool.get(key) or []:
                if not domain.isascii() or not _DOMAIN.match(domain):
                    return {"index": index, "tag": tool["type"], "key": key, "domain": domain}
    return None


@RULES.rule("tools.deferred-cache-control", "a tool with defer_loading carries no cache_control",
            "tools.{index}: A tool with defer_loading cannot have cache_control. Put the cache breakpoint on a "
            "non-deferred tool.", TOOL_SEARCH, "closest")
def _deferred_cache(call: MessagesCall) -> Found:
    return next(({"index": i} for i, t in _tools(call) if t.get("defer_loading") is True and "cache_control" in t),
                None)


@RULES.rule("tools.deferred-limit", "at most 10,000 tools with defer_loading a request",
            "tools: At most 10000 tools can have defer_loading set, got {count}.", TOOL_SEARCH, "closest")
def _deferred_limit(call: MessagesCall) -> Found:
    count = sum(1 for _, t in _tools(call) if t.get("defer_loading") is True)
    return {"count": count} if count > MAX_DEFERRED else None


@RULES.rule("tools.defer-loading-model", "no defer_loading on models without tool search (Claude Opus 4.1 and "
            "earlier)", "tools.{index}.custom.defer_loading: Tool search is not supported for {model}.", TOOL_SEARCH,
            "closest")
def _defer_model(call: MessagesCall) -> Found:
    if call.facts.defers_tools:
        return None
    return next(({"index": i, "model": call.model} for i, t in _tools(call) if t.get("defer_loading") is True), None)


# ----------------------------------------------------------------------------------------- in the conversation


def _server_blocks(call: MessagesCall) -> list[Block]:
    return [b for b in call.blocks if not b.in_tool_result and b.role == "assistant"
            and (b.type == "server_tool_use" or b.type.endswith("_tool_result"))]


@RULES.rule("web-search-result.fields", "a web search result carries its url, title and encrypted_content",
            "{path}.web_search_result.{key}: Field required", ANTHROPIC_SDK, "schema")
def _result_fields(call: MessagesCall) -> Found:
    for block in call.of_type("web_search_tool_result"):
        content = block.block.get("content")
        for n, item in enumerate(content if isinstance(content, list) else []):
            missing = [k for k in ("encrypted_content", "title", "url") if not isinstance(item, dict)
                       or not isinstance(item.get(k), str)]
            if missing:
                return {"path": f"{block.path}.content.{n}", "key": missing[0]}
    return None


@RULES.rule("history.server-result-without-call", "a server tool's result answers a server_tool_use made before it",
            "{path}: `{type}` block has tool_use_id `{id}`, which does not match any earlier `server_tool_use` "
            "block.", SERVER_TOOLS, "closest")
def _result_without_call(call: MessagesCall) -> Found:
    seen: set[str] = set()
    for block in _server_blocks(call):
        if block.type == "server_tool_use":
            seen.add(str(block.block.get("id")))
        elif block.block.get("tool_use_id") not in seen:
            return {"path": block.path, "type": block.type, "id": block.block.get("tool_use_id")}
    return None


def waiting(call: MessagesCall) -> list[Block]:
    """The server tool calls that have no result block in the request."""
    answered = {b.block.get("tool_use_id") for b in _server_blocks(call) if b.type != "server_tool_use"}
    return [b for b in _server_blocks(call) if b.type == "server_tool_use" and b.block.get("id") not in answered]


def _continues(call: MessagesCall, index: int) -> bool:
    """Whether the request continues the turn of message `index`: it ends there (a paused turn sent back as it
    came) or right after it, with a user message of tool results only (a turn that called a client tool too)."""
    messages = call.messages
    if index == len(messages) - 1:
        return True
    content = messages[-1]["content"] if index == len(messages) - 2 else None
    return isinstance(content, list) and bool(content) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


@RULES.rule("history.server-tool-unanswered", "a server tool call without its result is followed by nothing but the "
            "user message of the turn's tool results (a block after them, such as text, ends the turn)",
            "`{name}` tool use with id `{id}` was found without a corresponding `{name}_tool_result` block",
            SERVER_TOOLS, "documented")
def _unanswered(call: MessagesCall) -> Found:
    for block in waiting(call):
        if not _continues(call, block.message):
            return {"name": block.block.get("name"), "id": block.block.get("id")}
    return None


@RULES.rule("history.server-tool-undeclared", "a waiting server tool call is continued with its tool declared",
            "`{name}` tool use with id `{id}` is waiting to run, but no `{name}` tool was provided", SERVER_TOOLS,
            "closest")
def _undeclared(call: MessagesCall) -> Found:
    names = {t.get("name") for _, t in _tools(call) if t.get("type") not in (None, "custom")}
    for block in waiting(call):
        if block.block.get("name") not in names:
            return {"name": block.block.get("name"), "id": block.block.get("id")}
    return None
