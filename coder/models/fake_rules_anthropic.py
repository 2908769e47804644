"""The Messages API's request rules, as the fake server enforces them: `check_request(body)` returns the message
of the first 400 the real API would answer, or None. Written from Anthropic's documentation and the error bodies
the real API is known to return, and sharing no code with the client (coder/models/wire.py, the providers, the
client's model table): a misunderstanding in the client must not be copied into its judge.

Each rule names its source. "verbatim" marks a message copied from a real API answer quoted in public GitHub
issues; "closest" marks a message written from the documented wording where no real answer was found.

Sources (platform.claude.com/docs unless a full URL is given): [messages] en/api/messages (the request fields);
[tool-search] en/agents-and-tools/tool-use/tool-search-tool (`defer_loading`, `tool_reference` blocks);
[tools] en/agents-and-tools/tool-use/implement-tool-use ("name: must match ^[a-zA-Z0-9_-]{1,64}$", "input_schema:
a JSON Schema object"; "tool_result blocks must immediately follow their corresponding tool_use blocks ... In the
user message containing tool results, the tool_result blocks must come FIRST"); [caching]
en/build-with-claude/prompt-caching ("up to 4 cache breakpoints", "Thinking blocks cannot be cached directly with
cache_control", "longer TTL entries must appear before shorter ones"); [release] en/release-notes/api
(consecutive same-role messages are merged; the first message need not be a user message); [sampling] see
fake_model_facts. Thinking rules live in fake_rules_thinking.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from coder.models import fake_rules_thinking as thinking_rules
from coder.models.fake_model_facts import SERVER_TOOL_NAME, ModelFacts, facts_for

# [messages] the top-level fields of POST /v1/messages (and of /v1/messages/count_tokens)
MESSAGES_FIELDS = frozenset({
    "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream", "temperature", "top_p",
    "top_k", "tools", "tool_choice", "thinking", "service_tier", "container", "mcp_servers", "context_management",
    "output_config", "output_format", "inference_geo", "cache_control", "fallbacks",
})
COUNT_TOKENS_FIELDS = frozenset({
    "model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "context_management",
    "output_config", "output_format", "cache_control",
})
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # [tools]; the live API has since been seen with {1,128}
_TOOL_USE_ID = re.compile(r"^[a-zA-Z0-9_-]+$")  # verbatim pattern (anomalyco/opencode#1279)
_SERVER_FAMILIES = ("bash_", "text_editor_")  # the server tools coder sends; other server tools are not policed

Rule = Callable[[dict[str, Any], ModelFacts, bool], "str | None"]


def check_request(body: Any, *, count_tokens: bool = False) -> str | None:
    """The first reason the real Messages API would answer 400 invalid_request_error, or None."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"  # closest
    model = body.get("model")
    facts = facts_for(model) if isinstance(model, str) else facts_for("")
    for rule in _RULES:
        problem = rule(body, facts, count_tokens)
        if problem:
            return problem
    return None


# ------------------------------------------------------------------------------------------- top level


def _fields(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    allowed = COUNT_TOKENS_FIELDS if count_tokens else MESSAGES_FIELDS
    for key in body:
        if key not in allowed:
            return f"{key}: Extra inputs are not permitted"  # verbatim (pydantic form the API answers with)
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"  # verbatim
    if not isinstance(body.get("messages"), list):
        return "messages: Field required"  # verbatim
    if count_tokens:
        return None
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        return "max_tokens: Field required"  # verbatim
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"  # verbatim (pydantic)
    if facts.known and max_tokens > facts.max_output:
        # [overview] per-model "Max output"; verbatim (anthropics/claude-code#24451)
        return (f"max_tokens: {max_tokens} > {facts.max_output}, which is the maximum allowed number of output "
                f"tokens for {body['model']}")
    return None


def _thinking(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    return (thinking_rules.check_config(body, facts, count_tokens=count_tokens)
            or thinking_rules.check_tool_choice(body, facts))


def _sampling(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    temperature = body.get("temperature")
    if isinstance(temperature, (int, float)) and not 0 <= temperature <= 1:
        return "temperature: Input should be less than or equal to 1"  # verbatim (pydantic)
    if not facts.sampling:
        # [sampling] "non-default sampling parameters return 400"; closest
        for key in ("temperature", "top_p", "top_k"):
            if key in body and not (key == "temperature" and body[key] == 1):
                return f"`{key}` is deprecated for this model."
    if "temperature" in body and "top_p" in body:
        # verbatim (browseros-ai/BrowserOS#208, Claude Sonnet 4.5)
        return "temperature and top_p cannot both be specified for this model. Please use only one."
    if temperature is not None and temperature != 1 and thinking_rules.thinking_active(body, facts):
        # [thinking] "Feature compatibility: thinking isn't compatible with temperature or top_k modifications";
        # closest
        return ("`temperature` may only be set to 1 when thinking is enabled or in interleaved thinking mode. "
                "Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/"
                "extended-thinking#feature-compatibility")
    return None


def _system(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    system = body.get("system")
    if isinstance(system, list):
        for block in system:
            problem = _text_problem(block, "system")
            if problem:
                return problem
    return None


# ----------------------------------------------------------------------------------------------- tools


def _tools(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    names: set[str] = set()
    tools = body.get("tools") or []
    if tools and all(isinstance(t, dict) and t.get("defer_loading") is True for t in tools):
        # [tool-search] "at least one tool must be non-deferred"; closest
        return "tools: At least one tool must not have defer_loading set (the tool search itself is never deferred)."
    for i, tool in enumerate(tools):
        kind = tool.get("type")
        if kind in (None, "custom"):
            problem = _custom_tool(i, tool)
        elif kind.startswith(_SERVER_FAMILIES):
            problem = _server_tool(i, tool, kind, facts, body["model"])
        else:
            problem = None
        if problem:
            return problem
        name = tool.get("name")
        if name in names:
            return "tools: Tool names must be unique."  # verbatim
        names.add(name)
    return None


def _custom_tool(i: int, tool: dict[str, Any]) -> str | None:
    if "defer_loading" in tool and not isinstance(tool["defer_loading"], bool):
        return f"tools.{i}.custom.defer_loading: Input should be a valid boolean"  # closest (pydantic)
    name = tool.get("name")
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        # [tools] verbatim (cyanheads/atlas-mcp-server#14)
        return f"tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
    schema = tool.get("input_schema")
    if not isinstance(schema, dict):
        return f"tools.{i}.custom.input_schema: Field required"  # verbatim (pydantic)
    if schema.get("type") != "object":
        return f"tools.{i}.custom.input_schema.type: Input should be 'object'"  # [tools]; closest
    if any(key in schema for key in ("oneOf", "allOf", "anyOf")):
        # verbatim (anthropics/claude-code#5319)
        return f"tools.{i}.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"
    return None


def _server_tool(i: int, tool: dict[str, Any], kind: str, facts: ModelFacts, model: str) -> str | None:
    if kind not in SERVER_TOOL_NAME:
        # closest: the tagged-union wording for an unknown `type`
        return f"tools.{i}: Input tag '{kind}' found using 'type' does not match any of the expected tags"
    if tool.get("name") != SERVER_TOOL_NAME[kind]:
        return f"tools.{i}.{kind}.name: Input should be '{SERVER_TOOL_NAME[kind]}'"  # [bash]/[editor]; closest
    if facts.known and kind not in facts.server_tools:
        # [editor] "Older tool versions are not guaranteed to be backwards-compatible with newer models"; closest
        return f"tools.{i}: '{kind}' is not supported by {model}. Use the tool version made for this model."
    return None


def _tool_references(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    """[tool-search] a `tool_reference` (in a tool_result's content) names a tool of `tools` marked
    `defer_loading`; the API expands it into that definition. Any other name cannot be resolved."""
    deferred = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict) and t.get("defer_loading")}
    for i, message in enumerate(body["messages"]):
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            inner = block.get("content") if isinstance(block, dict) and block.get("type") == "tool_result" else None
            for ref in inner if isinstance(inner, list) else []:
                if isinstance(ref, dict) and ref.get("type") == "tool_reference" and \
                        ref.get("tool_name") not in deferred:
                    # closest: the documented `tool_reference_unresolved` error
                    return (f"messages.{i}: tool_reference '{ref.get('tool_name')}' does not match any tool with "
                            "defer_loading in tools")
    return None


# -------------------------------------------------------------------------------------------- messages


def _text_problem(block: Any, where: str) -> str | None:
    if isinstance(block, dict) and block.get("type") == "text":
        text = block.get("text")
        if not isinstance(text, str) or not text:
            return f"{where}: text content blocks must be non-empty"  # verbatim (stackblitz/bolt.new#7426)
        if not text.strip():
            return f"{where}: text content blocks must contain non-whitespace text"  # verbatim (claude-code#23440)
    return None


def _messages(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    messages = body["messages"]
    if not messages:
        return "messages: List should have at least 1 item after validation, not 0"  # verbatim (pydantic)
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"  # verbatim (pydantic)
        content = message.get("content")
        if not isinstance(content, (str, list)):
            return f"messages.{i}.content: Field required"  # verbatim (pydantic)
        for j, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                return f"messages.{i}.content.{j}: Input should be a valid dictionary or object"  # closest (pydantic)
        final_assistant = i == len(messages) - 1 and message["role"] == "assistant"
        if final_assistant and not facts.prefill:
            # [haiku55] "Assistant message prefill returns an error: end messages with a user turn"; closest
            return f"messages.{i}: Prefilling the assistant message is not supported for this model."
        if content in ("", []) and not final_assistant:
            # verbatim
            return (f"messages.{i}: all messages must have non-empty content except for the optional final "
                    "assistant message")
        for block in content if isinstance(content, list) else []:
            inner = block.get("content") if isinstance(block, dict) and block.get("type") == "tool_result" else None
            for candidate in [block] + (inner if isinstance(inner, list) else []):
                problem = _text_problem(candidate, "messages")
                if problem:
                    return problem
    return None


def _tool_ids(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    seen: set[str] = set()
    for i, message in enumerate(body["messages"]):
        for j, block in enumerate(message["content"] if isinstance(message["content"], list) else []):
            if block.get("type") != "tool_use":
                continue
            block_id = block.get("id")
            if not isinstance(block_id, str) or not _TOOL_USE_ID.match(block_id):
                # verbatim (anomalyco/opencode#1279)
                return f"messages.{i}.content.{j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
            if block_id in seen:
                return f"messages.{i}.content.{j}: `tool_use` ids must be unique"  # verbatim (claude-code#21317)
            seen.add(block_id)
    return None


def _groups(messages: list[dict[str, Any]]) -> list[tuple[int, str, list[Any]]]:
    """[release] consecutive messages of one role are merged into one: (index of the first, role, blocks)."""
    out: list[tuple[int, str, list[Any]]] = []
    for i, message in enumerate(messages):
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if out and out[-1][1] == message["role"]:
            out[-1][2].extend(blocks)
        else:
            out.append((i, message["role"], blocks))
    return out


def _pairing(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    """[tools] every tool_use is answered by a tool_result in the next (user) message, results first, one each."""
    groups = _groups(body["messages"])
    for g, (index, role, blocks) in enumerate(groups):
        previous = groups[g - 1] if g > 0 else None
        if role == "user":
            known = {b.get("id") for b in previous[2] if b.get("type") == "tool_use"} if previous else set()
            answered: set[str] = set()
            for j, block in enumerate(blocks):
                if block.get("type") != "tool_result":
                    continue
                use_id = block.get("tool_use_id")
                if use_id not in known:
                    # verbatim (anthropics/claude-code#13460)
                    return (f"messages.{index}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                            f"{use_id}. Each `tool_result` block must have a corresponding `tool_use` block in the "
                            "previous message.")
                if use_id in answered:
                    # closest
                    return (f"messages.{index}.content.{j}: each tool_use must have a single result. Found "
                            f"multiple `tool_result` blocks with id: {use_id}")
                answered.add(use_id)
            continue
        ids = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
        if not ids:
            continue
        following = groups[g + 1][2] if g + 1 < len(groups) else []
        results = [b.get("tool_use_id") for b in following if b.get("type") == "tool_result"]
        missing = [x for x in ids if x not in results]
        at = groups[g + 1][0] if g + 1 < len(groups) else index + 1
        if missing:
            # verbatim (anthropics/claude-code#3512)
            return (f"messages.{at}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(missing)}. Each `tool_use` block must have a corresponding `tool_result` block in "
                    "the next message.")
        if any(b.get("type") != "tool_result" for b in following[: len(ids)]):
            # verbatim (anthropics/anthropic-sdk-typescript#653)
            return (f"messages.{at}: Did not find {len(ids)} `tool_result` block(s) at the beginning of this "
                    "message. Messages following `tool_use` blocks must begin with a matching number of "
                    "`tool_result` blocks.")
    return None


def _thinking_blocks(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    return thinking_rules.check_blocks(body, facts) or thinking_rules.check_signatures(body, facts)


# ------------------------------------------------------------------------------------------------ caching


def _cache_marks(body: dict[str, Any]) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(path, block type, cache_control) in the order the API processes them: tools, system, messages."""
    marks: list[tuple[str, str | None, dict[str, Any]]] = []
    if "cache_control" in body:
        marks.append(("cache_control", None, body["cache_control"]))
    for i, tool in enumerate(body.get("tools") or []):
        if "cache_control" in tool:
            marks.append((f"tools.{i}", tool.get("type"), tool["cache_control"]))
    system = body.get("system")
    for i, block in enumerate(system if isinstance(system, list) else []):
        if "cache_control" in block:
            marks.append((f"system.{i}", block.get("type"), block["cache_control"]))
    for i, message in enumerate(body["messages"]):
        for j, block in enumerate(message["content"] if isinstance(message["content"], list) else []):
            if "cache_control" in block:
                marks.append((f"messages.{i}.content.{j}", block.get("type"), block["cache_control"]))
            inner = block.get("content") if block.get("type") == "tool_result" else None
            for k, sub in enumerate(inner if isinstance(inner, list) else []):
                if isinstance(sub, dict) and "cache_control" in sub:
                    marks.append((f"messages.{i}.content.{j}.content.{k}", sub.get("type"), sub["cache_control"]))
    return marks


def _caching(body: dict[str, Any], facts: ModelFacts, count_tokens: bool) -> str | None:
    marks = _cache_marks(body)
    seen_short = False
    for path, kind, control in marks:
        if not isinstance(control, dict) or control.get("type") != "ephemeral":
            return f"{path}.cache_control.type: Input should be 'ephemeral'"  # [caching]; closest (pydantic)
        extra = set(control) - {"type", "ttl"}
        if extra:
            return f"{path}.cache_control.{sorted(extra)[0]}: Extra inputs are not permitted"  # closest (pydantic)
        ttl = control.get("ttl", "5m")
        if ttl not in ("5m", "1h"):
            return f"{path}.cache_control.ttl: Input should be '5m' or '1h'"  # [caching]; closest (pydantic)
        if kind in ("thinking", "redacted_thinking"):
            return f"{path}.{kind}.cache_control: Extra inputs are not permitted"  # [caching]; closest
        if ttl == "1h" and seen_short:
            # [caching] "longer TTL entries must appear before shorter TTLs"; closest
            return (f"{path}: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. "
                    "Note that blocks are processed in the following order: `tools`, `system`, `messages`.")
        seen_short = seen_short or ttl == "5m"
    if len(marks) > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {len(marks)}."  # verbatim
    return None


# Shape first (what the API's schema validation refuses), then the conversation's semantics.
_RULES: tuple[Rule, ...] = (_fields, _thinking, _sampling, _system, _tools, _messages, _tool_references, _caching,
                            _tool_ids, _pairing, _thinking_blocks)
