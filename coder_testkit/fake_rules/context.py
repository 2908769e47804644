"""What a Messages API rule looks at: the body, the model's facts, the endpoint and headers, and the blocks of the
conversation with the paths the API names them by (`messages.2.content.0`, and `messages.2.content.0.tool_result.
content.1` for a block inside a tool result, as the real error messages write them)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from coder_testkit.fake_rules.book import Found
from coder_testkit.fake_rules.facts import ModelFacts, facts_for


@dataclass(frozen=True)
class Block:
    """One content block of the conversation (or of the system prompt)."""

    path: str  # where the API's messages say it is
    message: int  # index of its message; -1 for the system prompt
    role: str  # "user", "assistant" or "system"
    block: dict[str, Any]
    in_tool_result: bool = False

    @property
    def type(self) -> str:
        return str(self.block.get("type"))

    def at(self, *parts: str) -> str:
        """The path of a field of the block, tagged with the block type as the API's schema errors are
        (`messages.0.content.1.image.source.base64.media_type`)."""
        return ".".join((self.path, self.type) + parts)


@dataclass
class MessagesCall:
    """One request to POST /v1/messages or /v1/messages/count_tokens."""

    body: dict[str, Any]
    count_tokens: bool = False
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names

    @cached_property
    def facts(self) -> ModelFacts:
        model = self.body.get("model")
        return facts_for(model if isinstance(model, str) else "")

    @property
    def model(self) -> str:
        return str(self.body.get("model"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The messages (a list of objects with a role and content: the shape rules have run first)."""
        messages = self.body.get("messages")
        return messages if isinstance(messages, list) else []

    @cached_property
    def betas(self) -> set[str]:
        return {b.strip() for b in self.headers.get("anthropic-beta", "").split(",") if b.strip()}

    @cached_property
    def blocks(self) -> list[Block]:
        """Every content block of the messages in order, a tool result's own blocks right after it."""
        out: list[Block] = []
        for i, message in enumerate(self.messages):
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            for j, block in enumerate(content if isinstance(content, list) else []):
                if not isinstance(block, dict):
                    continue
                here = Block(f"messages.{i}.content.{j}", i, str(message.get("role")), block)
                out.append(here)
                inner = block.get("content") if block.get("type") == "tool_result" else None
                for k, sub in enumerate(inner if isinstance(inner, list) else []):
                    if isinstance(sub, dict):
                        out.append(Block(f"{here.path}.tool_result.content.{k}", i, here.role, sub, True))
        return out

    @cached_property
    def system_blocks(self) -> list[Block]:
        system = self.body.get("system")
        return [Block(f"system.{i}", -1, "system", b) for i, b in enumerate(system if isinstance(system, list) else [])
                if isinstance(b, dict)]

    def of_type(self, *types: str) -> list[Block]:
        return [b for b in self.blocks if b.type in types]

    @property
    def thinking_type(self) -> str | None:
        thinking = self.body.get("thinking")
        return thinking.get("type") if isinstance(thinking, dict) else None

    @property
    def effort(self) -> Any:
        output = self.body.get("output_config")
        return output.get("effort") if isinstance(output, dict) else None

    @property
    def thinking_active(self) -> bool:
        """Whether the model thinks up front on this request: asked for, or on by default (the 5.x pages:
        "requests without a thinking field run with adaptive thinking"). between_tools has no up-front thinking."""
        kind = self.thinking_type
        if kind is None:
            return self.facts.thinks_by_default
        return kind in ("enabled", "adaptive")


def group_by_turn(messages: list[dict[str, Any]]) -> list[tuple[int, str, list[Any]]]:
    """[release notes] consecutive messages of one role are merged into one turn: (index of its first message,
    role, blocks)."""
    out: list[tuple[int, str, list[Any]]] = []
    for i, message in enumerate(messages):
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if out and out[-1][1] == message["role"]:
            out[-1][2].extend(blocks)
        else:
            out.append((i, message["role"], blocks))
    return out


def first_found(blocks: Iterable[Block], broken: Callable[[Block], Found]) -> Found:
    """The fields of the first block `broken` finds fault with, else None."""
    for block in blocks:
        fields = broken(block)
        if fields is not None:
            return fields
    return None
