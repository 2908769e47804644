"""OpenAI Chat Completions rules (POST /v1/chat/completions), as the fake server's OpenAI route enforces them: the
request fields and their ranges ([chat]; the openai SDK's CompletionCreateParams documents each), the parameters
that only make sense together, and tools. The messages' own rules are in chat_messages.

OpenAI errors carry `param` and `code` beside the message; each rule gives both."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from coder_testkit.fake_rules.book import CHAT_API, FUNCTION_CALLING, OPENAI_SDK, REASONING, Found, Rules

#: the request fields of POST /v1/chat/completions (openai 3.57 CompletionCreateParams)
CHAT_FIELDS = frozenset({
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "stream",
    "stream_options", "stop", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs",
    "user", "tools", "tool_choice", "parallel_tool_calls", "response_format", "seed", "service_tier",
    "reasoning_effort", "metadata", "store", "modalities", "audio", "prediction", "web_search_options", "verbosity",
    "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "safety_identifier", "moderation",
    "functions", "function_call",
})
REASONING_MODELS = re.compile(r"^(o\d|gpt-5|gpt-6)")  # [reasoning] models that refuse max_tokens and sampling settings
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")  # [chat] reasoning_effort
_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
MAX_TOOLS = 128  # [function-calling] "up to 128 functions"
MAX_STOP = 4  # [chat] "Up to 4 sequences"


@dataclass
class ChatCall:
    """One request to POST /v1/chat/completions."""

    body: dict[str, Any]

    @property
    def model(self) -> str:
        return str(self.body.get("model"))

    @property
    def reasoning_model(self) -> bool:
        return bool(REASONING_MODELS.match(self.model))

    @property
    def tools(self) -> list[Any]:
        tools = self.body.get("tools")
        return tools if isinstance(tools, list) else []

    @property
    def tool_names(self) -> set[str]:
        return {t["function"].get("name") for t in self.tools if isinstance(t, dict) and isinstance(t.get("function"),
                                                                                                  dict)}


RULES: Rules[ChatCall] = Rules()


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@RULES.rule("chat.body-object", "the body is a JSON object", "We could not parse the JSON body of your request. "
            "(HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON "
            "payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please "
            "contact us through our help center at help.openai.com.)", CHAT_API, "closest")
def _object(call: ChatCall) -> Found:
    return None if isinstance(call.body, dict) else {}


@RULES.rule("chat.unknown-field", "every field is one the endpoint defines",
            "Unrecognized request argument supplied: {key}", OPENAI_SDK, "closest")
def _unknown(call: ChatCall) -> Found:
    extra = [key for key in call.body if key not in CHAT_FIELDS]
    return {"key": extra[0]} if extra else None


@RULES.rule("chat.model", "`model` is given", "you must provide a model parameter", CHAT_API, "closest")
def _model(call: ChatCall) -> Found:
    return None if isinstance(call.body.get("model"), str) and call.body["model"] else {}


@RULES.rule("chat.messages-required", "`messages` is given", "Missing required parameter: 'messages'.", CHAT_API,
            "schema", param="messages", code="missing_required_parameter")
def _messages_required(call: ChatCall) -> Found:
    return {} if not isinstance(call.body.get("messages"), list) else None


@RULES.rule("chat.messages-empty", "`messages` holds at least one message", "[] is too short - 'messages'", CHAT_API,
            "closest", param="messages", code="empty_array")
def _messages_empty(call: ChatCall) -> Found:
    return None if call.body["messages"] else {}


@RULES.rule("chat.max-tokens-reasoning", "reasoning models (o-series, gpt-5) take max_completion_tokens, not "
            "max_tokens", "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead.", REASONING, "closest", param="max_tokens",
            code="unsupported_parameter")
def _max_tokens(call: ChatCall) -> Found:
    return {} if "max_tokens" in call.body and call.reasoning_model else None


def _range(name: str, low: float, high: float) -> Callable[[ChatCall], Found]:
    def check(call: ChatCall) -> Found:
        value = call.body.get(name)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        if value > high:
            return {"value": value, "which": "above maximum", "bound": f"<= {high:g}", "name": name}
        if value < low:
            return {"value": value, "which": "below minimum", "bound": f">= {low:g}", "name": name}
        return None
    return check


_RANGE_MESSAGE = "Invalid '{name}': decimal {which} value. Expected a value {bound}, but got {value} instead."
RULES.rule("chat.temperature-range", "0 <= temperature <= 2", _RANGE_MESSAGE, CHAT_API, "closest",
           param="temperature", code="invalid_value")(_range("temperature", 0, 2))
RULES.rule("chat.top-p-range", "0 <= top_p <= 1", _RANGE_MESSAGE, CHAT_API, "closest", param="top_p",
           code="invalid_value")(_range("top_p", 0, 1))
RULES.rule("chat.presence-penalty-range", "-2 <= presence_penalty <= 2", _RANGE_MESSAGE, CHAT_API, "closest",
           param="presence_penalty", code="invalid_value")(_range("presence_penalty", -2, 2))
RULES.rule("chat.frequency-penalty-range", "-2 <= frequency_penalty <= 2", _RANGE_MESSAGE, CHAT_API, "closest",
           param="frequency_penalty", code="invalid_value")(_range("frequency_penalty", -2, 2))


@RULES.rule("chat.temperature-reasoning", "reasoning models take only the default temperature (1)",
            "Unsupported value: 'temperature' does not support {value} with this model. Only the default (1) value "
            "is supported.", REASONING, "seen", seen="https://github.com/owndev/Open-WebUI-Functions/issues/98",
            param="temperature", code="unsupported_value")
def _temperature_reasoning(call: ChatCall) -> Found:
    value = call.body.get("temperature")
    return {"value": value} if _number(value) and value != 1 and call.reasoning_model else None


@RULES.rule("chat.n", "n >= 1", "Invalid 'n': integer below minimum value. Expected a value >= 1, but got {value} "
            "instead.", CHAT_API, "closest", param="n", code="integer_below_min_value")
def _n(call: ChatCall) -> Found:
    value = call.body.get("n")
    return {"value": value} if isinstance(value, int) and not isinstance(value, bool) and value < 1 else None


@RULES.rule("chat.stop", "`stop` is a string or up to 4 strings",
            "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length "
            "{count} instead.", CHAT_API, "closest", param="stop", code="array_above_max_length")
def _stop(call: ChatCall) -> Found:
    stop = call.body.get("stop")
    return {"count": len(stop)} if isinstance(stop, list) and len(stop) > MAX_STOP else None


@RULES.rule("chat.logit-bias", "logit_bias values lie in -100..100",
            "Invalid 'logit_bias': values must be between -100 and 100.", CHAT_API, "closest", param="logit_bias",
            code="invalid_value")
def _logit_bias(call: ChatCall) -> Found:
    bias = call.body.get("logit_bias")
    values = bias.values() if isinstance(bias, dict) else []
    return {} if any(not _number(v) or not -100 <= v <= 100 for v in values) else None


@RULES.rule("chat.top-logprobs", "top_logprobs lies in 0..20 and needs logprobs true",
            "Invalid value for 'top_logprobs': 'top_logprobs' must be between 0 and 20 and is only allowed when "
            "'logprobs' is true.", CHAT_API, "closest", param="top_logprobs", code="invalid_value")
def _top_logprobs(call: ChatCall) -> Found:
    value = call.body.get("top_logprobs")
    if value is None:
        return None
    return {} if not _number(value) or not 0 <= value <= 20 or call.body.get("logprobs") is not True else None


@RULES.rule("chat.stream-options", "stream_options only when stream is true",
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.", CHAT_API, "seen",
            seen="https://github.com/BerriAI/litellm/issues/5803", param="stream_options")
def _stream_options(call: ChatCall) -> Found:
    return {} if call.body.get("stream_options") is not None and call.body.get("stream") is not True else None


@RULES.rule("chat.metadata", "metadata: at most 16 string pairs, keys up to 64 characters, values up to 512",
            "Invalid 'metadata': expected at most 16 string key-value pairs, keys of at most 64 characters and "
            "values of at most 512.", OPENAI_SDK, "closest", param="metadata", code="invalid_value")
def _metadata(call: ChatCall) -> Found:
    meta = call.body.get("metadata")
    if meta is None:
        return None
    ok = isinstance(meta, dict) and len(meta) <= 16 and all(
        isinstance(k, str) and len(k) <= 64 and isinstance(v, str) and len(v) <= 512 for k, v in meta.items())
    return None if ok else {}


@RULES.rule("chat.reasoning-effort", "reasoning_effort is none, minimal, low, medium, high, xhigh or max",
            "Invalid value: '{value}'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', 'xhigh', "
            "and 'max'.", OPENAI_SDK, "schema", param="reasoning_effort", code="invalid_value")
def _reasoning_effort(call: ChatCall) -> Found:
    value = call.body.get("reasoning_effort")
    return {"value": value} if value is not None and value not in REASONING_EFFORTS else None


@RULES.rule("chat.reasoning-effort-model", "reasoning_effort only on reasoning models",
            "Unsupported parameter: 'reasoning_effort' is not supported with this model.", REASONING, "closest",
            param="reasoning_effort", code="unsupported_parameter")
def _reasoning_effort_model(call: ChatCall) -> Found:
    return {} if call.body.get("reasoning_effort") is not None and not call.reasoning_model else None


#: GPT-5.6 (Sol, Terra, Luna) take function tools on Chat Completions only with reasoning_effort "none" (unset
#: counts as the model's default effort): refused as quoted in public answers since the models' release
TOOLS_WITHOUT_REASONING = re.compile(r"^gpt-(?:5\.6|6)")


@RULES.rule("chat.tools-with-reasoning", "GPT-5.6 models take function tools only with reasoning_effort none",
            "Function tools with reasoning_effort are not supported for {model} in /v1/chat/completions. To use "
            "function tools, use /v1/responses or set reasoning_effort to 'none'.", REASONING, "seen",
            seen="https://github.com/itzcrazykns/vane/issues/1173", param="reasoning_effort")
def _tools_with_reasoning(call: ChatCall) -> Found:
    if TOOLS_WITHOUT_REASONING.match(call.model) and call.tools and call.body.get("reasoning_effort") != "none":
        return {"model": call.model}
    return None


@RULES.rule("chat.response-format", "response_format is text, json_object or json_schema (with its schema)",
            "Invalid value: '{value}'. Supported values are: 'text', 'json_object', and 'json_schema'.", CHAT_API,
            "schema", param="response_format.type", code="invalid_value")
def _response_format(call: ChatCall) -> Found:
    fmt = call.body.get("response_format")
    if fmt is None:
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    return {"value": kind} if kind not in ("text", "json_object", "json_schema") else None


@RULES.rule("chat.json-schema", "response_format json_schema carries json_schema with a name",
            "Missing required parameter: 'response_format.json_schema'.", CHAT_API, "schema",
            param="response_format.json_schema", code="missing_required_parameter")
def _json_schema(call: ChatCall) -> Found:
    fmt = call.body.get("response_format") or {}
    schema = fmt.get("json_schema")
    return {} if fmt.get("type") == "json_schema" and not (isinstance(schema, dict) and schema.get("name")) else None


@RULES.rule("chat.json-object-word", "JSON mode needs the word 'json' in the messages",
            "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
            CHAT_API, "closest", param="messages")
def _json_word(call: ChatCall) -> Found:
    fmt = call.body.get("response_format") or {}
    if fmt.get("type") != "json_object":
        return None
    return None if "json" in repr(call.body["messages"]).lower() else {}


# -------------------------------------------------------------------------------------------------- tools


@RULES.rule("chat.tools-limit", "at most 128 tools", "Invalid 'tools': array too long. Expected an array with maximum "
            "length 128, but got an array with length {count} instead.", FUNCTION_CALLING, "closest", param="tools",
            code="array_above_max_length")
def _tools_limit(call: ChatCall) -> Found:
    return {"count": len(call.tools)} if len(call.tools) > MAX_TOOLS else None


@RULES.rule("chat.tool-type", "a tool is of type function or custom",
            "Invalid value: '{value}'. Supported values are: 'function' and 'custom'.", CHAT_API, "schema",
            param="tools[{index}].type", code="invalid_value")
def _tool_type(call: ChatCall) -> Found:
    for index, tool in enumerate(call.tools):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind not in ("function", "custom"):
            return {"index": index, "value": kind}
    return None


@RULES.rule("chat.tool-function", "a function tool has a `function` object",
            "Missing required parameter: 'tools[{index}].function'.", CHAT_API, "schema",
            param="tools[{index}].function", code="missing_required_parameter")
def _tool_function(call: ChatCall) -> Found:
    for index, tool in enumerate(call.tools):
        if tool.get("type") == "function" and not isinstance(tool.get("function"), dict):
            return {"index": index}
    return None


def _functions(call: ChatCall) -> list[tuple[int, dict[str, Any]]]:
    return [(i, t["function"]) for i, t in enumerate(call.tools) if t.get("type") == "function"]


@RULES.rule("chat.tool-name-pattern", "a function name is letters, digits, underscores and dashes",
            "Invalid 'tools[{index}].function.name': string does not match pattern. Expected a string that matches the "
            "pattern '^[a-zA-Z0-9_-]+$'.", CHAT_API, "closest", param="tools[{index}].function.name",
            code="invalid_value")
def _tool_name(call: ChatCall) -> Found:
    for index, function in _functions(call):
        name = function.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            return {"index": index}
    return None


@RULES.rule("chat.tool-name-length", "a function name is at most 64 characters",
            "Invalid 'tools[{index}].function.name': string too long. Expected a string with maximum length 64, but "
            "got a string with length {length} instead.", CHAT_API, "seen",
            seen="https://github.com/use-novamira/novamira/issues/12", param="tools[{index}].function.name",
            code="string_above_max_length")
def _tool_name_length(call: ChatCall) -> Found:
    for index, function in _functions(call):
        if len(function["name"]) > 64:
            return {"index": index, "length": len(function["name"])}
    return None


@RULES.rule("chat.tool-parameters", "function parameters are a JSON Schema of type object",
            "Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"', got "
            "'type: \"{kind}\"'.", CHAT_API, "closest", param="tools[{index}].function.parameters",
            code="invalid_function_parameters")
def _tool_parameters(call: ChatCall) -> Found:
    for index, function in _functions(call):
        schema = function.get("parameters")
        if schema is not None and (not isinstance(schema, dict) or schema.get("type") != "object"):
            kind = schema.get("type") if isinstance(schema, dict) else None
            return {"index": index, "name": function["name"], "kind": kind}
    return None


@RULES.rule("chat.parallel-tool-calls", "parallel_tool_calls only with tools",
            "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are "
            "specified.", FUNCTION_CALLING, "seen", seen="https://github.com/openai/swarm/issues/30",
            param="parallel_tool_calls")
def _parallel(call: ChatCall) -> Found:
    return {} if "parallel_tool_calls" in call.body and not call.tools else None


@RULES.rule("chat.tool-choice-without-tools", "tool_choice only with tools",
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
            FUNCTION_CALLING, "closest", param="tool_choice")
def _choice_without_tools(call: ChatCall) -> Found:
    return {} if call.body.get("tool_choice") is not None and not call.tools else None


@RULES.rule("chat.tool-choice-value", "tool_choice is none, auto, required or a named function",
            "Invalid value: '{value}'. Supported values are: 'none', 'auto', and 'required'.", CHAT_API, "schema",
            param="tool_choice", code="invalid_value")
def _choice_value(call: ChatCall) -> Found:
    choice = call.body.get("tool_choice")
    if choice is None or choice in ("none", "auto", "required"):
        return None
    if isinstance(choice, dict) and choice.get("type") in ("function", "custom", "allowed_tools"):
        return None
    return {"value": choice}


@RULES.rule("chat.tool-choice-function", "a named tool_choice names one of the tools",
            "Invalid value for 'tool_choice': function '{name}' is not one of the provided 'tools'.",
            FUNCTION_CALLING, "closest", param="tool_choice")
def _choice_function(call: ChatCall) -> Found:
    choice = call.body.get("tool_choice")
    if not isinstance(choice, dict) or choice.get("type") != "function":
        return None
    name = (choice.get("function") or {}).get("name") if isinstance(choice.get("function"), dict) else None
    return {"name": name} if name not in call.tool_names else None
