"""The scripted provider (`--model scripted:PATH`): a script's turns answered in-process.

It follows the fake server exactly (same cursor, same token arithmetic, same cache emulation, thinking only
when the request asks for it), so a script run in-process and the same script over HTTP through the real
Anthropic SDK produce the same conversation and the same usage. Used for tests, the offline demo, replays.

A resumed session starts a new process with a fresh provider but an existing history, so on its first
main-sequence request the provider skips one turn per assistant message already in the history: the script
goes on where the session stopped, as the long-lived fake server naturally does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coder.models.pricing import PriceTable
from coder.models.script import Script, ScriptCursor, anthropic_match_text, load_script
from coder.models.types import (
    Block,
    Message,
    ModelRequest,
    ModelResponse,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from coder.models.wire import (
    PrefixCache,
    build_anthropic_body,
    chunk_text,
    input_tokens,
    output_tokens,
    segments,
    signature_for,
)

if TYPE_CHECKING:
    from coder.models.registry import ProviderRequest

DEFAULT_CONTEXT_WINDOW = 200_000
#: requests are shaped and counted as for this Claude model (server tool types included), so the usage of a
#: scripted run equals what the fake server reports to `anthropic:claude-...` for the same conversation
SHAPE_MODEL = "claude-sonnet-4-6"


class ScriptedProvider:
    """ModelProvider over a script file or dict."""

    def __init__(self, script: str | Path | dict[str, Any] | Script, *, context_window: int = DEFAULT_CONTEXT_WINDOW,
                 pricing: PriceTable | None = None, price_as: str | None = None,
                 chunk_delay: float = 0.0) -> None:
        self.script = script if isinstance(script, Script) else load_script(script)
        self.spec = f"scripted:{self.script.source}"
        self.context_window = context_window
        self.cursor = ScriptCursor(self.script)
        self._cache = PrefixCache()
        self._pricing = pricing or PriceTable()
        #: price the usage as this model would cost (for "what would this run cost" measurements)
        self._price_as = price_as
        #: pause between streamed chunks (demo pacing; lets tests interrupt mid-stream); a cancel ends it at once
        self._chunk_delay = chunk_delay
        self._resume_checked = False

    def complete(self, request: ModelRequest, on_text: Callable[[str], None] | None = None,
                 cancel: threading.Event | None = None) -> ModelResponse:
        body = build_anthropic_body(request, self._price_as or SHAPE_MODEL)
        if cancel is not None and cancel.is_set():
            return self._interrupted([])
        system, last_user = anthropic_match_text(body)
        if not self._resume_checked and self.cursor.next(system, last_user, advance=False).turn.when is None:
            self._resume_checked = True
            self.cursor.skip(sum(1 for m in request.messages if m.role == "assistant"))
        answer = self.cursor.next(system, last_user)
        turn = answer.turn
        # thinking exactly when the request turns it on (not inside a loop started without it: request_rules)
        thinking = turn.thinking if (body.get("thinking") or {}).get("type") in ("enabled", "adaptive") else ""
        blocks: list[Block] = []
        if thinking:
            blocks.append(ThinkingBlock(thinking, signature_for(thinking)))
        if turn.text:
            shown = ""
            for number, piece in enumerate(chunk_text(turn.text)):
                if number and self._chunk_delay:
                    if cancel is None:
                        time.sleep(self._chunk_delay)
                    else:
                        cancel.wait(self._chunk_delay)
                if cancel is not None and cancel.is_set():
                    if shown:
                        blocks.append(TextBlock(shown))
                    return self._interrupted(blocks)
                shown += piece
                if on_text is not None:
                    on_text(piece)
            blocks.append(TextBlock(turn.text))
        if cancel is not None and cancel.is_set():
            return self._interrupted(blocks)
        calls = []
        for call, call_id in zip(turn.tool_calls, answer.tool_ids, strict=True):
            blocks.append(ToolUseBlock(call_id, call.name, dict(call.input)))
            calls.append({"name": call.name, "input": call.input})
        cached = self._cache.account(segments(body))
        usage = Usage(cached.input_tokens, output_tokens(turn.text, thinking, calls), cached.cache_read_tokens,
                      cached.cache_write_tokens)
        price_model = self._price_as or self.spec
        cost = self._pricing.cost(price_model, usage)
        return ModelResponse(Message("assistant", blocks), turn.final_stop_reason, usage,  # type: ignore[arg-type]
                             "scripted", cost.usd, f"scripted-{answer.index:06d}", cost.known)

    def count_tokens(self, request: ModelRequest) -> int:
        return input_tokens(build_anthropic_body(request, self._price_as or SHAPE_MODEL))

    def _interrupted(self, blocks: list[Block]) -> ModelResponse:
        return ModelResponse(Message("assistant", blocks), "interrupted", Usage(), "scripted", 0.0, None, True)


def build(request: ProviderRequest) -> ScriptedProvider:
    """The registry's constructor (coder/models/providers.py): the model name is the script's path."""
    section = request.section
    return ScriptedProvider(request.name, context_window=request.context_window(), pricing=request.pricing,
                            price_as=section.price_as, chunk_delay=section.chunk_delay)
