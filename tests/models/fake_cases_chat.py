"""One broken Chat Completions body per rule (coder_testkit/fake_rules/chat*.py): a patch over a valid request, and
the error (message, param, code) the real API answers with."""

from __future__ import annotations

from fake_rules_support import ChatCase

FUNCTION = {"type": "function", "function": {"name": "bash", "description": "Run.", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}}}}
CALL = {"id": "call_a", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
HI = [{"role": "user", "content": "hi"}]


def function(**changes: object) -> dict:
    return {"type": "function", "function": FUNCTION["function"] | changes}


_RANGE = "Invalid '{0}': decimal {1} value. Expected a value {2}, but got {3} instead."

CASES: list[ChatCase] = [
    ChatCase("chat.body-object", {}, raw=["not", "an", "object"], message=
             "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP "
             "library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you "
             "have trouble figuring out how to fix this, please contact us through our help center at "
             "help.openai.com.)"),
    ChatCase("chat.unknown-field", {"frobnicate": 1}, "Unrecognized request argument supplied: frobnicate"),
    ChatCase("chat.model", {"model": None}, "you must provide a model parameter"),
    ChatCase("chat.messages-required", {"messages": None}, "Missing required parameter: 'messages'.", "messages",
             "missing_required_parameter"),
    ChatCase("chat.messages-empty", {"messages": []}, "[] is too short - 'messages'", "messages", "empty_array"),
    ChatCase("chat.max-tokens-reasoning", {"model": "gpt-5", "max_tokens": 100},
             "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' "
             "instead.", "max_tokens", "unsupported_parameter"),
    ChatCase("chat.temperature-range", {"temperature": 3}, _RANGE.format("temperature", "above maximum", "<= 2", 3),
             "temperature", "invalid_value"),
    ChatCase("chat.top-p-range", {"top_p": -0.1}, _RANGE.format("top_p", "below minimum", ">= 0", -0.1), "top_p",
             "invalid_value"),
    ChatCase("chat.presence-penalty-range", {"presence_penalty": 2.5},
             _RANGE.format("presence_penalty", "above maximum", "<= 2", 2.5), "presence_penalty", "invalid_value"),
    ChatCase("chat.frequency-penalty-range", {"frequency_penalty": -3},
             _RANGE.format("frequency_penalty", "below minimum", ">= -2", -3), "frequency_penalty", "invalid_value"),
    ChatCase("chat.temperature-reasoning", {"model": "gpt-5", "temperature": 0.2},
             "Unsupported value: 'temperature' does not support 0.2 with this model. Only the default (1) value is "
             "supported.", "temperature", "unsupported_value"),
    ChatCase("chat.tools-with-reasoning", {"model": "gpt-5.6-terra", "tools": [FUNCTION]},
             "Function tools with reasoning_effort are not supported for gpt-5.6-terra in /v1/chat/completions. To "
             "use function tools, use /v1/responses or set reasoning_effort to 'none'.", "reasoning_effort"),
    ChatCase("chat.n", {"n": 0}, "Invalid 'n': integer below minimum value. Expected a value >= 1, but got 0 instead.",
             "n", "integer_below_min_value"),
    ChatCase("chat.stop", {"stop": ["a", "b", "c", "d", "e"]},
             "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length "
             "5 instead.", "stop", "array_above_max_length"),
    ChatCase("chat.logit-bias", {"logit_bias": {"50256": 200}},
             "Invalid 'logit_bias': values must be between -100 and 100.", "logit_bias", "invalid_value"),
    ChatCase("chat.top-logprobs", {"top_logprobs": 5},
             "Invalid value for 'top_logprobs': 'top_logprobs' must be between 0 and 20 and is only allowed when "
             "'logprobs' is true.", "top_logprobs", "invalid_value"),
    ChatCase("chat.stream-options", {"stream_options": {"include_usage": True}},
             "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options"),
    ChatCase("chat.metadata", {"metadata": {f"k{i}": "v" for i in range(17)}},
             "Invalid 'metadata': expected at most 16 string key-value pairs, keys of at most 64 characters and "
             "values of at most 512.", "metadata", "invalid_value"),
    ChatCase("chat.reasoning-effort", {"model": "gpt-5", "reasoning_effort": "extreme"},
             "Invalid value: 'extreme'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', 'xhigh', "
             "and 'max'.", "reasoning_effort", "invalid_value"),
    ChatCase("chat.reasoning-effort-model", {"reasoning_effort": "low"},
             "Unsupported parameter: 'reasoning_effort' is not supported with this model.", "reasoning_effort",
             "unsupported_parameter"),
    ChatCase("chat.response-format", {"response_format": {"type": "yaml"}},
             "Invalid value: 'yaml'. Supported values are: 'text', 'json_object', and 'json_schema'.",
             "response_format.type", "invalid_value"),
    ChatCase("chat.json-schema", {"response_format": {"type": "json_schema"}},
             "Missing required parameter: 'response_format.json_schema'.", "response_format.json_schema",
             "missing_required_parameter"),
    ChatCase("chat.json-object-word", {"response_format": {"type": "json_object"}},
             "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
             "messages"),
    ChatCase("chat.tools-limit", {"tools": [function(name=f"t{i}") for i in range(129)]},
             "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with "
             "length 129 instead.", "tools", "array_above_max_length"),
    ChatCase("chat.tool-type", {"tools": [{"type": "retrieval"}]},
             "Invalid value: 'retrieval'. Supported values are: 'function' and 'custom'.", "tools[0].type",
             "invalid_value"),
    ChatCase("chat.tool-function", {"tools": [{"type": "function"}]},
             "Missing required parameter: 'tools[0].function'.", "tools[0].function", "missing_required_parameter"),
    ChatCase("chat.tool-name-pattern", {"tools": [function(name="my.tool")]},
             "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the "
             "pattern '^[a-zA-Z0-9_-]+$'.", "tools[0].function.name", "invalid_value"),
    ChatCase("chat.tool-name-length", {"tools": [function(name="n" * 70)]},
             "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, but got a "
             "string with length 70 instead.", "tools[0].function.name", "string_above_max_length"),
    ChatCase("chat.tool-parameters", {"tools": [function(parameters={"type": "array"})]},
             "Invalid schema for function 'bash': schema must be a JSON Schema of 'type: \"object\"', got "
             "'type: \"array\"'.", "tools[0].function.parameters", "invalid_function_parameters"),
    ChatCase("chat.parallel-tool-calls", {"parallel_tool_calls": False},
             "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are "
             "specified.", "parallel_tool_calls"),
    ChatCase("chat.tool-choice-without-tools", {"tool_choice": "required"},
             "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
             "tool_choice"),
    ChatCase("chat.tool-choice-value", {"tools": [FUNCTION], "tool_choice": "always"},
             "Invalid value: 'always'. Supported values are: 'none', 'auto', and 'required'.", "tool_choice",
             "invalid_value"),
    ChatCase("chat.tool-choice-function", {"tools": [FUNCTION], "tool_choice": {"type": "function",
                                                                              "function": {"name": "grep"}}},
             "Invalid value for 'tool_choice': function 'grep' is not one of the provided 'tools'.", "tool_choice"),
    ChatCase("chat.role", {"messages": [{"role": "robot", "content": "x"}]},
             "Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and "
             "'developer'.", "messages[0].role", "invalid_value"),
    ChatCase("chat.content-part", {"messages": [{"role": "system", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}}]}] + HI},
             "Invalid value: 'image_url'. Supported values are: 'text'.", "messages[0].content[0].type",
             "invalid_value"),
    ChatCase("chat.image-url", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.org/a.png", "detail": "ultra"}}]}]},
             "Invalid value: 'ultra'. Supported values are: 'auto', 'low', 'high', and 'original'.",
             "messages[0].content[0].image_url.detail", "invalid_value"),
    ChatCase("chat.image-type", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/bmp;base64,Qk0="}}]}]},
             "You uploaded an unsupported image. Please make sure your image has of one the following formats: "
             "['png', 'jpeg', 'gif', 'webp'].", None, "invalid_image_format"),
    ChatCase("chat.image-count", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}}] * 1501}]},
             "Invalid 'messages': too many image inputs. Expected at most 1500, but got 1501.", "messages",
             "invalid_value"),
    ChatCase("chat.tool-call-id", {"messages": HI + [{"role": "assistant", "content": None, "tool_calls": [CALL]},
                                                     {"role": "tool", "content": "r"}]},
             "Missing required parameter: 'messages[2].tool_call_id'.", "messages[2].tool_call_id",
             "missing_required_parameter"),
    ChatCase("chat.tool-calls", {"messages": HI + [{"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": CALL["function"]}]}]},
             "Missing required parameter: 'messages[1].tool_calls[0].id'.", "messages[1].tool_calls[0].id",
             "missing_required_parameter"),
    ChatCase("chat.content-null", {"messages": HI + [{"role": "assistant", "content": None},
                                                     {"role": "user", "content": "y"}]},
             "Invalid value for 'content': expected a string, got null.", "messages.[1].content"),
    ChatCase("chat.tool-message-orphan", {"messages": HI + [{"role": "tool", "tool_call_id": "call_a",
                                                             "content": "r"}]},
             "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
             "'tool_calls'.", "messages.[1].role"),
    ChatCase("chat.tool-call-unanswered", {"messages": HI + [{"role": "assistant", "content": None,
                                                              "tool_calls": [CALL]}, {"role": "user", "content": "y"}]},
             "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
             "'tool_call_id'. The following tool_call_ids did not have response messages: call_a",
             "messages.[1].role"),
]
