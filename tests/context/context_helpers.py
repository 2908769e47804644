"""Helpers for the context tests (imported as `context_helpers`): build histories the way the engine records
them."""

from __future__ import annotations

import itertools
from typing import Any

from coder.models.types import Message, TextBlock, ToolResultBlock, ToolUseBlock

EDITOR = "str_replace_based_edit_tool"


class HistoryBuilder:
    """Appends turns: one assistant message with tool calls, then one user message with their results."""

    def __init__(self, task: str = "Fix the failing test in src/app.py") -> None:
        self.messages: list[Message] = [Message.user_text(task)]
        self._ids = itertools.count(1)

    def turn(self, *calls: tuple[str, dict[str, Any], str], text: str = "Next step.",
             errors: tuple[bool, ...] = ()) -> list[str]:
        """calls: (tool name, input, output). Returns the tool_use ids."""
        ids = [f"toolu_{next(self._ids):04d}" for _ in calls]
        blocks: list[Any] = [TextBlock(text)]
        blocks += [ToolUseBlock(i, name, args) for i, (name, args, _) in zip(ids, calls, strict=True)]
        self.messages.append(Message("assistant", blocks))
        self.messages.append(Message("user", [
            ToolResultBlock(i, out, errors[n] if n < len(errors) else False)
            for n, (i, (_, _, out)) in enumerate(zip(ids, calls, strict=True))]))
        return ids

    def bash(self, command: str, output: str, exit_code: int = 0, text: str = "Next step.") -> str:
        return self.turn(("bash", {"command": command}, f"{output}\n[exit {exit_code}]"), text=text)[0]

    def view(self, path: str, content: str) -> str:
        return self.turn((EDITOR, {"command": "view", "path": path}, content))[0]

    def edit(self, path: str, old: str, new: str) -> str:
        return self.turn((EDITOR, {"command": "str_replace", "path": path, "old_str": old, "new_str": new},
                          f"The file {path} has been edited."))[0]

    def user(self, text: str) -> None:
        """A user message between turns: the model answered in text, then the user wrote."""
        self.messages.append(Message("assistant", [TextBlock("Done for now.")]))
        self.messages.append(Message.user_text(text))


def result_of(messages: list[Message], tool_use_id: str) -> str:
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolResultBlock) and block.tool_use_id == tool_use_id:
                return block.content
    raise KeyError(tool_use_id)


def lines(n: int, prefix: str = "line") -> str:
    return "\n".join(f"{prefix} {i:05d} " + "x" * 40 for i in range(1, n + 1))
