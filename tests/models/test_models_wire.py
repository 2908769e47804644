"""Request building and the shared token / cache arithmetic."""

from __future__ import annotations

from coder.models.types import (
    Message,
    ModelRequest,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from coder.models.wire import (
    PrefixCache,
    Segment,
    build_anthropic_body,
    chunk_text,
    server_tool_supported,
)
from coder_testkit.fake_rules import check_messages

EDIT = ToolSpec("str_replace_based_edit_tool", "Edit files.", {"type": "object"}, "text_editor_20250728")


def test_server_tool_types_only_for_models_trained_on_them() -> None:
    assert server_tool_supported("bash_20250124", "claude-sonnet-4-5-20250929")
    assert server_tool_supported("bash_20250124", "claude-3-7-sonnet-latest")
    assert server_tool_supported("text_editor_20250728", "claude-opus-4-1")
    assert not server_tool_supported("text_editor_20250728", "claude-3-7-sonnet-latest")
    assert not server_tool_supported("bash_20250124", "claude-3-haiku-20240307")
    assert not server_tool_supported("bash_20250124", "qwen2.5-coder")
    body = build_anthropic_body(ModelRequest("s", [Message.user_text("x")], [EDIT]), "claude-haiku-4-5")
    assert body["tools"][0] == {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool",
                                "cache_control": {"type": "ephemeral"}}


def test_breakpoints_skip_thinking_and_empty_text_is_dropped() -> None:
    messages = [Message.user_text("q"),
                Message("assistant", [TextBlock(""), ToolUseBlock("t", "bash", {}), ThinkingBlock("x", "s")])]
    body = build_anthropic_body(ModelRequest("", messages, cache_breakpoints=[1, 7]), "claude-sonnet-4-5")
    content = body["messages"][1]["content"]
    assert [b["type"] for b in content] == ["tool_use", "thinking"]
    assert content[0]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in content[1]
    assert "system" not in body


def test_thinking_settings() -> None:
    request = ModelRequest("s", [Message.user_text("q")], max_tokens=1000, thinking_budget=500, temperature=0.2)
    body = build_anthropic_body(request, "claude-sonnet-4-5")
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] > 1024 and "temperature" not in body
    assert build_anthropic_body(request, "claude-opus-4-6")["thinking"] == {"type": "adaptive"}
    plain = build_anthropic_body(ModelRequest("s", [Message.user_text("q")], temperature=0.2), "claude-haiku-4-5")
    assert plain["temperature"] == 0.2 and "thinking" not in plain


def test_redacted_thinking_round_trips() -> None:
    message = Message("assistant", [RedactedThinkingBlock("ENCRYPTED"), TextBlock("hi")])
    assert Message.from_dict(message.to_dict()) == message
    body = build_anthropic_body(ModelRequest("", [Message.user_text("q"), message]), "claude-sonnet-4-5")
    assert body["messages"][1]["content"][0] == {"type": "redacted_thinking", "data": "ENCRYPTED"}


def test_prefix_cache_arithmetic() -> None:
    def segs(*spec: tuple[str, bool]) -> list[Segment]:
        return [Segment(text, 10, mark) for text, mark in spec]

    cache = PrefixCache()
    first = cache.account(segs(("a", False), ("b", True), ("c", False)))
    assert (first.input_tokens, first.cache_write_tokens, first.cache_read_tokens) == (10, 20, 0)
    second = cache.account(segs(("a", False), ("b", False), ("c", False), ("d", True), ("e", False)))
    assert (second.input_tokens, second.cache_write_tokens, second.cache_read_tokens) == (10, 20, 20)
    changed = cache.account(segs(("X", False), ("b", True)))
    assert changed.cache_read_tokens == 0 and changed.cache_write_tokens == 20


def test_chunk_text_keeps_every_character() -> None:
    text = "Hello   world,\nthis is  a test "
    pieces = chunk_text(text)
    assert "".join(pieces) == text and 1 < len(pieces) <= 3
    assert chunk_text("") == []


def test_a_server_type_under_another_name_falls_back_to_the_schema() -> None:
    odd = ToolSpec("shell", "Run.", {"type": "object"}, "bash_20250124")
    body = build_anthropic_body(ModelRequest("s", [Message.user_text("x")], [odd]), "claude-sonnet-4-5")
    assert body["tools"][0]["name"] == "shell" and body["tools"][0]["input_schema"] == {"type": "object"}


def test_a_tool_reference_is_sent_only_for_a_tool_the_request_defers() -> None:
    """A history's load names tools whatever the route; the request keeps a reference only to a tool it marks
    `defer_loading` (the API refuses any other), and a result left without one keeps its text or says what it
    loaded. The fake server's rules judge the bodies; the control shows them refusing the unrepaired one."""
    tools = [ToolSpec("bash", "Run.", {"type": "object"}), EDIT,
             ToolSpec("task", "Start an agent.", {"type": "object"}, deferred=True),
             ToolSpec("mcp/odd name", "An MCP tool.", {"type": "object"}, deferred=True)]
    loads = {"whole": ["str_replace_based_edit_tool"], "gone": ["mcp__removed__tool"], "deferred": ["task"],
             "mixed": ["str_replace_based_edit_tool", "mcp/odd name", "mcp__removed__tool"], "silent": ["bash"]}
    messages = [Message.user_text("go")]
    for key, names in loads.items():
        messages += [Message("assistant", [ToolUseBlock(key, "tool_search", {"query": "select:" + ",".join(names)})]),
                     Message("user", [ToolResultBlock(key, "" if key == "silent" else f"Loaded {key}.",
                                                      tool_references=names)])]
    request = ModelRequest("s", messages, tools)
    body = build_anthropic_body(request, "claude-sonnet-4-6")
    sent = {m["content"][0]["tool_use_id"]: m["content"][0]["content"] for m in body["messages"][2::2]}
    odd = next(t["name"] for t in body["tools"] if t["name"].startswith("mcp_odd_name_"))
    assert sent == {"whole": "Loaded whole.", "gone": "Loaded gone.",
                    "deferred": [{"type": "tool_reference", "tool_name": "task"}],
                    "mixed": [{"type": "tool_reference", "tool_name": odd}], "silent": "Loaded: bash"}
    assert check_messages(body) is None
    assert build_anthropic_body(request, "claude-sonnet-4-6") == body, "the same history, the same bytes"
    assert request.messages == messages and messages[2].content[0].tool_references == loads["whole"], "kept"
    body["messages"][2]["content"][0]["content"] = [{"type": "tool_reference",
                                                     "tool_name": "str_replace_based_edit_tool"}]
    refused = check_messages(body)
    assert refused is not None and refused.rule.id == "tool-reference.unresolved", refused
