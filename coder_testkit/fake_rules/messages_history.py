"""Messages API rules on the conversation as a whole: prefill, tool-use ids, every tool call answered by a result
in the next turn ([handle-tool-calls]), and where thinking blocks may stand ([extended-thinking] "Thinking with
tool use", "Preserving thinking blocks"). Signatures live in `signatures`."""

from __future__ import annotations

import re
from typing import Any

from coder_testkit.fake_rules.book import ERRORS, THINKING, TOOL_CALLS, Found, Rules
from coder_testkit.fake_rules.context import MessagesCall, group_by_turn

RULES: Rules[MessagesCall] = Rules()

_TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
THINKING_BLOCKS = ("thinking", "redacted_thinking")
_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


@RULES.rule("history.prefill", "a request for an answer ends with a user turn on models without prefill (Claude 4.6 "
            "and later, Mythos Preview; counting tokens continues nothing), unless it sends back a paused server-tool "
            "turn to continue it ([server-tools] pause_turn)", "This model does not support assistant "
            "message prefill. The conversation must end with a user message.", ERRORS, "documented")
def _prefill(call: MessagesCall) -> Found:
    last = call.messages[-1]
    if last["role"] != "assistant" or call.facts.prefill or call.count_tokens:
        return None
    paused = isinstance(last["content"], list) and any(
        isinstance(b, dict) and (b.get("type") == "server_tool_use" or str(b.get("type")).endswith("_tool_result"))
        for b in last["content"])
    return None if paused else {}


@RULES.rule("history.tool-use-id", "tool_use ids match ^[a-zA-Z0-9_-]+$",
            "{path}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'", TOOL_CALLS, "seen",
            seen="https://github.com/anomalyco/opencode/issues/1279")
def _tool_use_id(call: MessagesCall) -> Found:
    for block in call.of_type("tool_use"):
        if not _TOOL_USE_ID.match(block.block["id"]):
            return {"path": block.path}
    return None


@RULES.rule("history.tool-use-unique", "tool_use ids are unique in the conversation",
            "{path}: `tool_use` ids must be unique", TOOL_CALLS, "seen",
            seen="https://github.com/anthropics/claude-code/issues/21317")
def _tool_use_unique(call: MessagesCall) -> Found:
    seen: set[str] = set()
    for block in call.of_type("tool_use"):
        if block.block["id"] in seen:
            return {"path": block.path}
        seen.add(block.block["id"])
    return None


def _turns(call: MessagesCall) -> list[tuple[int, str, list[Any]]]:
    return group_by_turn(call.messages)


@RULES.rule("history.result-without-call", "every tool_result answers a tool_use of the turn just before it",
            "messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each "
            "`tool_result` block must have a corresponding `tool_use` block in the previous message.", TOOL_CALLS,
            "seen", seen="https://github.com/anthropics/claude-code/issues/13460")
def _result_without_call(call: MessagesCall) -> Found:
    turns = _turns(call)
    for t, (index, role, blocks) in enumerate(turns):
        if role != "user":
            continue
        known = {b.get("id") for b in turns[t - 1][2] if b.get("type") == "tool_use"} if t > 0 else set()
        for position, block in enumerate(blocks):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in known:
                return {"index": index, "position": position, "id": block.get("tool_use_id")}
    return None


@RULES.rule("history.result-twice", "each tool_use has a single result",
            "messages.{index}.content.{position}: each tool_use must have a single result. Found multiple "
            "`tool_result` blocks with id: {id}", TOOL_CALLS, "closest")
def _result_twice(call: MessagesCall) -> Found:
    for index, role, blocks in _turns(call):
        answered: set[str] = set()
        for position, block in enumerate(blocks):
            if role == "user" and block.get("type") == "tool_result":
                if block["tool_use_id"] in answered:
                    return {"index": index, "position": position, "id": block["tool_use_id"]}
                answered.add(block["tool_use_id"])
    return None


def _calls_and_next(call: MessagesCall) -> list[tuple[list[str], int, list[Any]]]:
    """(ids of an assistant turn's tool calls, index of the next turn's first message, the next turn's blocks)."""
    turns = _turns(call)
    out = []
    for t, (index, role, blocks) in enumerate(turns):
        ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"] if role == "assistant" else []
        if ids:
            following = turns[t + 1] if t + 1 < len(turns) else (index + 1, "user", [])
            out.append((ids, following[0], following[2]))
    return out


@RULES.rule("history.call-without-result", "every tool_use is answered by a tool_result in the next turn",
            "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: {ids}. Each "
            "`tool_use` block must have a corresponding `tool_result` block in the next message.", TOOL_CALLS, "seen",
            seen="https://github.com/anthropics/claude-code/issues/3512")
def _call_without_result(call: MessagesCall) -> Found:
    for ids, index, following in _calls_and_next(call):
        results = {b.get("tool_use_id") for b in following if b.get("type") == "tool_result"}
        missing = [x for x in ids if x not in results]
        if missing:
            return {"index": index, "ids": ", ".join(missing)}
    return None


@RULES.rule("history.results-first", "the results of a turn's tool calls come first in the next turn",
            "messages.{index}: Did not find {count} `tool_result` block(s) at the beginning of this message. "
            "Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks.",
            TOOL_CALLS, "seen", seen="https://github.com/anthropics/anthropic-sdk-typescript/issues/653")
def _results_first(call: MessagesCall) -> Found:
    for ids, index, following in _calls_and_next(call):
        if any(b.get("type") != "tool_result" for b in following[: len(ids)]):
            return {"index": index, "count": len(ids)}
    return None


# ---------------------------------------------------------------------------------------------- thinking blocks


def _own(kinds: list[Any]) -> list[Any]:
    """An assistant message's blocks from its first of the model's own: an answer that continues a turn whose
    server tool waited begins with that tool's result block ([server-tools]), which the API ran, not the model."""
    lead = 0
    while lead < len(kinds) and str(kinds[lead]).endswith("_tool_result"):
        lead += 1
    return kinds[lead:]


def _assistant_kinds(call: MessagesCall) -> list[tuple[int, list[str]]]:
    return [(i, _own([b.get("type") for b in m["content"]])) for i, m in enumerate(call.messages)
            if m["role"] == "assistant" and isinstance(m["content"], list) and _own([b.get("type")
                                                                                   for b in m["content"]])]


@RULES.rule("history.thinking-first", "an assistant message with thinking blocks starts with one",
            "messages.{index}.content.0: If an assistant message contains any thinking blocks, the first block must "
            "be thinking or redacted_thinking. Found {first}.", THINKING, "seen",
            seen="https://github.com/anthropics/claude-code/issues/20705")
def _thinking_first(call: MessagesCall) -> Found:
    for index, kinds in _assistant_kinds(call):
        if any(k in THINKING_BLOCKS for k in kinds) and kinds[0] not in THINKING_BLOCKS:
            return {"index": index, "first": kinds[0]}
    return None


def _final_assistant(call: MessagesCall) -> list[str]:
    last = call.messages[-1]
    return [b.get("type") for b in last["content"]] if last["role"] == "assistant" and \
        isinstance(last["content"], list) else []


@RULES.rule("history.thinking-last", "a final assistant message does not end with a thinking block",
            "messages.{index}: The final block in an assistant message cannot be `thinking`.", THINKING, "closest")
def _thinking_last(call: MessagesCall) -> Found:
    kinds = _final_assistant(call)
    return {"index": len(call.messages) - 1} if kinds and kinds[-1] == "thinking" else None


@RULES.rule("history.thinking-when-off", "a final assistant message holds thinking only while thinking is on",
            "messages.{index}.content.{position}: When thinking is disabled, an `assistant` message in the final "
            "position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your request.",
            THINKING, "seen", seen="https://github.com/tailcallhq/forgecode/issues/1853")
def _thinking_when_off(call: MessagesCall) -> Found:
    for position, kind in enumerate(_final_assistant(call)):
        if kind in THINKING_BLOCKS and not call.thinking_active:
            return {"index": len(call.messages) - 1, "position": position}
    return None


@RULES.rule("history.tool-loop-thinking", "with thinking on, the assistant turn of an open tool loop starts with "
            "a thinking block (one thinking mode per turn)",
            "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When "
            "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
            "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
            "previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "
            f"{_DOCS}", THINKING, "seen", seen="https://github.com/lbjlaq/Antigravity-Manager/issues/139")
def _tool_loop_thinking(call: MessagesCall) -> Found:
    messages = call.messages
    last = messages[-1]
    last_content = last["content"] if isinstance(last["content"], list) else []
    in_loop = last["role"] == "user" and any(b.get("type") == "tool_result" for b in last_content)
    if not (call.thinking_active and in_loop and len(messages) >= 2 and messages[-2]["role"] == "assistant"):
        return None
    content = _own([b.get("type") for b in messages[-2]["content"]]) if isinstance(messages[-2]["content"], list) \
        else []
    first = content[0] if content else "text"
    return {"index": len(messages) - 2, "first": first} if first not in THINKING_BLOCKS else None
