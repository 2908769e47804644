"""Reading a history as the tiers need it: observations (tool call + result), turns, and a valid API shape.

The engine's history is never mutated here. A view is built by copying only the messages a compaction changed,
so an unchanged prefix is the very same sequence of messages from one request to the next (which is what keeps
the provider's prompt cache warm).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

from coder.models.types import Message, TextBlock, ToolResultBlock, ToolUseBlock


@dataclass
class Observation:
    """One tool call and what it returned."""

    tool_use_id: str
    name: str
    input: dict[str, Any]
    use_index: int  # index of the assistant message holding the call
    result_index: int | None = None  # index of the user message holding the result (None: not answered yet)
    content: str = ""
    is_error: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def observations(history: list[Message]) -> list[Observation]:
    """Every tool call in order, joined to its result when there is one."""
    by_id: dict[str, Observation] = {}
    ordered: list[Observation] = []
    for index, message in enumerate(history):
        for block in message.content:
            if isinstance(block, ToolUseBlock) and message.role == "assistant":
                # the input itself, not a copy: one dict is one call (coder.tools.registry.describe remembers it)
                obs = Observation(block.id, block.name, block.input or {}, index)
                by_id[block.id] = obs
                ordered.append(obs)
            elif isinstance(block, ToolResultBlock) and block.tool_use_id in by_id:
                obs = by_id[block.tool_use_id]
                obs.result_index, obs.content, obs.is_error = index, block.content, block.is_error
    return ordered


def assistant_indexes(history: list[Message]) -> list[int]:
    """Where each turn starts: one model answer (and the results that follow it) is one turn."""
    return [i for i, m in enumerate(history) if m.role == "assistant"]


def user_texts(messages: list[Message]) -> list[str]:
    """What the user typed (text blocks of user messages), in order; tool results are not instructions."""
    texts: list[str] = []
    for message in messages:
        if message.role != "user":
            continue
        for block in message.content:
            if isinstance(block, TextBlock) and block.text.strip():
                texts.append(block.text)
    return texts


def loaded_tools(messages: list[Message]) -> tuple[str, list[str]]:
    """(the name of the tool that loaded them, the deferred tools loaded) by the tool results of `messages`: what
    a handoff must load again when it replaces them (coder/tools/tool_search_tool.py)."""
    calls = {b.id: b.name for m in messages for b in m.content if isinstance(b, ToolUseBlock)}
    caller, names = "", []
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolResultBlock) and block.tool_references:
                caller = calls.get(block.tool_use_id, caller)
                names += [n for n in block.tool_references if n not in names]
    return caller, names


def replace_results(history: list[Message], replacements: dict[str, str], start: int = 0) -> list[Message]:
    """history[start:] with the content of the tool results named in `replacements` swapped; untouched messages
    are the same objects as in `history`."""
    view: list[Message] = []
    for message in history[start:]:
        if message.role == "user" and replacements and any(
                isinstance(b, ToolResultBlock) and b.tool_use_id in replacements for b in message.content):
            blocks = [
                replace(b, content=replacements[b.tool_use_id])
                if isinstance(b, ToolResultBlock) and b.tool_use_id in replacements else b
                for b in message.content
            ]
            view.append(Message(message.role, blocks))
        else:
            view.append(message)
    return view


def repair_pairing(messages: list[Message]) -> list[Message]:
    """Make the message list acceptable to the Messages API without losing text: a tool_result whose call is not
    in the message just before becomes a text block, and two messages of the same role in a row are merged.

    The tiers keep pairs intact by construction; this is the last line of defence for histories that arrive
    broken (an interrupted session, a hand-edited store)."""
    repaired: list[Message] = []
    for message in messages:
        blocks = message.content
        if message.role == "user":
            previous_ids: set[str] = set()
            if repaired and repaired[-1].role == "assistant":
                previous_ids = {b.id for b in repaired[-1].content if isinstance(b, ToolUseBlock)}
            if any(isinstance(b, ToolResultBlock) and b.tool_use_id not in previous_ids for b in blocks):
                blocks = [
                    TextBlock(f"[result of an earlier tool call {b.tool_use_id}]\n{b.content}")
                    if isinstance(b, ToolResultBlock) and b.tool_use_id not in previous_ids else b
                    for b in blocks
                ]
        if repaired and repaired[-1].role == message.role:
            repaired[-1] = Message(message.role, list(repaired[-1].content) + list(blocks))
            continue
        repaired.append(message if blocks is message.content else Message(message.role, blocks))
    return repaired


def pairing_problems(messages: list[Message]) -> list[str]:
    """What the Messages API would reject about tool pairing and role order (empty when valid)."""
    problems: list[str] = []
    if messages and messages[0].role != "user":
        problems.append("first message is not from the user")
    for i, message in enumerate(messages):
        if i and messages[i - 1].role == message.role:
            problems.append(f"messages {i - 1} and {i} have the same role")
        if message.role == "user":
            prev_ids = ({b.id for b in messages[i - 1].content if isinstance(b, ToolUseBlock)}
                        if i and messages[i - 1].role == "assistant" else set())
            for block in message.content:
                if isinstance(block, ToolResultBlock) and block.tool_use_id not in prev_ids:
                    problems.append(f"message {i}: orphan tool_result {block.tool_use_id}")
        else:
            ids = [b.id for b in message.content if isinstance(b, ToolUseBlock)]
            if ids and i + 1 < len(messages):
                answered = {b.tool_use_id for b in messages[i + 1].content if isinstance(b, ToolResultBlock)}
                for tool_id in ids:
                    if tool_id not in answered:
                        problems.append(f"message {i}: tool_use {tool_id} has no result")
    return problems


def fingerprint(message: Message) -> str:
    """A short stable digest of one message, to check that a persisted cut still falls on the same message."""
    data = json.dumps(message.to_dict(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:16]
