"""The Anthropic provider (`anthropic:NAME`) on the official SDK.

Streaming with text deltas, tool use (server-defined tool types such as `bash_20250124` for the Claude models
trained on them, plain JSON schemas otherwise), prompt caching (breakpoints placed by coder.models.wire),
extended thinking, and our own retry policy (coder.models.retry) instead of the SDK's, because the SDK cannot
retry a stream that was cut after it started. Cancelling returns at once, even while a read is blocked (the
stream is consumed in a helper thread), with the text shown so far and stop_reason "interrupted". The SDK is
imported when the provider is created, never when coder starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from coder.base.errors import ContextOverflowError, ModelError, ModelRejected
from coder.models.model_table import model_info, unknown_model_note
from coder.models.pricing import PriceTable
from coder.models.request_rules import bind_answer
from coder.models.retry import (
    RetryPolicy,
    TextRelay,
    Transient,
    attempt_stream,
    retry_after_seconds,
    run_with_retries,
)
from coder.models.tool_names import ToolMap
from coder.models.types import (
    Block,
    Message,
    ModelRequest,
    ModelResponse,
    RedactedThinkingBlock,
    ServerToolBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from coder.models.wire import build_anthropic_body, input_tokens

if TYPE_CHECKING:
    from coder.models.registry import ProviderRequest

#: the blocks of the tools the API runs itself that coder declares (web search)
SERVER_BLOCKS = ("server_tool_use", "web_search_tool_result")
#: the SDK's StopReason, less model_context_window_exceeded (max_tokens to us); pause_turn: a long server-tool turn
#: the API paused, continued by the engine (coder/engine/session.py)
_STOP_REASONS = {"end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn"}
_RETRY_STATUS = {408, 409, 429}
_STREAM_ERROR_STATUS = {"overloaded_error": 529, "api_error": 500, "rate_limit_error": 429, "timeout_error": 504}


class AnthropicProvider:
    """ModelProvider for the Anthropic Messages API (or anything that speaks it, like our fake server)."""

    def __init__(self, model: str, *, api_key: str, base_url: str | None = None,
                 policy: RetryPolicy | None = None, count_tokens_api: bool = False,
                 context_window: int = 200_000, pricing: PriceTable | None = None, timeout: float = 600.0) -> None:
        # start-up time: the anthropic SDK loads only when this runs
        import anthropic

        self.model = model
        self.spec = f"anthropic:{model}"
        self.info = model_info(model)
        self.context_window = context_window
        #: an unknown model is named once, on the first answer
        self._noted = self.info.known
        self.policy = policy or RetryPolicy()
        self.count_tokens_api = count_tokens_api
        self.pricing = pricing or PriceTable()
        #: observed API tokens / local estimate, refined after every response (used by count_tokens)
        self.calibration = 1.0
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)

    # ----------------------------------------------------------------------------------------- protocol

    def complete(self, request: ModelRequest, on_text: Callable[[str], None] | None = None,
                 cancel: threading.Event | None = None) -> ModelResponse:
        body = build_anthropic_body(request, self.model)
        relay = TextRelay(on_text)
        response = run_with_retries(
            lambda attempt: self._attempt(body, relay, cancel),
            self.policy, provider="Anthropic", cancel=cancel,
            on_interrupt=lambda: self._response([], "interrupted", Usage(), None),
        )
        self._take_in(response, body, ToolMap.of(request.tools))
        if response.stop_reason != "interrupted" and response.usage.total_input:
            estimate = input_tokens(body)
            if estimate:
                self.calibration = 0.7 * self.calibration + 0.3 * (response.usage.total_input / estimate)
        return response

    def _take_in(self, response: ModelResponse, body: dict[str, Any], names: ToolMap) -> None:
        """The answer in our terms: tools under their real names and inputs, thinking blocks bound to the prefix
        they were made after (coder.models.request_rules), and the one-time note about an unknown model."""
        for block in response.message.content:
            if isinstance(block, ToolUseBlock):
                block.name, block.input = names.original(block.name, block.input)
        bind_answer(body, self.info, response.message, names)
        if not self._noted:
            self._noted = True
            response.notes.append(unknown_model_note(self.model))

    def count_tokens(self, request: ModelRequest) -> int:
        body = build_anthropic_body(request, self.model)
        if self.count_tokens_api:
            # start-up time: the anthropic SDK loads only when this runs
            import anthropic

            params = {k: body[k] for k in ("model", "messages", "system", "tools", "thinking") if k in body}
            try:
                return int(self._client.messages.count_tokens(**params).input_tokens)
            except anthropic.APIError:
                pass  # the estimate below is good enough to budget with
        return round(input_tokens(body) * self.calibration)

    # ------------------------------------------------------------------------------------------ one try

    def _attempt(self, body: dict[str, Any], relay: TextRelay, cancel: threading.Event | None) -> ModelResponse:
        return attempt_stream(lambda holder: self._stream_once(body, relay, cancel, holder), relay, cancel,
                              lambda text: self._response([TextBlock(text)] if text else [], "interrupted",
                                                          Usage(), None))

    def _stream_once(self, body: dict[str, Any], relay: TextRelay, cancel: threading.Event | None,
                     holder: dict[str, Any]) -> ModelResponse:
        # start-up time: the anthropic SDK loads only when this runs
        import anthropic
        import httpx2

        finished: set[int] = set()
        stream = None
        params = sdk_params(body)
        try:
            with self._client.messages.stream(**params) as stream:
                holder["stream"] = stream
                stopped = False
                for event in stream:
                    if cancel is not None and cancel.is_set():
                        break
                    if event.type == "text":
                        relay(event.text)
                    elif event.type == "content_block_stop":
                        finished.add(event.index)
                    elif event.type == "message_stop":
                        stopped = True
                if cancel is not None and cancel.is_set():
                    return self._partial(stream, finished)
                if not stopped:
                    raise Transient(0, "the response stream ended before message_stop (cut mid-way)")
                message = stream.get_final_message()
        except anthropic.APIStatusError as exc:
            raise self._classify(exc) from exc
        except (anthropic.APIConnectionError, httpx2.TransportError, httpx2.StreamError) as exc:
            if cancel is not None and cancel.is_set():
                return self._partial(stream, finished)
            raise Transient(0, f"connection problem ({type(exc).__name__}: {exc})") from exc
        blocks = _blocks(message.content)
        # max_tokens stays max_tokens even with a (truncated) tool call, so the engine never runs half an input
        stop = message.stop_reason if message.stop_reason in _STOP_REASONS else "end_turn"
        if message.stop_reason == "model_context_window_exceeded":
            stop = "max_tokens"
        elif stop == "end_turn" and any(isinstance(b, ToolUseBlock) for b in blocks):
            stop = "tool_use"
        u = message.usage
        usage = Usage(u.input_tokens or 0, u.output_tokens or 0, u.cache_read_input_tokens or 0,
                      u.cache_creation_input_tokens or 0)
        return self._response(blocks, stop, usage, stream.request_id if stream is not None else None)

    def _partial(self, stream: Any, finished: set[int]) -> ModelResponse:
        """What an interrupted stream produced: text so far and only the blocks that completed (a half-received
        tool call or an unsigned thinking block must not enter the history)."""
        blocks: list[Block] = []
        snapshot = None
        try:
            snapshot = stream.current_message_snapshot if stream is not None else None
        except AssertionError:
            snapshot = None
        if snapshot is not None:
            for index, raw in enumerate(snapshot.content):
                if raw.type == "text" and raw.text:
                    blocks.append(TextBlock(raw.text))
                elif index in finished:
                    blocks.extend(_blocks([raw]))
        return self._response(blocks, "interrupted", Usage(), None)

    def _response(self, blocks: list[Block], stop: str, usage: Usage, request_id: str | None) -> ModelResponse:
        cost = self.pricing.cost(self.model, usage)
        return ModelResponse(Message("assistant", blocks), stop, usage, self.model,  # type: ignore[arg-type]
                             cost.usd, request_id, cost.known)

    def _classify(self, exc: Any) -> Exception:
        status = int(getattr(exc, "status_code", 0) or 0)
        body = getattr(exc, "body", None)
        body = body if isinstance(body, dict) else {}
        error = body.get("error")
        error = error if isinstance(error, dict) else {}
        kind = str(error.get("type") or "")
        text = str(error.get("message") or getattr(exc, "message", "") or exc)
        if status == 200 and kind in _STREAM_ERROR_STATUS:  # an `error` event inside a stream
            status = _STREAM_ERROR_STATUS[kind]
        if (status == 400 and "prompt is too long" in text.lower()) or status == 413:
            return ContextOverflowError(
                f"The request no longer fits the context window of {self.model} (the API said: {text}). "
                "Compact the conversation or start a new session."
            )
        if status in _RETRY_STATUS or status >= 500:
            return Transient(status, f"{kind or 'error'}: {text}", retry_after_seconds(exc))
        if status == 401:
            return ModelRejected("The Anthropic API rejected the credentials (HTTP 401). Check ANTHROPIC_API_KEY "
                                 "(`coder doctor` shows whether it is set) and the base URL.")
        if status == 404:
            return ModelRejected(f"The Anthropic API does not know the model {self.model!r} (HTTP 404: {text}). "
                                 "Pick another with `--model anthropic:NAME`.")
        return ModelError(f"The Anthropic API refused the request (HTTP {status} {kind}: {text}). Retrying will "
                          "not help; if the message points at the request itself, please report it.")


def _blocks(content: Any) -> list[Block]:
    out: list[Block] = []
    for raw in content:
        if raw.type == "text":
            out.append(TextBlock(raw.text))
        elif raw.type == "thinking":
            out.append(ThinkingBlock(raw.thinking, raw.signature or ""))
        elif raw.type == "redacted_thinking":
            out.append(RedactedThinkingBlock(raw.data))
        elif raw.type == "tool_use":
            out.append(ToolUseBlock(raw.id, raw.name, dict(raw.input) if isinstance(raw.input, dict) else {}))
        elif raw.type in SERVER_BLOCKS:  # web search (issue 35): goes back as it came
            out.append(ServerToolBlock(raw.model_dump(mode="json", exclude_none=True)))
    return out


#: body keys the installed SDK's `messages.stream` may not take as arguments; they travel in `extra_body`
_EXTRA_BODY_KEYS = ("temperature", "top_p", "top_k")


def sdk_params(body: dict[str, Any]) -> dict[str, Any]:
    """The request body as `messages.stream` keyword arguments (sampling settings through `extra_body`, which
    every SDK version accepts, since newer ones dropped them from the signature)."""
    params = {k: v for k, v in body.items() if k not in _EXTRA_BODY_KEYS}
    extra = {k: body[k] for k in _EXTRA_BODY_KEYS if k in body}
    if extra:
        params["extra_body"] = {**params.get("extra_body", {}), **extra}
    return params


def build(request: ProviderRequest) -> AnthropicProvider:
    """The registry's constructor (coder/models/providers.py): `[providers.anthropic]` and the environment."""
    section = request.section
    base_url = request.base_url("ANTHROPIC_BASE_URL")
    key = request.api_key("ANTHROPIC_API_KEY", base_url, (
        f"The model {request.resolved} needs ANTHROPIC_API_KEY (not set). Set it, or pick another model with "
        "`--model` (e.g. openai:NAME with OPENAI_BASE_URL, scripted:PATH); `coder doctor` shows what is set."))
    return AnthropicProvider(
        request.name, api_key=key, base_url=base_url, policy=request.retry_policy(), pricing=request.pricing,
        timeout=section.timeout, count_tokens_api=section.count_tokens_api, context_window=request.context_window(),
    )
