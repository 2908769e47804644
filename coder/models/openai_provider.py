"""The OpenAI-compatible provider (`openai:NAME`) on the official `openai` SDK: chat completions with tools
and streaming against any base URL (OpenAI, vLLM, Ollama, llama.cpp server, LM Studio). This is how local and
small models plug in.

Conversation blocks are converted at this edge only: tool results become `tool` messages placed right after
the assistant message that called them, thinking blocks are dropped (no portable way to send them back), and
tool calls whose arguments are not valid JSON keep the raw text under `_invalid_json` so the tool layer can
answer with an error the model reads, instead of the session crashing.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from coder.base.errors import ContextOverflowError, ModelError, ModelRejected
from coder.models.images import max_images, within_limits
from coder.models.model_table import (
    OPENAI_REASONING,
    OPENAI_TOOLS_WITHOUT_REASONING,
    bare_name,
    model_info,
    unknown_model_note,
)
from coder.models.pricing import PriceTable
from coder.models.retry import (
    RetryPolicy,
    TextRelay,
    Transient,
    attempt_stream,
    retry_after_seconds,
    run_with_retries,
)
from coder.models.server_blocks import as_text
from coder.models.tool_loading import declare
from coder.models.tool_names import ToolMap
from coder.models.types import (
    Block,
    ImageBlock,
    Message,
    ModelRequest,
    ModelResponse,
    ServerToolBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from coder.models.wire import chat_item_tokens

if TYPE_CHECKING:
    from coder.models.registry import ProviderRequest

#: images a request may hold: the images-vision guide said 500 until its 2026 revision (now 1500); the lower
#: figure holds against either
MAX_IMAGES = 500
_FINISH = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens",
           "content_filter": "refusal"}
_OVERFLOW_MARKERS = ("context_length_exceeded", "maximum context length", "context length", "too many tokens",
                     "exceeds the context", "prompt is too long")


def to_openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Our provider-neutral history as chat-completions messages (blank text counts as none)."""
    names = ToolMap.of(request.tools)
    out: list[dict[str, Any]] = []
    if request.system.strip():
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        if message.role == "assistant":  # server tool blocks (web search on Anthropic, then /model) as text
            text = "".join(b.text if isinstance(b, TextBlock) else as_text(b.data) + "\n" for b in message.content
                           if isinstance(b, (TextBlock, ServerToolBlock)))
            text = text if text.strip() else ""
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            calls = [{"id": b.id, "type": "function",
                      "function": {"name": names.api_name(b.name),
                                   "arguments": json.dumps(names.api_input(b.name, b.input), ensure_ascii=False)}}
                     for b in message.content if isinstance(b, ToolUseBlock)]
            if calls:
                entry["tool_calls"] = calls
            if text or calls:
                out.append(entry)
            continue
        # user: tool results first (they must follow the assistant's tool calls directly), then any text; a tool
        # message holds text only ([chat]), so a result's images follow in the user message, named by call
        parts: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                content = ("[tool error] " + block.content) if block.is_error else block.content
                out.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": content})
                if block.images:
                    parts.append({"type": "text", "text": f"[images returned by tool call {block.tool_use_id}]"})
                    parts.extend(_image_part(i) for i in block.images)
        for block in message.content:
            if isinstance(block, TextBlock) and block.text.strip():
                parts.append({"type": "text", "text": block.text})
            elif isinstance(block, ImageBlock):
                parts.append(_image_part(block))
        if parts and all(p["type"] == "text" for p in parts):
            out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
        elif parts:
            out.append({"role": "user", "content": parts})
    return out


def _image_part(image: ImageBlock) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}


def to_openai_tools(request: ModelRequest) -> list[dict[str, Any]]:
    """Tools under names and schemas the API accepts (coder.models.tool_names). Chat completions has no deferred
    loading: a deferred tool is sent once the history loaded it, appended after the others in the order of the
    loads (coder.models.tool_loading)."""
    names = ToolMap.of(request.tools)
    chosen = declare(request.tools, request.messages, defer=False).specs
    return [{"type": "function", "function": {"name": names.api_name(t.name), "description": t.description,
                                              "parameters": names.api_schema(t)}} for t in chosen]


class OpenAIProvider:
    """ModelProvider for OpenAI-compatible chat-completions endpoints."""

    def __init__(self, model: str, *, api_key: str, base_url: str | None = None,
                 policy: RetryPolicy | None = None, context_window: int = 32_768,
                 pricing: PriceTable | None = None, timeout: float = 600.0) -> None:
        # start-up time: the openai SDK loads only when this runs
        import openai

        self.model = model
        self.spec = f"openai:{model}"
        self.info = model_info(model)
        self._noted = self.info.known
        self.context_window = context_window
        self.policy = policy or RetryPolicy()
        self.pricing = pricing or PriceTable()
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)
        #: ask for usage in the stream; switched off for servers that reject `stream_options`
        self._include_usage = True

    def _body(self, request: ModelRequest) -> dict[str, Any]:
        token_param = self.info.token_param if self.info.known else (
            "max_completion_tokens" if OPENAI_REASONING.match(bare_name(self.model)) else "max_tokens")
        limit = min(max_images(self.context_window), MAX_IMAGES)
        fitted = replace(request, messages=within_limits(request.messages, limit, self.info.vision))
        body: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(fitted),
                                token_param: max(1, min(request.max_tokens, self.info.max_output))}
        tools = to_openai_tools(request)
        if tools:
            body["tools"] = tools
            effort = self.info.effort_with_tools if self.info.known else (
                "none" if OPENAI_TOOLS_WITHOUT_REASONING.match(bare_name(self.model)) else None)
            if effort:  # GPT-5.6 takes function tools only with reasoning_effort "none"
                body["reasoning_effort"] = effort
        if request.temperature is not None and self.info.sampling:  # reasoning models: only the default
            body["temperature"] = request.temperature
        return body

    def complete(self, request: ModelRequest, on_text: Callable[[str], None] | None = None,
                 cancel: threading.Event | None = None) -> ModelResponse:
        body = self._body(request)
        relay = TextRelay(on_text)
        response = run_with_retries(
            lambda attempt: self._attempt(body, relay, cancel), self.policy, provider="OpenAI", cancel=cancel,
            on_interrupt=lambda: self._response([], "interrupted", Usage(), None),
            hint="For a local server, check that it is running and that OPENAI_BASE_URL points at it.",
        )
        names = ToolMap.of(request.tools)
        for block in response.message.content:
            if isinstance(block, ToolUseBlock):  # the tool's real name and input (coder.models.tool_names)
                block.name, block.input = names.original(block.name, block.input)
        if not self._noted:
            self._noted = True
            response.notes.append(unknown_model_note(self.model))
        return response

    def count_tokens(self, request: ModelRequest) -> int:
        body = self._body(request)
        return sum(chat_item_tokens(x) for x in (body.get("tools") or []) + body["messages"])

    def _attempt(self, body: dict[str, Any], relay: TextRelay, cancel: threading.Event | None) -> ModelResponse:
        return attempt_stream(lambda holder: self._stream_once(body, relay, cancel, holder), relay, cancel,
                              lambda text: self._response([TextBlock(text)] if text else [], "interrupted",
                                                          Usage(), None))

    def _stream_once(self, body: dict[str, Any], relay: TextRelay, cancel: threading.Event | None,
                     holder: dict[str, Any]) -> ModelResponse:
        # start-up time: httpx2 loads only when this runs
        import httpx2
        import openai

        text = ""
        calls: dict[int, dict[str, str]] = {}
        finish: str | None = None
        usage_raw: Any = None
        request_id = None
        extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if self._include_usage else {}
        try:
            stream = self._client.chat.completions.create(**body, stream=True, **extra)
            holder["stream"] = stream
            request_id = getattr(stream.response, "headers", {}).get("x-request-id")
            for chunk in stream:
                if cancel is not None and cancel.is_set():
                    break
                if getattr(chunk, "usage", None) is not None:
                    usage_raw = chunk.usage
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta is not None and delta.content:
                        text += delta.content
                        relay(delta.content)
                    for call in (delta.tool_calls or []) if delta is not None else []:
                        slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                        if call.id:
                            slot["id"] = call.id
                        if call.function is not None:
                            slot["name"] += call.function.name or ""
                            slot["arguments"] += call.function.arguments or ""
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except openai.APIStatusError as exc:
            if exc.status_code == 400 and "stream_options" in str(exc) and self._include_usage:
                self._include_usage = False  # an older local server: retry at once without it
                raise Transient(400, "the server does not accept stream_options", retry_after=0) from exc
            raise self._classify(exc) from exc
        except (openai.APIConnectionError, httpx2.TransportError, httpx2.StreamError) as exc:
            if cancel is not None and cancel.is_set():
                return self._response([TextBlock(text)] if text else [], "interrupted", Usage(), request_id)
            raise Transient(0, f"connection problem ({type(exc).__name__}: {exc})") from exc
        except openai.APIError as exc:  # an error object inside the stream (e.g. the server overloaded)
            raise Transient(0, f"the server reported an error mid-stream: {exc.message}") from exc
        if cancel is not None and cancel.is_set():
            return self._response([TextBlock(text)] if text else [], "interrupted", Usage(), request_id)
        if finish is None:
            raise Transient(0, "the response stream ended before a finish_reason (cut mid-way)")
        blocks: list[Block] = [TextBlock(text)] if text else []
        for index in sorted(calls):
            slot = calls[index]
            try:
                args = json.loads(slot["arguments"] or "{}")
                if not isinstance(args, dict):
                    args = {"_invalid_json": slot["arguments"]}
            except json.JSONDecodeError:
                args = {"_invalid_json": slot["arguments"]}
            blocks.append(ToolUseBlock(slot["id"] or f"call_{index}", slot["name"], args))
        stop = _FINISH.get(finish, "end_turn")
        if calls and stop == "end_turn":  # some local servers say "stop" after tool calls
            stop = "tool_use"
        usage = Usage()
        if usage_raw is not None:
            details = getattr(usage_raw, "prompt_tokens_details", None)
            cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
            prompt = int(usage_raw.prompt_tokens or 0)
            usage = Usage(max(0, prompt - cached), int(usage_raw.completion_tokens or 0), cached, 0)
        return self._response(blocks, stop, usage, request_id)

    def _response(self, blocks: list[Block], stop: str, usage: Usage, request_id: str | None) -> ModelResponse:
        cost = self.pricing.cost(self.model, usage)
        return ModelResponse(Message("assistant", blocks), stop, usage, self.model,  # type: ignore[arg-type]
                             cost.usd, request_id, cost.known)

    def _classify(self, exc: Any) -> Exception:
        status = int(getattr(exc, "status_code", 0) or 0)
        body = exc.body if isinstance(getattr(exc, "body", None), dict) else {}
        error = body.get("error", body) if isinstance(body.get("error", body), dict) else {}
        text = str(error.get("message") or getattr(exc, "message", "") or exc)
        code = str(error.get("code") or "")
        if status in (400, 413) and any(m in (text + " " + code).lower() for m in _OVERFLOW_MARKERS):
            return ContextOverflowError(
                f"The request no longer fits the context window of {self.model} (the server said: {text}). "
                "Compact the conversation, start a new session, or raise providers.openai.context_window if "
                "the server allows more."
            )
        if status in (408, 409, 429) or status >= 500:
            return Transient(status, text, retry_after_seconds(exc))
        if status == 401:
            return ModelRejected("The OpenAI-compatible server rejected the credentials (HTTP 401). Check "
                                 "OPENAI_API_KEY (`coder doctor` shows whether it is set) and OPENAI_BASE_URL.")
        if status == 404:
            return ModelRejected(f"The server at the configured base URL does not know the model {self.model!r} or "
                                 f"the route (HTTP 404: {text}). Check `--model openai:NAME` and OPENAI_BASE_URL "
                                 "(it usually ends in /v1).")
        return ModelError(f"The OpenAI-compatible server refused the request (HTTP {status}: {text}). Retrying "
                          "will not help.")


def build(request: ProviderRequest) -> OpenAIProvider:
    """The registry's constructor (coder/models/providers.py): `[providers.openai]` and the environment."""
    section = request.section
    base_url = request.base_url("OPENAI_BASE_URL")
    key = request.api_key("OPENAI_API_KEY", base_url, (
        f"The model {request.resolved} needs OPENAI_BASE_URL (an OpenAI-compatible server such as vLLM, Ollama or "
        "llama.cpp, e.g. http://localhost:11434/v1) or OPENAI_API_KEY for api.openai.com; neither is set. "
        "`coder doctor` shows what is set."))
    return OpenAIProvider(request.name, api_key=key, base_url=base_url, policy=request.retry_policy(),
                          context_window=request.context_window(), pricing=request.pricing, timeout=section.timeout)
