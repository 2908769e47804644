"""Provider-neutral conversation data: what the engine, the context manager and every provider share.

The shapes follow the Anthropic Messages API (content blocks, tool_use / tool_result) because it is the richest;
the OpenAI-compatible provider converts at its edge. Everything here is plain data and serialises with
`to_dict` / `from_dict` so the store can persist it and a resumed session can rebuild it exactly (each block
type is told apart by its `type`; keys a newer coder added are left out: `__unknown_keys__`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, Union

from coder.base.schema import parse

Role = Literal["user", "assistant"]


class Stored:
    """Data read back from the store: keys a newer coder added are left out, not refused (coder/base/schema.py)."""

    __unknown_keys__ = "ignore"


@dataclass
class TextBlock(Stored):
    text: str
    type: Literal["text"] = "text"


@dataclass
class ThinkingBlock(Stored):
    thinking: str
    signature: str = ""
    type: Literal["thinking"] = "thinking"
    #: never sent: "MODEL-FAMILY:PREFIX-DIGEST" of the request that produced the block, so a model with preserved
    #: thinking gets it back only while everything before it is unchanged (coder.models.request_rules)
    bound: str = ""


@dataclass
class RedactedThinkingBlock(Stored):
    """Thinking the API returned encrypted; it must go back unchanged with the rest of the turn."""

    data: str
    type: Literal["redacted_thinking"] = "redacted_thinking"
    bound: str = ""  # as ThinkingBlock.bound


@dataclass
class ToolUseBlock(Stored):
    id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_use"] = "tool_use"


@dataclass
class ImageBlock(Stored):
    """An image the model sees (issue 35), already within the API's limits (coder/models/images.py prepares it).

    `name` says what it was (a path, "clipboard", "mcp tool X"): the chip a frontend shows and the note compaction
    leaves when it drops the image; it is never sent. `width` and `height` price it (tokens = w*h/750)."""

    media_type: str
    data: str  # base64
    name: str = ""
    width: int = 0
    height: int = 0
    type: Literal["image"] = "image"

    def label(self) -> str:
        """`shot.png 1200x800, 210 KB`: what a chip and a compaction note say."""
        size = len(self.data) * 3 // 4
        kb = f"{size / 1024:.0f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"
        return f"{self.name or 'image'} {self.width}x{self.height}, {kb}"


@dataclass
class ServerToolBlock(Stored):
    """A block of a tool the API runs itself (issue 35: web search's `server_tool_use` and
    `web_search_tool_result`), kept as the API sent it and sent back unchanged with the rest of the turn; only the
    Anthropic route has them (others leave them out)."""

    data: dict[str, Any]
    type: Literal["server_tool"] = "server_tool"


@dataclass
class ToolResultBlock(Stored):
    tool_use_id: str
    content: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"
    #: deferred tools this result loads (the tool-search tool's answer): the Anthropic route sends them as
    #: `tool_reference` blocks the API expands in place; other routes append their definitions to the tool list
    tool_references: list[str] = field(default_factory=list)
    #: images the tool returned (a `view` of a PNG, an MCP image), sent after the text
    images: list[ImageBlock] = field(default_factory=list)


Block = Union[TextBlock, ThinkingBlock, ToolUseBlock, ToolResultBlock, RedactedThinkingBlock, ImageBlock,
              ServerToolBlock]

def _block_dict(block: Block) -> dict[str, Any]:
    data = asdict(block)
    if not data.get("bound", True):
        del data["bound"]  # only thinking blocks of preserved-thinking models carry one
    if "tool_references" in data and not data["tool_references"]:
        del data["tool_references"]  # only the tool-search tool's results load tools
    if "images" in data and not data["images"]:
        del data["images"]
    return data


@dataclass
class Message(Stored):
    role: Role
    content: list[Block]

    @classmethod
    def user_text(cls, text: str) -> Message:
        return cls("user", [TextBlock(text)])

    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": [_block_dict(b) for b in self.content]}

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "a stored message") -> Message:
        """A message as `to_dict` wrote it, read through the schema layer (each block by its `type`)."""
        return parse(cls, data, where)


def loaded_tools(messages: list[Message]) -> list[str]:
    """The deferred tools the conversation loaded (every tool search's result), in the order they were first
    loaded: what the request builders declare loaded and what the engine lets the model call."""
    names: dict[str, None] = {}
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                names.update(dict.fromkeys(block.tool_references))
    return list(names)


@dataclass
class ToolSpec:
    """What a provider needs to declare one tool to the model."""

    name: str
    description: str
    input_schema: dict[str, Any]
    # Anthropic server-defined tool type the model was trained on (e.g. "bash_20250124"); None = plain schema.
    anthropic_type: str | None = None
    #: loaded on demand (coder/tools/tool_search_tool.py): not in the model's context until a tool result
    #: references it, so a session's many rarely used tools cost nothing per request (and the prefix stays cached)
    deferred: bool = False
    #: fields a server tool's declaration carries besides type and name (web search: max_uses, allowed_domains)
    server_params: dict[str, Any] = field(default_factory=dict)


@dataclass
class Usage:
    input_tokens: int = 0  # uncached input
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_input(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )


@dataclass
class ModelRequest:
    """One request, already shaped by the context manager.

    `cache_breakpoints` holds indexes into `messages` after which a cache_control breakpoint goes (the provider
    also always marks the end of the system prompt + tools when `cache_system` is true).
    """

    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int = 8192
    cache_system: bool = True
    cache_breakpoints: list[int] = field(default_factory=list)
    thinking_budget: int | None = None
    temperature: float | None = None


#: `pause_turn`: the API paused a long server-tool turn (web search); the engine sends the paused answer back as the
#: last message and the API resumes the same turn (platform.claude.com/docs/en/agents-and-tools/tool-use/server-tools)
StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "interrupted", "pause_turn"]


@dataclass
class ModelResponse:
    message: Message  # role == "assistant"
    stop_reason: StopReason
    usage: Usage
    model: str
    cost_usd: float = 0.0
    request_id: str | None = None
    #: False when the model is not in the pricing table (cost_usd is then 0): the UI says "cost unknown"
    cost_known: bool = True
    #: things the session shows the user once (e.g. "this model is not in the model table")
    notes: list[str] = field(default_factory=list)


class ModelProvider(Protocol):
    """One protocol, several providers (anthropic, openai-compatible, scripted)."""

    #: "provider:model", e.g. "anthropic:claude-sonnet-4-6"
    spec: str
    #: context window in tokens
    context_window: int

    def complete(
        self,
        request: ModelRequest,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelResponse:
        """Stream one answer, calling `on_text` with text deltas; stop early (stop_reason "interrupted") when
        `cancel` is set. Retries transient failures itself; raises ModelError when it gives up and
        ContextOverflowError when the request is too long for the model."""
        ...

    def count_tokens(self, request: ModelRequest) -> int:
        """Input tokens of `request` (the provider's counter where cheap, a calibrated estimate otherwise)."""
        ...
