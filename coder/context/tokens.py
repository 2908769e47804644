"""Token accounting: a fast local estimate, calibrated against what the provider reports.

Counting every request exactly would cost a network round trip per turn (Anthropic's count endpoint) or is not
possible at all (no public Claude tokenizer). The manager therefore estimates locally from characters and keeps a
scale factor learnt from real counts: the `usage` of answered requests and the provider's counter, which the
manager asks only when a decision (compact or not) hangs on the number. Estimates err on the high side so a
request judged to fit does fit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from coder.models.images import image_tokens
from coder.models.types import (
    ImageBlock,
    Message,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)

#: per-message and per-block framing the API adds (role markers, block headers); measured order of magnitude
MESSAGE_OVERHEAD = 4
BLOCK_OVERHEAD = 3
TOOL_OVERHEAD = 12


@dataclass
class TokenEstimator:
    """chars / `chars_per_token`, times a learnt `scale` (clamped to [0.5, 2.5])."""

    chars_per_token: float = 3.5
    scale: float = 1.0
    #: weight of a new observation in the moving average of actual/estimated
    alpha: float = 0.3
    samples: int = 0
    history: list[tuple[int, int]] = field(default_factory=list)

    def _raw_text(self, text: str) -> float:
        return len(text) / self.chars_per_token

    def text(self, text: str) -> int:
        return int(self._raw_text(text) * self.scale) + 1

    def _raw_block(self, block: object) -> float:
        if isinstance(block, TextBlock):
            return BLOCK_OVERHEAD + self._raw_text(block.text)
        if isinstance(block, ToolResultBlock):
            return BLOCK_OVERHEAD + 6 + self._raw_text(block.content) + sum(self._raw_block(i) for i in block.images)
        if isinstance(block, ServerToolBlock):
            return BLOCK_OVERHEAD + self._raw_text(json.dumps(block.data, ensure_ascii=False))
        if isinstance(block, ImageBlock):  # the documented price, already in tokens: the scale undoes itself
            return BLOCK_OVERHEAD + image_tokens(block.width, block.height) / max(self.scale, 0.5)
        if isinstance(block, ToolUseBlock):
            return BLOCK_OVERHEAD + 8 + self._raw_text(block.name) + self._raw_text(
                json.dumps(block.input, ensure_ascii=False))
        if isinstance(block, ThinkingBlock):
            return BLOCK_OVERHEAD + self._raw_text(block.thinking)
        return BLOCK_OVERHEAD

    def _raw_message(self, message: Message) -> float:
        return MESSAGE_OVERHEAD + sum(self._raw_block(b) for b in message.content)

    def message(self, message: Message) -> int:
        return int(self._raw_message(message) * self.scale) + 1

    def messages(self, messages: list[Message]) -> int:
        return int(sum(self._raw_message(m) for m in messages) * self.scale) + 1

    def _raw_tools(self, tools: list[ToolSpec]) -> float:
        total = 0.0
        for tool in tools:
            total += TOOL_OVERHEAD + self._raw_text(tool.name) + self._raw_text(tool.description)
            total += self._raw_text(json.dumps(tool.input_schema, ensure_ascii=False))
        return total

    def request(self, system: str, messages: list[Message], tools: list[ToolSpec]) -> int:
        """A deferred tool is not in the prompt until a tool result loads it, and then it counts there."""
        deferred = {t.name: t for t in tools if t.deferred}
        loaded = [deferred[n] for m in messages for b in m.content if isinstance(b, ToolResultBlock)
                  for n in b.tool_references if n in deferred]
        raw = (self._raw_text(system) + self._raw_tools([t for t in tools if not t.deferred] + loaded)
               + sum(self._raw_message(m) for m in messages))
        return int(raw * self.scale) + 1

    def calibrate(self, estimated: int, actual: int) -> None:
        """Learn from one exact count of a request we estimated at `estimated` tokens."""
        if estimated <= 0 or actual <= 0:
            return
        ratio = actual / (estimated / self.scale)  # ratio against the unscaled estimate
        ratio = min(2.5, max(0.5, ratio))
        self.scale = ratio if self.samples == 0 else (1 - self.alpha) * self.scale + self.alpha * ratio
        self.samples += 1
        self.history.append((estimated, actual))
        del self.history[:-20]
