"""OpenAI chat completions' request rules, as the fake server enforces them on its OpenAI route:
`check_request(body)` returns (message, param, code) of the first 400 the real API would answer, or None.
Written from OpenAI's API reference and the error bodies it is known to return, sharing no code with the client
(coder/models/openai_provider.py).

Sources: [chat] https://platform.openai.com/docs/api-reference/chat/create (messages: "content ... Required unless
tool_calls or function_call is specified" for assistant messages; tool messages carry "tool_call_id: Tool call
that this message is responding to"; tools[].function.name: "Must be a-z, A-Z, 0-9, or contain underscores and
dashes, with a maximum length of 64"; parameters: "The parameters the functions accepts, described as a JSON
Schema object"); [function-calling] https://platform.openai.com/docs/guides/function-calling (every tool call is
answered by a tool message with its id before the conversation continues); [reasoning]
https://platform.openai.com/docs/guides/reasoning ("max_tokens is deprecated ... not compatible with o-series
models", use max_completion_tokens). "verbatim" marks a message copied from a real API answer quoted in public
GitHub issues; "closest" one written from the documented wording.
"""

from __future__ import annotations

import re
from typing import Any

Problem = tuple[str, str | None, str | None]  # message, param, code

# [chat] the request fields of POST /v1/chat/completions
CHAT_FIELDS = frozenset({
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "stream",
    "stream_options", "stop", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs",
    "user", "tools", "tool_choice", "parallel_tool_calls", "response_format", "seed", "service_tier",
    "reasoning_effort", "metadata", "store", "modalities", "audio", "prediction", "web_search_options", "verbosity",
    "prompt_cache_key", "safety_identifier", "functions", "function_call",
})
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
_REASONING = re.compile(r"^(o\d|gpt-5)")  # [reasoning] models that refuse max_tokens


def check_request(body: Any) -> Problem | None:
    """The first reason OpenAI would answer 400 invalid_request_error, or None."""
    if not isinstance(body, dict):
        return "We could not parse the JSON body of your request.", None, None  # verbatim
    for key in body:
        if key not in CHAT_FIELDS:
            return f"Unrecognized request argument supplied: {key}", None, None  # verbatim
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter", None, None  # verbatim
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "[] is too short - 'messages'", "messages", "empty_array"  # verbatim
    if "max_tokens" in body and _REASONING.match(body["model"]):
        # [reasoning] verbatim
        return ("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' "
                "instead.", "max_tokens", "unsupported_parameter")
    return _tools(body.get("tools") or []) or _messages(messages)


def _tools(tools: list[Any]) -> Problem | None:
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict):
            param = f"tools[{i}].function"
            return f"Missing required parameter: '{param}'.", param, "missing_required_parameter"  # verbatim form
        name = function.get("name")
        param = f"tools[{i}].function.name"
        if not isinstance(name, str) or not _NAME.match(name):
            # [chat] name pattern; verbatim
            return (f"Invalid '{param}': string does not match pattern. Expected a string that matches the pattern "
                    "'^[a-zA-Z0-9_-]+$'.", param, "invalid_value")
        if len(name) > 64:
            # [chat] "maximum length of 64"; verbatim (use-novamira/novamira#12)
            return (f"Invalid '{param}': string too long. Expected a string with maximum length 64, but got a string "
                    f"with length {len(name)} instead.", param, "string_above_max_length")
        schema = function.get("parameters")
        if schema is not None and (not isinstance(schema, dict) or schema.get("type") != "object"):
            kind = schema.get("type") if isinstance(schema, dict) else None
            # [chat] parameters are a JSON Schema object; verbatim form
            return (f"Invalid schema for function '{name}': schema must be a JSON Schema of 'type: \"object\"', got "
                    f"'type: \"{kind}\"'.", f"tools[{i}].function.parameters", "invalid_function_parameters")
    return None


def _messages(messages: list[Any]) -> Problem | None:
    pending: list[str] = []  # tool_call ids of the last assistant message not answered yet
    opened_at = 0
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            # verbatim form
            return (f"Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'function', "
                    "'tool', and 'developer'.", f"messages[{i}].role", "invalid_value")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                # [function-calling] verbatim (OpenAI's own spelling)
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                        "with 'tool_calls'.", f"messages.[{i}].role", None)
            pending.remove(call_id)
            continue
        if pending:
            # [function-calling] verbatim (RamiAwar/dataline#172)
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    f"'tool_call_id'. The following tool_call_ids did not have response messages: "
                    f"{', '.join(pending)}", f"messages.[{opened_at}].role", None)
        calls = message.get("tool_calls") if role == "assistant" else None
        if message.get("content") is None and not calls:
            # [chat] content is required unless tool_calls is given; verbatim
            return ("Invalid value for 'content': expected a string, got null.", f"messages.[{i}].content", None)
        if calls:
            pending = [str(c.get("id")) for c in calls if isinstance(c, dict)]
            opened_at = i
    if pending:
        return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {', '.join(pending)}",
                f"messages.[{opened_at}].role", None)
    return None
