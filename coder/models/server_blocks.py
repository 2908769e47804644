"""Server tool blocks (web search) in a request: which go back as the API gave them, and which as text.

A tool the API runs itself answers inside the assistant's turn: a `server_tool_use` block and, paired by
`tool_use_id`, its result block (`web_search_tool_result`). The server-tools page
(platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools) documents when a call is still waiting:

- a `pause_turn` answer can end with a `server_tool_use` whose tool has not run; the turn goes on when the paused
  answer is sent back as the last message, and the API runs the tool first;
- when the model also calls a client tool, the answer stops with `tool_use` and the server call waits; it runs when
  the next request's user message holds only the client `tool_result` blocks, and the next answer begins with its
  result block ("a block added after the results, such as text, tells the API that the assistant turn is over ...
  the request fails with a 400": "`web_search` tool use with id ... was found without a corresponding
  `web_search_tool_result` block");
- "a resume request that no longer defines the waiting server tool fails with a 400".

`settle` applies that to a whole request, whatever shaped its history (a turn cut by Ctrl+C, --max-turns or a
killed process, a resume, a compaction, `/rewind`, `/model`): a call may wait only where the request continues its
turn (the request ends with the paused answer, or with a user message of tool results only right after it); a call
whose turn ended without its result, a result whose call is gone, and every block of a server tool the request
does not declare (the session's search cap withdrew it, another model, another route) are sent as text, which
says what was searched and found and closes nothing the API would wait for. The choice depends on the request's
messages and tools only, so one history is always rendered the same way.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from coder.models.request_rules import canonical
from coder.models.types import Block, Message, ServerToolBlock, TextBlock, ToolResultBlock

USE = "server_tool_use"
_HOST = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$", re.IGNORECASE)


def result_for(data: dict[str, Any]) -> str | None:
    """The call id a server tool's result block answers (`web_search_tool_result`), else None."""
    kind = str(data.get("type", ""))
    return str(data.get("tool_use_id")) if kind.endswith("_tool_result") and "tool_use_id" in data else None


def as_text(data: dict[str, Any], waiting: bool = False) -> str:
    """What a server tool block said, as text a model reads (the search results' encrypted page text is not)."""
    if data.get("type") == USE:
        note = ", not run: the turn ended before it could" if waiting else ""
        return f"[{data.get('name', 'server tool')} call {canonical(data.get('input', {}))}{note}]"
    kind = str(data.get("type", "server tool result")).removesuffix("_tool_result")
    content = data.get("content")
    if isinstance(content, dict):  # an error result: {"type": "..._error", "error_code": ...}
        return f"[{kind} failed: {content.get('error_code', 'error')}]"
    if isinstance(content, list):
        lines = [f"{n}. {item.get('title', '')} <{item.get('url', '')}>" for n, item in enumerate(content, 1)
                 if isinstance(item, dict)]
        return f"[{kind} results]\n" + ("\n".join(lines) or "(none)")
    return f"[{kind} result]"


def _results_only(message: Message) -> bool:
    return message.role == "user" and bool(message.content) and all(isinstance(b, ToolResultBlock)
                                                                    for b in message.content)


def settle(messages: list[Message], declared: Collection[str]) -> list[Message]:
    """`messages` with every server tool block the request cannot send as it is turned into text (see the module
    docstring); `declared`: the names of the server tools the request declares. Untouched messages are the same
    objects."""
    uses: dict[str, tuple[int, str]] = {}  # call id -> (message index, tool name)
    answered: dict[str, int] = {}  # call id -> index of the message holding its result
    for index, message in enumerate(messages):
        for block in message.content:
            if isinstance(block, ServerToolBlock):
                if block.data.get("type") == USE:
                    uses[str(block.data.get("id"))] = (index, str(block.data.get("name")))
                elif (answers := result_for(block.data)) is not None:
                    answered.setdefault(answers, index)
    last = len(messages) - 1
    kept: set[str] = set()
    for call, (at, name) in uses.items():
        if name not in declared:
            continue
        result = answered.get(call, -1)
        continues = at + 1 <= last and _results_only(messages[at + 1])
        if result == at or (result < 0 and (at == last or (continues and at + 1 == last))) or (
                result == at + 2 and continues and messages[result].role == "assistant"):
            kept.add(call)
    out: list[Message] = []
    for message in messages:
        blocks: list[Block] = []
        for block in message.content:
            if isinstance(block, ServerToolBlock):
                call = str(block.data.get("id")) if block.data.get("type") == USE else result_for(block.data)
                if call not in kept:
                    block = TextBlock(as_text(block.data, waiting=call in uses and call not in answered))
            blocks.append(block)
        changed = any(a is not b for a, b in zip(blocks, message.content, strict=True))
        out.append(Message(message.role, blocks) if changed else message)
    return out


def domain_problem(entry: str) -> str | None:
    """What is wrong with one entry of a web search domain list, by the server-tools page's "Domain filtering"
    (an invalid one is refused with a 400), or None: a domain without a scheme (`example.com`, not
    `https://example.com`), optionally a path (`example.com/blog`); a `*` only in the path, at most one
    (`example.com/*`, never `*.example.com`); ASCII only (the page warns that look-alike letters pass filters:
    write an international name in its xn-- form)."""
    if not entry.strip() or entry != entry.strip() or any(c.isspace() for c in entry):
        return "is empty or holds spaces"
    if not entry.isascii():
        return "is not ASCII: write the domain in its xn-- (punycode) form"
    if "://" in entry:
        return f"has a scheme: write {entry.split('://', 1)[1]}"
    host = entry.split("/", 1)[0]
    if "*" in host:
        return "has a * in the domain: a wildcard may only stand in the path (example.com/*)"
    if entry.count("*") > 1:
        return "has more than one *"
    if not _HOST.match(host):
        return "is not a domain name (like example.com, or docs.example.com/guide)"
    return None
