"""One broken Messages API body per rule (coder_testkit/fake_rules), with the message the real API answers with.
Media (images, documents) are in fake_cases_media. test_models_fake_rule_table checks every rule has a case here."""

from __future__ import annotations

from fake_rules_support import BASH, DOCS, RESULT, THINK, USE, Case, body, loop, user

_ADAPTIVE = 'Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'
_SERVER_TAGS = ("'bash_20241022', 'bash_20250124', 'code_execution_20250522', 'code_execution_20250825', "
                "'code_execution_20260120', 'code_execution_20260521', 'custom', 'memory_20250818', "
                "'text_editor_20241022', 'text_editor_20250124', 'text_editor_20250429', 'text_editor_20250728', "
                "'tool_search_tool_bm25_20251119', 'tool_search_tool_regex_20251119', 'web_fetch_20250910', "
                "'web_fetch_20260209', 'web_fetch_20260309', 'web_fetch_20260318', 'web_search_20250305', "
                "'web_search_20260209', 'web_search_20260318'")
_BLOCK_TAGS = ("'text', 'image', 'document', 'search_result', 'thinking', 'redacted_thinking', 'tool_use', "
               "'tool_result', 'server_tool_use', 'web_search_tool_result', 'web_fetch_tool_result', "
               "'code_execution_tool_result', 'bash_code_execution_tool_result', "
               "'text_editor_code_execution_tool_result', 'tool_search_tool_result', 'container_upload'")
_THINK_LOOP = "claude-haiku-4-5"  # a budget model that still takes prefill: the history rules of thinking
_SIGNED = {"type": "thinking", "thinking": "t", "signature": "sig_forged"}


def _without(request: dict, key: str) -> dict:
    return {k: v for k, v in request.items() if k != key}


CASES: list[Case] = [
    # ------------------------------------------------------------------------------------------- fields
    Case("body.object", [body()], "Input should be a valid dictionary or object to extract fields from"),
    Case("body.extra-field", body(frobnicate=1), "frobnicate: Extra inputs are not permitted"),
    Case("body.model", _without(body(), "model"), "model: Field required"),
    Case("body.messages", _without(body(), "messages"), "messages: Field required"),
    Case("body.messages-empty", body() | {"messages": []},
         "messages: List should have at least 1 item after validation, not 0"),
    Case("body.messages-limit", body(messages=user("x") * 100_001),
         "messages: List should have at most 100000 items after validation, not 100001"),
    Case("body.max-tokens", _without(body(), "max_tokens"), "max_tokens: Field required"),
    Case("body.max-tokens-integer", body(max_tokens="100"), "max_tokens: Input should be a valid integer"),
    Case("body.max-tokens-minimum", body(max_tokens=-1), "max_tokens: Input should be greater than or equal to 0"),
    Case("body.max-tokens-model-limit", body("claude-haiku-4-5", max_tokens=65024),
         "max_tokens: 65024 > 64000, which is the maximum allowed number of output tokens for claude-haiku-4-5"),
    Case("body.stop-sequences-list", body(stop_sequences="END"), "stop_sequences: Input should be a valid list"),
    Case("body.stop-sequences-strings", body(stop_sequences=["END", 7]),
         "stop_sequences.1: Input should be a valid string"),
    Case("body.metadata-object", body(metadata="user-1"),
         "metadata: Input should be a valid dictionary or object to extract fields from"),
    Case("body.metadata-extra", body(metadata={"user_id": "u1", "session": "s1"}),
         "metadata.session: Extra inputs are not permitted"),
    Case("body.metadata-user-id", body(metadata={"user_id": 42}), "metadata.user_id: Input should be a valid string"),
    Case("body.service-tier", body(service_tier="priority"),
         "service_tier: Input should be 'auto' or 'standard_only'"),
    Case("body.speed", body(speed="turbo"), "speed: Input should be 'standard' or 'fast'"),
    Case("body.stream", body(stream="yes"), "stream: Input should be a valid boolean"),
    Case("body.system", body(system=5), "system: Input should be a valid string or a list of text blocks"),
    Case("body.system-block-type", body(system=[{"type": "document", "source": {}}]),
         "system.0.type: Input should be 'text'"),
    Case("sampling.temperature-range", body(temperature=1.5), "temperature: Input should be less than or equal to 1"),
    Case("sampling.temperature-minimum", body(temperature=-0.5),
         "temperature: Input should be greater than or equal to 0"),
    Case("sampling.top-p-range", body(top_p=1.5), "top_p: Input should be less than or equal to 1"),
    Case("sampling.top-k-minimum", body(top_k=-1), "top_k: Input should be greater than or equal to 0"),
    Case("sampling.removed", body("claude-sonnet-5", temperature=0.2), "`temperature` is deprecated for this model."),
    Case("sampling.temperature-and-top-p", body(temperature=0.5, top_p=0.9),
         "temperature and top_p cannot both be specified for this model. Please use only one."),
    # ------------------------------------------------------------------------------------------ content
    Case("message.role", body(messages=[{"role": "system", "content": "x"}]),
         "messages.0.role: Input should be 'user' or 'assistant'"),
    Case("message.content", body(messages=[{"role": "user"}]), "messages.0.content: Field required"),
    Case("message.block-object", body(messages=[{"role": "user", "content": ["hi"]}]),
         "messages.0.content.0: Input should be a valid dictionary or object"),
    Case("message.block-type", body(messages=[{"role": "user", "content": [{"type": "video", "url": "v"}]}]),
         f"messages.0.content.0: Input tag 'video' found using 'type' does not match any of the expected tags: "
         f"{_BLOCK_TAGS}"),
    Case("message.empty", body(messages=[{"role": "user", "content": ""}]),
         "messages.0: all messages must have non-empty content except for the optional final assistant message"),
    Case("message.block-role", body(messages=[{"role": "user", "content": "go"},
                                              {"role": "assistant", "content": [RESULT]},
                                              {"role": "user", "content": "and?"}]),
         "messages.1.content.0: `tool_result` blocks can only be in `user` messages"),
    Case("text.string", body(messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}]),
         "messages.0.content.0.text.text: Input should be a valid string"),
    Case("text.empty", body(messages=[{"role": "user", "content": [{"type": "text", "text": ""}]}]),
         "messages: text content blocks must be non-empty"),
    Case("text.whitespace", body(messages=loop([{"type": "text", "text": "   "}, USE])),
         "messages: text content blocks must contain non-whitespace text"),
    Case("tool-use.fields", body(messages=loop([USE | {"input": "ls"}])),
         "messages.1.content.0.tool_use.input: Input should be a valid dictionary"),
    Case("tool-result.tool-use-id", body(messages=loop([USE], [{"type": "tool_result", "content": "x"}])),
         "messages.2.content.0.tool_result.tool_use_id: Field required"),
    Case("tool-result.is-error", body(messages=loop([USE], [RESULT | {"is_error": "true"}])),
         "messages.2.content.0.tool_result.is_error: Input should be a valid boolean"),
    Case("tool-result.content", body(messages=loop([USE], [RESULT | {"content": [USE]}])),
         "messages.2.content.0.tool_result.content.0: Input tag 'tool_use' found using 'type' does not match any of "
         "the expected tags: 'text', 'image', 'search_result', 'document', 'tool_reference'"),
    # -------------------------------------------------------------------------------------------- tools
    Case("tools.list", body(tools=BASH), "tools: Input should be a valid list"),
    Case("tools.type", body(tools=[{"type": "function", "name": "bash"}]),
         f"tools.0: Input tag 'function' found using 'type' does not match any of the expected tags: "
         f"{_SERVER_TAGS}"),
    Case("tools.custom-name", body(tools=[BASH | {"name": "my.tool"}]),
         "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"),
    Case("tools.custom-description", body(tools=[BASH | {"description": ["Run."]}]),
         "tools.0.custom.description: Input should be a valid string"),
    Case("tools.input-schema", body(tools=[{"name": "shell", "description": "d"}]),
         "tools.0.custom.input_schema: Field required"),
    Case("tools.input-schema-object", body(tools=[BASH | {"input_schema": {"type": "string"}}]),
         "tools.0.custom.input_schema.type: Input should be 'object'"),
    Case("tools.input-schema-union", body(tools=[BASH | {"input_schema": {"type": "object", "anyOf": [
        {"required": ["a"]}, {"required": ["b"]}]}}]),
         "tools.0.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"),
    Case("tools.server-name", body(tools=[{"type": "bash_20250124", "name": "shell"}]),
         "tools.0.bash_20250124.name: Input should be 'bash'"),
    Case("tools.server-version", body(tools=[{"type": "text_editor_20250124", "name": "str_replace_editor"}]),
         "tools.0: 'text_editor_20250124' is not supported by claude-sonnet-4-6. Use the tool version made for this "
         "model."),
    Case("tools.web-search-domains", body(tools=[{"type": "web_search_20250305", "name": "web_search",
                                                  "allowed_domains": ["a.org"], "blocked_domains": ["b.org"]}]),
         "tools.0: Cannot specify both allowed_domains and blocked_domains."),
    Case("tools.defer-loading", body(tools=[BASH | {"defer_loading": "yes"}]),
         "tools.0.custom.defer_loading: Input should be a valid boolean"),
    Case("tools.not-all-deferred", body(tools=[BASH | {"defer_loading": True}]),
         "At least one tool must have defer_loading=false. All tools cannot be deferred."),
    Case("tools.unique-names", body(tools=[BASH, BASH]), "tools: Tool names must be unique."),
    Case("tool-reference.unresolved", body(tools=[BASH, BASH | {"name": "grep", "defer_loading": True}],
                                           messages=loop([USE], [RESULT | {"content": [
                                               {"type": "tool_reference", "tool_name": "find"}]}])),
         "Tool reference 'find' not found in available tools"),
    Case("tool-choice.object", body(tools=[BASH], tool_choice="auto"),
         "tool_choice: Input should be a valid dictionary or object to extract fields from"),
    Case("tool-choice.type", body(tools=[BASH], tool_choice={"type": "required"}),
         "tool_choice: Input tag 'required' found using 'type' does not match any of the expected tags: 'auto', "
         "'any', 'tool', 'none'"),
    Case("tool-choice.name", body(tools=[BASH], tool_choice={"type": "tool"}), "tool_choice.tool.name: Field required"),
    Case("tool-choice.fields", body(tools=[BASH], tool_choice={"type": "none", "disable_parallel_tool_use": True}),
         "tool_choice.none.disable_parallel_tool_use: Extra inputs are not permitted"),
    Case("tool-choice.parallel", body(tools=[BASH], tool_choice={"type": "auto", "disable_parallel_tool_use": "yes"}),
         "tool_choice.auto.disable_parallel_tool_use: Input should be a valid boolean"),
    Case("tool-choice.known-tool", body(tools=[BASH], tool_choice={"type": "tool", "name": "grep"}),
         "tool_choice.name: Tool 'grep' not found in provided tools"),
    Case("tool-choice.forced-unsupported", body("claude-opus-5-5", tools=[BASH], tool_choice={"type": "any"}),
         'tool_choice: type "tool" and "any" are not supported for this model.'),
    Case("tool-choice.forced-unsupported", _without(body("claude-fable-5-1", tools=[BASH], tool_choice={
        "type": "tool", "name": "bash"}), "max_tokens"),
         'tool_choice: type "tool" and "any" are not supported for this model.', count_tokens=True),
    Case("tool-choice.forced-with-thinking", body(thinking=THINK, tools=[BASH], tool_choice={"type": "any"}),
         "Thinking may not be enabled when tool_choice forces tool use."),
    Case("tool-choice.forced-with-thinking", body("claude-opus-4-7", thinking={"type": "adaptive"}, tools=[BASH],
                                                  tool_choice={"type": "tool", "name": "bash"}),
         "Thinking may not be enabled when tool_choice forces tool use."),
    # ----------------------------------------------------------------------------------------- thinking
    Case("thinking.type", body(thinking={"budget_tokens": 2000}), "thinking.type: Field required"),
    Case("thinking.type-known", body(thinking={"type": "auto"}),
         "thinking: Input tag 'auto' found using 'type' does not match any of the expected tags: 'adaptive', "
         "'disabled', 'enabled'"),
    Case("thinking.between-tools-unsupported", body(thinking={"type": "between_tools"}),
         '"thinking.type.between_tools" is not supported for this model.'),
    Case("thinking.unsupported-model", body("claude-3-5-haiku", thinking=THINK),
         '"thinking.type.enabled" is not supported for this model.'),
    Case("thinking.enabled-removed", body("claude-opus-4-7", thinking=THINK),
         '"thinking.type.enabled" is not supported for this model. ' + _ADAPTIVE),
    Case("thinking.enabled-removed", body("claude-fable-5", thinking=THINK),
         '"thinking.type.enabled" is not supported for this model. ' + _ADAPTIVE),
    Case("thinking.adaptive-unsupported", body("claude-haiku-4-5", thinking={"type": "adaptive"}),
         "adaptive thinking is not supported on this model"),
    Case("thinking.budget-minimum", body(thinking={"type": "enabled", "budget_tokens": 1000}),
         "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"),
    Case("thinking.budget-below-max-tokens", body(max_tokens=1024, thinking=THINK),
         f"`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at {DOCS}"
         "#max-tokens-and-context-window-size"),
    Case("thinking.adaptive-budget", body(thinking={"type": "adaptive", "budget_tokens": 2000}),
         "thinking.adaptive.budget_tokens: Extra inputs are not permitted"),
    Case("thinking.display", body(thinking={"type": "adaptive", "display": "full"}),
         "thinking.adaptive.display: Input should be 'summarized' or 'omitted'"),
    Case("thinking.block-binding-beta", body("claude-opus-5-5", thinking={
        "type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}),
         "thinking.adaptive.block_binding: Extra inputs are not permitted"),
    Case("thinking.disabled-always-on", body("claude-fable-5", thinking={"type": "disabled"}),
         '"thinking.type.disabled" is not supported for this model. Thinking defaults to adaptive mode when not '
         'specified; use "thinking.type.enabled" with "budget_tokens" for extended thinking.'),
    Case("thinking.disabled-always-on", body("claude-mythos-preview", thinking={"type": "disabled"}),
         '"thinking.type.disabled" is not supported for this model. Thinking defaults to adaptive mode when not '
         'specified; use "thinking.type.enabled" with "budget_tokens" for extended thinking.'),
    Case("thinking.disabled-opus-5-5", body("claude-opus-5-5", thinking={"type": "disabled"}),
         '"thinking.type.disabled" is not supported for this model. ' + _ADAPTIVE),
    Case("thinking.disabled-between-tools", body("claude-sonnet-5-5", thinking={"type": "disabled"}),
         '"thinking.type.disabled" is not supported for this model. Use "thinking.type.between_tools" for the lowest '
         'thinking setting, or "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'),
    Case("effort.level", body("claude-opus-4-7", output_config={"effort": "extreme"}),
         "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"),
    Case("effort.unsupported-model", body("claude-haiku-4-5", output_config={"effort": "low"}),
         "output_config.effort: effort is not supported for this model."),
    Case("effort.model-level", body("claude-opus-4-5", output_config={"effort": "max"}),
         'output_config.effort: "max" is not supported for this model. Supported values: low, medium, high.'),
    Case("effort.model-level", body("claude-sonnet-4-6", output_config={"effort": "xhigh"}),
         'output_config.effort: "xhigh" is not supported for this model. Supported values: low, medium, high, max.'),
    Case("thinking.disabled-effort", body("claude-opus-5", thinking={"type": "disabled"},
                                          output_config={"effort": "max"}),
         '"thinking.type.disabled" is only supported with "output_config.effort" high or below.'),
    Case("thinking.disabled-effort", body("claude-haiku-5-5", thinking={"type": "disabled"},
                                          output_config={"effort": "xhigh"}),
         '"thinking.type.disabled" is only supported with "output_config.effort" high or below.'),
    Case("thinking.between-tools-effort", body("claude-sonnet-5-5", thinking={"type": "between_tools"},
                                               output_config={"effort": "max"}),
         '"thinking.type.between_tools" is only supported with "output_config.effort" low, medium or high.'),
    Case("sampling.temperature-with-thinking", body(thinking=THINK, temperature=0.5),
         "`temperature` may only be set to 1 when thinking is enabled or in interleaved thinking mode. Please consult "
         f"our documentation at {DOCS}#feature-compatibility"),
    Case("sampling.top-k-with-thinking", body(thinking=THINK, top_k=5),
         f"`top_k` may not be set when thinking is enabled. Please consult our documentation at {DOCS}"
         "#feature-compatibility"),
    Case("sampling.top-p-with-thinking", body(thinking=THINK, top_p=0.5),
         "`top_p` must be between 0.95 and 1 when thinking is enabled. Please consult our documentation at "
         f"{DOCS}#feature-compatibility"),
    # ------------------------------------------------------------------------------------------ history
    Case("history.prefill", body(messages=user() + [{"role": "assistant", "content": "Sure"}]),
         "This model does not support assistant message prefill. The conversation must end with a user message."),
    Case("history.prefill", body("claude-haiku-5-5", messages=user() + [{"role": "assistant", "content": "Sure"}]),
         "This model does not support assistant message prefill. The conversation must end with a user message."),
    Case("history.tool-use-id", body(messages=loop([USE | {"id": "tool.1"}], [RESULT | {"tool_use_id": "tool.1"}])),
         "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"),
    Case("history.tool-use-unique", body(messages=loop([USE]) + [
        {"role": "assistant", "content": [USE]}, {"role": "user", "content": [RESULT]}]),
         "messages.3.content.0: `tool_use` ids must be unique"),
    Case("history.result-without-call", body(messages=loop([USE], [RESULT, RESULT | {"tool_use_id": "toolu_b"}])),
         "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_b. Each `tool_result` "
         "block must have a corresponding `tool_use` block in the previous message."),
    Case("history.result-twice", body(messages=loop([USE], [RESULT, RESULT])),
         "messages.2.content.1: each tool_use must have a single result. Found multiple `tool_result` blocks with "
         "id: toolu_a"),
    Case("history.call-without-result", body(messages=loop([USE], [{"type": "text", "text": "no result"}])),
         "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. Each "
         "`tool_use` block must have a corresponding `tool_result` block in the next message."),
    Case("history.results-first", body(messages=loop([USE], [{"type": "text", "text": "here"}]) + [
        {"role": "user", "content": [RESULT]}]),
         "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. Messages following "
         "`tool_use` blocks must begin with a matching number of `tool_result` blocks."),
    Case("history.thinking-first", body(thinking=THINK, messages=loop([{"type": "text", "text": "x"}, _SIGNED, USE])),
         "messages.1.content.0: If an assistant message contains any thinking blocks, the first block must be "
         "thinking or redacted_thinking. Found text."),
    Case("history.thinking-last", body(_THINK_LOOP, thinking=THINK, messages=user() + [
        {"role": "assistant", "content": [_SIGNED]}]),
         "messages.1: The final block in an assistant message cannot be `thinking`."),
    Case("history.thinking-when-off", body(_THINK_LOOP, messages=user() + [
        {"role": "assistant", "content": [_SIGNED, {"type": "text", "text": "so"}]}]),
         "messages.1.content.0: When thinking is disabled, an `assistant` message in the final position cannot "
         "contain `thinking`. To use thinking blocks, enable `thinking` in your request."),
    Case("history.tool-loop-thinking", body(_THINK_LOOP, thinking=THINK, messages=loop([
        {"type": "text", "text": "x"}, USE])),
         "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is "
         "enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
         "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To "
         f"avoid this requirement, disable `thinking`. Please consult our documentation at {DOCS}"),
    Case("thinking-block.fields", body(_THINK_LOOP, thinking=THINK, messages=loop([
        {"type": "thinking", "thinking": "t"}, USE])), "messages.1.content.0.thinking.signature: Field required"),
    Case("thinking-block.modified", body(_THINK_LOOP, thinking=THINK, messages=loop([_SIGNED, USE])),
         "messages.1.content.0: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be "
         "modified. These blocks must remain as they were in the original response."),
    Case("thinking-block.signature", body(_THINK_LOOP, messages=[
        {"role": "user", "content": "a"}, {"role": "assistant", "content": [_SIGNED, {"type": "text", "text": "b"}]},
        {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}, {"role": "user", "content": "e"}]),
         "messages.1.content.0: Invalid `signature` in `thinking` block"),
    # ------------------------------------------------------------------------------------------ caching
    Case("cache.type", body(system=[{"type": "text", "text": "s", "cache_control": {"type": "persistent"}}]),
         "system.0.cache_control.type: Input should be 'ephemeral'"),
    Case("cache.fields", body(system=[{"type": "text", "text": "s", "cache_control": {
        "type": "ephemeral", "scope": "org"}}]), "system.0.cache_control.scope: Extra inputs are not permitted"),
    Case("cache.ttl", body(system=[{"type": "text", "text": "s", "cache_control": {"type": "ephemeral",
                                                                                    "ttl": "10m"}}]),
         "system.0.cache_control.ttl: Input should be '5m' or '1h'"),
    Case("cache.thinking", body(_THINK_LOOP, thinking=THINK, messages=loop([
        _SIGNED | {"cache_control": {"type": "ephemeral"}}, USE])),
         "messages.1.content.0.thinking.cache_control: Extra inputs are not permitted"),
    Case("cache.ttl-order", body(tools=[BASH | {"cache_control": {"type": "ephemeral"}}], system=[
        {"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]),
         "system.0: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that "
         "blocks are processed in the following order: `tools`, `system`, `messages`."),
    Case("cache.count", body(messages=[{"role": "user", "content": [
        {"type": "text", "text": f"b{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)]}]),
         "A maximum of 4 blocks with cache_control may be provided. Found 5."),
]
