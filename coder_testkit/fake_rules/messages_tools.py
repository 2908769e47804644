"""Messages API rules on tool definitions and `tool_choice` ([define-tools], the server tools' pages).

Server tools are a table (SERVER_TOOLS): the name each type must be declared with, whether the model must list
the version (the bash and text-editor versions are per model), and any rules of its own fields. Issue 35 adds web
search and web fetch rules there."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coder.models.model_table import server_tool_names
from coder_testkit.fake_rules.book import (
    ANTHROPIC_SDK,
    BASH_TOOL,
    EDITOR_TOOL,
    ERRORS,
    THINKING,
    TOOL_SEARCH,
    TOOLS,
    WEB_SEARCH,
    Found,
    Rules,
)
from coder_testkit.fake_rules.context import MessagesCall

RULES: Rules[MessagesCall] = Rules()

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # [define-tools] "name: must match ^[a-zA-Z0-9_-]{1,64}$"
TOOL_CHOICE_TYPES = ("auto", "any", "tool", "none")  # [define-tools] / the SDK's ToolChoiceParam
FORCED = ("any", "tool")


@dataclass(frozen=True)
class ServerTool:
    """A tool type Anthropic defines: the name it must be declared with, and whether the model must list its
    version (coder_testkit.fake_rules.facts ModelFacts.server_tools: the bash and text-editor versions)."""

    name: str
    versioned: bool = False


#: every server tool type and its fixed name: the API's vocabulary, kept once in the model table's data
#: ([bash-tool], [text-editor-tool], the SDK's ToolUnionParam)
SERVER_TOOLS: dict[str, ServerTool] = {kind: ServerTool(name, kind.startswith(("bash_", "text_editor_")))
                                       for kind, name in server_tool_names().items()}


def _tools(call: MessagesCall) -> list[tuple[int, dict[str, Any]]]:
    tools = call.body.get("tools")
    return [(i, t) for i, t in enumerate(tools) if isinstance(t, dict)] if isinstance(tools, list) else []


def _custom(call: MessagesCall) -> list[tuple[int, dict[str, Any]]]:
    return [(i, t) for i, t in _tools(call) if t.get("type") in (None, "custom")]


def _server(call: MessagesCall) -> list[tuple[int, dict[str, Any]]]:
    return [(i, t) for i, t in _tools(call) if t.get("type") not in (None, "custom")]


def _each(items: list[tuple[int, dict[str, Any]]], broken: Callable[[int, dict[str, Any]], Found]) -> Found:
    for i, tool in items:
        fields = broken(i, tool)
        if fields is not None:
            return fields
    return None


@RULES.rule("tools.list", "`tools` is a list of objects", "tools: Input should be a valid list", ANTHROPIC_SDK,
            "schema")
def _tools_list(call: MessagesCall) -> Found:
    tools = call.body.get("tools")
    return {} if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)) \
        else None


@RULES.rule("tools.type", "every tool is a custom tool or a server tool type the API defines",
            "tools.{index}: Input tag '{tag}' found using 'type' does not match any of the expected tags: {tags}",
            ANTHROPIC_SDK, "closest")
def _tool_type(call: MessagesCall) -> Found:
    tags = ", ".join(f"'{t}'" for t in sorted([*SERVER_TOOLS, "custom"]))
    return _each(_server(call), lambda i, t: {"index": i, "tag": t.get("type"), "tags": tags}
                 if t.get("type") not in SERVER_TOOLS else None)


@RULES.rule("tools.custom-name", "a custom tool's name matches ^[a-zA-Z0-9_-]{1,64}$",
            "tools.{index}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'", TOOLS, "seen",
            seen="https://github.com/cyanheads/atlas-mcp-server/issues/14")
def _custom_name(call: MessagesCall) -> Found:
    return _each(_custom(call), lambda i, t: {"index": i}
                 if not isinstance(t.get("name"), str) or not _TOOL_NAME.match(t["name"]) else None)


@RULES.rule("tools.custom-description", "a custom tool's description is a string",
            "tools.{index}.custom.description: Input should be a valid string", ANTHROPIC_SDK, "schema")
def _custom_description(call: MessagesCall) -> Found:
    return _each(_custom(call), lambda i, t: {"index": i}
                 if "description" in t and not isinstance(t["description"], str) else None)


@RULES.rule("tools.input-schema", "a custom tool has an input_schema",
            "tools.{index}.custom.input_schema: Field required", TOOLS, "schema")
def _input_schema(call: MessagesCall) -> Found:
    return _each(_custom(call), lambda i, t: {"index": i} if not isinstance(t.get("input_schema"), dict) else None)


@RULES.rule("tools.input-schema-object", "a custom tool's input_schema is of type object",
            "tools.{index}.custom.input_schema.type: Input should be 'object'", TOOLS, "schema")
def _input_schema_object(call: MessagesCall) -> Found:
    return _each(_custom(call), lambda i, t: {"index": i} if t["input_schema"].get("type") != "object" else None)


@RULES.rule("tools.input-schema-union", "no oneOf / allOf / anyOf at the top level of input_schema",
            "tools.{index}.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level",
            TOOLS, "seen", seen="https://github.com/anthropics/claude-code/issues/5319")
def _input_schema_union(call: MessagesCall) -> Found:
    return _each(_custom(call), lambda i, t: {"index": i}
                 if any(k in t["input_schema"] for k in ("oneOf", "allOf", "anyOf")) else None)


@RULES.rule("tools.server-name", "a server tool is declared with the name its type defines",
            "tools.{index}.{tag}.name: Input should be '{name}'", BASH_TOOL, "schema")
def _server_name(call: MessagesCall) -> Found:
    def broken(i: int, tool: dict[str, Any]) -> Found:
        spec = SERVER_TOOLS[tool["type"]]
        return {"index": i, "tag": tool["type"], "name": spec.name} if tool.get("name") != spec.name else None
    return _each(_server(call), broken)


@RULES.rule("tools.server-version", "a bash / text-editor tool version is one the model takes",
            "tools.{index}: '{tag}' is not supported by {model}. Use the tool version made for this model.",
            EDITOR_TOOL, "closest")
def _server_version(call: MessagesCall) -> Found:
    def broken(i: int, tool: dict[str, Any]) -> Found:
        spec, kind = SERVER_TOOLS[tool["type"]], tool["type"]
        if spec.versioned and call.facts.known and kind not in call.facts.server_tools:
            return {"index": i, "tag": kind, "model": call.model}
        return None
    return _each(_server(call), broken)


@RULES.rule("tools.web-search-domains", "web search takes allowed_domains or blocked_domains, not both",
            "tools.{index}: Cannot specify both allowed_domains and blocked_domains.", WEB_SEARCH, "closest")
def _web_search_domains(call: MessagesCall) -> Found:
    return _each(_server(call), lambda i, t: {"index": i}
                 if SERVER_TOOLS[t["type"]].name == "web_search" and t.get("allowed_domains")
                 and t.get("blocked_domains") else None)


@RULES.rule("tools.defer-loading", "`defer_loading` is a boolean",
            "tools.{index}.custom.defer_loading: Input should be a valid boolean", TOOL_SEARCH, "schema")
def _defer_loading(call: MessagesCall) -> Found:
    return _each(_custom(call), lambda i, t: {"index": i}
                 if "defer_loading" in t and not isinstance(t["defer_loading"], bool) else None)


@RULES.rule("tools.not-all-deferred", "at least one tool is not deferred",
            "At least one tool must have defer_loading=false. All tools cannot be deferred.", TOOL_SEARCH,
            "documented")
def _not_all_deferred(call: MessagesCall) -> Found:
    tools = _tools(call)
    return {} if tools and all(t.get("defer_loading") is True for _, t in tools) else None


@RULES.rule("tools.unique-names", "tool names are unique", "tools: Tool names must be unique.", TOOLS, "seen",
            seen="https://github.com/danny-avila/LibreChat/issues/13162")
def _unique(call: MessagesCall) -> Found:
    names = [t.get("name") for _, t in _tools(call)]
    return {} if len(names) != len(set(map(str, names))) else None


# ---------------------------------------------------------------------------------------------- tool_choice


def _choice(call: MessagesCall) -> Any:
    return call.body.get("tool_choice")


@RULES.rule("tool-choice.object", "`tool_choice` is an object",
            "tool_choice: Input should be a valid dictionary or object to extract fields from", ANTHROPIC_SDK, "schema")
def _choice_object(call: MessagesCall) -> Found:
    return {} if "tool_choice" in call.body and not isinstance(_choice(call), dict) else None


@RULES.rule("tool-choice.type", "`tool_choice.type` is auto, any, tool or none",
            "tool_choice: Input tag '{tag}' found using 'type' does not match any of the expected tags: 'auto', "
            "'any', 'tool', 'none'", TOOLS, "schema")
def _choice_type(call: MessagesCall) -> Found:
    choice = _choice(call)
    return {"tag": choice.get("type")} if isinstance(choice, dict) and choice.get("type") not in TOOL_CHOICE_TYPES \
        else None


@RULES.rule("tool-choice.name", "`tool_choice` of type tool names the tool", "tool_choice.tool.name: Field required",
            TOOLS, "schema")
def _choice_name(call: MessagesCall) -> Found:
    choice = _choice(call)
    return {} if isinstance(choice, dict) and choice.get("type") == "tool" and not isinstance(choice.get("name"), str) \
        else None


@RULES.rule("tool-choice.fields", "`tool_choice` holds only its type's fields (disable_parallel_tool_use, and name "
            "for tool; none takes no other field)", "tool_choice.{tag}.{key}: Extra inputs are not permitted",
            ANTHROPIC_SDK, "schema")
def _choice_fields(call: MessagesCall) -> Found:
    choice = _choice(call) if isinstance(_choice(call), dict) else {}
    fields: dict[str, set[str]] = {"auto": {"disable_parallel_tool_use"}, "any": {"disable_parallel_tool_use"},
                                   "tool": {"name", "disable_parallel_tool_use"}, "none": set()}
    allowed = fields.get(str(choice.get("type")), set())
    extra = sorted(set(choice) - allowed - {"type"})
    return {"tag": choice["type"], "key": extra[0]} if choice and extra else None


@RULES.rule("tool-choice.parallel", "`disable_parallel_tool_use` is a boolean",
            "tool_choice.{tag}.disable_parallel_tool_use: Input should be a valid boolean", ANTHROPIC_SDK, "schema")
def _choice_parallel(call: MessagesCall) -> Found:
    choice = _choice(call) if isinstance(_choice(call), dict) else {}
    value = choice.get("disable_parallel_tool_use")
    return {"tag": choice["type"]} if value is not None and not isinstance(value, bool) else None


@RULES.rule("tool-choice.known-tool", "`tool_choice` of type tool names one of `tools`",
            "tool_choice.name: Tool '{name}' not found in provided tools", TOOLS, "closest")
def _choice_known(call: MessagesCall) -> Found:
    choice = _choice(call)
    if not isinstance(choice, dict) or choice.get("type") != "tool":
        return None
    names = {t.get("name") for _, t in _tools(call)}
    return {"name": choice["name"]} if choice["name"] not in names else None


@RULES.rule("tool-choice.forced-unsupported", "no forced tool use (any / tool) on Fable 5.1 / 5.2, Mythos 5.1 / 5.2, "
            "Opus 5.5 and Sonnet 5.5, count_tokens included",
            'tool_choice: type "tool" and "any" are not supported for this model.', ERRORS, "documented")
def _forced_unsupported(call: MessagesCall) -> Found:
    choice = _choice(call)
    forced = isinstance(choice, dict) and choice.get("type") in FORCED
    return {} if forced and not call.facts.forced_tool_choice else None


@RULES.rule("tool-choice.forced-with-thinking", "no forced tool use (any / tool) while thinking is enabled or "
            "adaptive: thinking supports only tool_choice auto or none",
            "Thinking may not be enabled when tool_choice forces tool use.", THINKING, "seen",
            seen="https://github.com/mastra-ai/mastra/issues/7507")
def _forced_with_thinking(call: MessagesCall) -> Found:
    choice = _choice(call)
    forced = isinstance(choice, dict) and choice.get("type") in FORCED
    return {} if forced and call.thinking_type in ("enabled", "adaptive") else None


@RULES.rule("tool-reference.unresolved", "a tool_reference (in a tool result) names a tool of `tools` marked "
            "defer_loading: the API expands it into that definition",
            "Tool reference '{name}' not found in available tools", TOOL_SEARCH, "documented")
def _tool_reference(call: MessagesCall) -> Found:
    deferred = {t.get("name") for _, t in _tools(call) if t.get("defer_loading")}
    for block in call.of_type("tool_reference"):
        if block.in_tool_result and block.block.get("tool_name") not in deferred:
            return {"index": block.message, "name": block.block.get("tool_name")}
    return None
