"""Tier 1, the cheapest: long tool outputs keep head and tail; the whole text goes behind an output:// handle.

A result is clipped the first time the manager sees it, before any request carries it, so clipping never
changes a prefix the provider has already cached. The hard cut is the emergency version for a single turn that
does not fit the window at all: it cuts much deeper, and it is applied once, never looped on."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coder.context.history import replace_results
from coder.models.types import Message, TextBlock, ToolResultBlock
from coder.store.outputs import HANDLE_PREFIX, clip_output


@dataclass
class ClipTier:
    state_dir: Path
    max_chars: int = 20_000
    head_lines: int = 100
    tail_lines: int = 100

    def run(self, history: list[Message], replacements: dict[str, str]) -> dict[str, str]:
        """Clipped text for every tool result over the limit that has no replacement yet."""
        new: dict[str, str] = {}
        for message in history:
            if message.role != "user":
                continue
            for block in message.content:
                if (isinstance(block, ToolResultBlock) and block.tool_use_id not in replacements
                        and len(block.content) > self.max_chars and not _clipped_by_tool(block.content,
                                                                                       self.max_chars)):
                    clipped = clip_output(block.content, self.state_dir, self.max_chars, self.head_lines,
                                          self.tail_lines)
                    new[block.tool_use_id] = clipped.text
        return new

    def hard_cut(self, view: list[Message], max_chars: int) -> tuple[list[Message], dict[str, str]]:
        """Cut every tool result in `view` longer than `max_chars` (head and tail kept, the rest behind a
        handle). Returns the new view and the replacements to persist. Long user texts are cut separately by
        `cut_user_texts`, which is deterministic (the handle is a digest of the text) and so is simply
        re-applied on every request with the persisted limit."""
        replacements: dict[str, str] = {}
        for message in view:
            for block in message.content:
                if isinstance(block, ToolResultBlock) and len(block.content) > max_chars:
                    replacements[block.tool_use_id] = clip_output(block.content, self.state_dir, max_chars,
                                                                  HARD_LINES, HARD_LINES).text
        return replace_results(view, replacements), replacements


def _clipped_by_tool(text: str, max_chars: int) -> bool:
    """The shell (and MCP and custom tools) already clip with the same function; their note makes the text a
    little longer than the limit, which must not cause a second clip of a clipped text."""
    return len(text) <= max_chars + max_chars // 10 + 500 and f"Full output: {HANDLE_PREFIX}" in text


#: head and tail lines kept by a hard cut
HARD_LINES = 25


def cut_user_texts(view: list[Message], state_dir: Path, max_chars: int) -> list[Message]:
    """Re-apply the deterministic part of a hard cut (long user texts) to a freshly built view."""
    out: list[Message] = []
    for message in view:
        if message.role == "user" and any(isinstance(b, TextBlock) and len(b.text) > max_chars
                                          for b in message.content):
            out.append(Message(message.role, [
                TextBlock(clip_output(b.text, state_dir, max_chars, HARD_LINES, HARD_LINES).text)
                if isinstance(b, TextBlock) and len(b.text) > max_chars else b for b in message.content]))
        else:
            out.append(message)
    return out
