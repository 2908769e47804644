"""Messages API rules on the top-level fields of the body: which fields exist, their types and ranges. The field
list and the enumerations are the Python SDK's request types (generated from the API's OpenAPI spec); the limits
are the API reference's."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeGuard

from coder_testkit.fake_rules.book import ANTHROPIC_SDK, MESSAGES_API, MODELS, SONNET_5, Found, Rules
from coder_testkit.fake_rules.context import MessagesCall

RULES: Rules[MessagesCall] = Rules()

# The top-level fields of POST /v1/messages (anthropic 2.14 MessageCreateParams, plus the sampling fields it
# deprecated and the API still takes) and of /v1/messages/count_tokens.
MESSAGES_FIELDS = frozenset({
    "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream", "temperature", "top_p",
    "top_k", "tools", "tool_choice", "thinking", "service_tier", "container", "mcp_servers", "context_management",
    "output_config", "output_format", "inference_geo", "cache_control", "fallbacks", "diagnostics", "speed",
    "user_profile_id", "workspace_id",
})
COUNT_TOKENS_FIELDS = frozenset({
    "model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "context_management",
    "output_config", "output_format", "cache_control", "speed", "user_profile_id", "workspace_id",
})
MAX_MESSAGES = 100_000  # [messages] "There is a limit of 100,000 messages in a single request."


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@RULES.rule("body.object", "the body is a JSON object",
            "Input should be a valid dictionary or object to extract fields from", MESSAGES_API, "schema")
def _object(call: MessagesCall) -> Found:
    return None if isinstance(call.body, dict) else {}


@RULES.rule("body.extra-field", "every top-level field is one the endpoint defines",
            "{key}: Extra inputs are not permitted", ANTHROPIC_SDK, "schema")
def _extra_field(call: MessagesCall) -> Found:
    allowed = COUNT_TOKENS_FIELDS if call.count_tokens else MESSAGES_FIELDS
    extra = [key for key in call.body if key not in allowed]
    return {"key": extra[0]} if extra else None


@RULES.rule("body.model", "`model` is given", "model: Field required", MESSAGES_API, "schema")
def _model(call: MessagesCall) -> Found:
    return None if isinstance(call.body.get("model"), str) and call.body["model"] else {}


@RULES.rule("body.messages", "`messages` is a list", "messages: Field required", MESSAGES_API, "schema")
def _messages(call: MessagesCall) -> Found:
    return None if isinstance(call.body.get("messages"), list) else {}


@RULES.rule("body.messages-empty", "`messages` holds at least one message",
            "messages: List should have at least 1 item after validation, not 0", MESSAGES_API, "schema")
def _messages_empty(call: MessagesCall) -> Found:
    return None if call.body["messages"] else {}


@RULES.rule("body.messages-limit", "at most 100,000 messages",
            "messages: List should have at most 100000 items after validation, not {count}", MESSAGES_API, "schema")
def _messages_limit(call: MessagesCall) -> Found:
    count = len(call.body["messages"])
    return {"count": count} if count > MAX_MESSAGES else None


@RULES.rule("body.max-tokens", "`max_tokens` is given (Messages, not count_tokens)", "max_tokens: Field required",
            MESSAGES_API, "schema")
def _max_tokens(call: MessagesCall) -> Found:
    return {} if not call.count_tokens and call.body.get("max_tokens") is None else None


@RULES.rule("body.max-tokens-integer", "`max_tokens` is an integer", "max_tokens: Input should be a valid integer",
            MESSAGES_API, "schema")
def _max_tokens_integer(call: MessagesCall) -> Found:
    value = call.body.get("max_tokens")
    return {} if value is not None and not _is_int(value) else None


@RULES.rule("body.max-tokens-minimum", "`max_tokens` >= 0 (0 only warms the prompt cache)",
            "max_tokens: Input should be greater than or equal to 0", MESSAGES_API, "schema")
def _max_tokens_minimum(call: MessagesCall) -> Found:
    value = call.body.get("max_tokens")
    return {} if _is_int(value) and value < 0 else None


@RULES.rule("body.max-tokens-model-limit", "`max_tokens` is at most the model's output limit",
            "max_tokens: {value} > {limit}, which is the maximum allowed number of output tokens for {model}",
            MODELS, "seen", seen="https://github.com/anthropics/claude-code/issues/24451")
def _max_tokens_limit(call: MessagesCall) -> Found:
    value = call.body.get("max_tokens")
    if _is_int(value) and call.facts.known and value > call.facts.max_output:
        return {"value": value, "limit": call.facts.max_output, "model": call.model}
    return None


@RULES.rule("body.stop-sequences-list", "`stop_sequences` is a list", "stop_sequences: Input should be a valid list",
            ANTHROPIC_SDK, "schema")
def _stop_sequences_list(call: MessagesCall) -> Found:
    value = call.body.get("stop_sequences")
    return {} if value is not None and not isinstance(value, list) else None


@RULES.rule("body.stop-sequences-strings", "every stop sequence is a string",
            "stop_sequences.{index}: Input should be a valid string", ANTHROPIC_SDK, "schema")
def _stop_sequences_strings(call: MessagesCall) -> Found:
    for index, item in enumerate(call.body.get("stop_sequences") or []):
        if not isinstance(item, str):
            return {"index": index}
    return None


@RULES.rule("body.metadata-object", "`metadata` is an object",
            "metadata: Input should be a valid dictionary or object to extract fields from", ANTHROPIC_SDK, "schema")
def _metadata_object(call: MessagesCall) -> Found:
    value = call.body.get("metadata")
    return {} if value is not None and not isinstance(value, dict) else None


@RULES.rule("body.metadata-extra", "`metadata` holds only `user_id`", "metadata.{key}: Extra inputs are not permitted",
            ANTHROPIC_SDK, "schema")
def _metadata_extra(call: MessagesCall) -> Found:
    extra = [key for key in call.body.get("metadata") or {} if key != "user_id"]
    return {"key": extra[0]} if extra else None


@RULES.rule("body.metadata-user-id", "`metadata.user_id` is a string or null",
            "metadata.user_id: Input should be a valid string", ANTHROPIC_SDK, "schema")
def _metadata_user_id(call: MessagesCall) -> Found:
    value = (call.body.get("metadata") or {}).get("user_id")
    return {} if value is not None and not isinstance(value, str) else None


def _enum(field: str, allowed: tuple[str, ...]) -> Callable[[MessagesCall], Found]:
    def check(call: MessagesCall) -> Found:
        value = call.body.get(field)
        return {} if value is not None and value not in allowed else None
    return check


RULES.rule("body.service-tier", "`service_tier` is auto or standard_only",
           "service_tier: Input should be 'auto' or 'standard_only'", ANTHROPIC_SDK, "schema",
           )(_enum("service_tier", ("auto", "standard_only")))
RULES.rule("body.speed", "`speed` is standard or fast", "speed: Input should be 'standard' or 'fast'", ANTHROPIC_SDK,
           "schema")(_enum("speed", ("standard", "fast")))


@RULES.rule("body.stream", "`stream` is a boolean", "stream: Input should be a valid boolean", ANTHROPIC_SDK, "schema")
def _stream(call: MessagesCall) -> Found:
    return {} if "stream" in call.body and not isinstance(call.body["stream"], bool) else None


@RULES.rule("body.system", "`system` is a string or a list of text blocks",
            "system: Input should be a valid string or a list of text blocks", ANTHROPIC_SDK, "closest")
def _system(call: MessagesCall) -> Found:
    value = call.body.get("system")
    if value is None or isinstance(value, str):
        return None
    ok = isinstance(value, list) and all(isinstance(b, dict) for b in value)
    return None if ok else {}


@RULES.rule("body.system-block-type", "every system block is a text block",
            "system.{index}.type: Input should be 'text'", ANTHROPIC_SDK, "schema")
def _system_block_type(call: MessagesCall) -> Found:
    for block in call.system_blocks:
        if block.type != "text":
            return {"index": block.path.split(".")[1]}
    return None


# ------------------------------------------------------------------------------------------------ sampling


@RULES.rule("sampling.temperature-range", "0 <= temperature <= 1",
            "temperature: Input should be less than or equal to 1", MESSAGES_API, "schema")
def _temperature_high(call: MessagesCall) -> Found:
    value = call.body.get("temperature")
    return {} if _is_number(value) and value > 1 else None


@RULES.rule("sampling.temperature-minimum", "temperature >= 0",
            "temperature: Input should be greater than or equal to 0", MESSAGES_API, "schema")
def _temperature_low(call: MessagesCall) -> Found:
    value = call.body.get("temperature")
    return {} if _is_number(value) and value < 0 else None


@RULES.rule("sampling.top-p-range", "0 <= top_p <= 1", "top_p: Input should be less than or equal to 1", MESSAGES_API,
            "schema")
def _top_p(call: MessagesCall) -> Found:
    value = call.body.get("top_p")
    return {} if _is_number(value) and value > 1 else None


@RULES.rule("sampling.top-k-minimum", "top_k >= 0", "top_k: Input should be greater than or equal to 0", MESSAGES_API,
            "schema")
def _top_k(call: MessagesCall) -> Found:
    value = call.body.get("top_k")
    return {} if _is_number(value) and value < 0 else None


@RULES.rule("sampling.removed", "no non-default temperature / top_p / top_k on models that removed sampling "
            "(Opus 4.7 and later, Sonnet 5 and later, Haiku 5.5, Fable / Mythos 5)",
            "`{key}` is deprecated for this model.", SONNET_5, "closest")
def _sampling_removed(call: MessagesCall) -> Found:
    if call.facts.sampling:
        return None
    for key in ("temperature", "top_p", "top_k"):
        if key in call.body and not (key == "temperature" and call.body[key] == 1):
            return {"key": key}
    return None


@RULES.rule("sampling.temperature-and-top-p", "not both temperature and top_p (Claude 4.5 and later)",
            "temperature and top_p cannot both be specified for this model. Please use only one.", MESSAGES_API,
            "seen", seen="https://github.com/browseros-ai/BrowserOS/issues/208")
def _temperature_and_top_p(call: MessagesCall) -> Found:
    return {} if "temperature" in call.body and "top_p" in call.body else None
