"""coder/models/server_blocks.py: which server tool blocks a request sends as the API gave them and which as text,
for every shape a history can take (a turn paused or cut, rewound, resumed, compacted), each body checked by the
fake server's rules; and the web search domain format the config enforces."""

from __future__ import annotations

import pytest

from coder.models.server_blocks import domain_problem, settle
from coder.models.types import (
    Message,
    ModelRequest,
    ServerToolBlock,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from coder.models.wire import build_anthropic_body
from coder_testkit.fake_rules import check_messages

SEARCH = ToolSpec("web_search", "Search.", {"type": "object", "properties": {}}, anthropic_type="web_search_20250305",
                  server_params={"max_uses": 5})
BASH = ToolSpec("bash", "Run.", {"type": "object", "properties": {"command": {"type": "string"}}},
                anthropic_type="bash_20250124")
USE = ServerToolBlock({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}})
FOUND = ServerToolBlock({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
    {"type": "web_search_result", "url": "https://a.test/x", "title": "X", "encrypted_content": "e"}]})
CALL = ToolUseBlock("toolu_1", "bash", {"command": "ls"})
RESULTS = Message("user", [ToolResultBlock("toolu_1", "a.txt")])


def user(text: str) -> Message:
    return Message.user_text(text)


def kinds(messages: list[Message]) -> list[list[str]]:
    return [[b.data["type"] if isinstance(b, ServerToolBlock) else b.type for b in m.content] for m in messages]


# (history, what stays a server block) for each shape; text stands for a block sent as text
SHAPES = {
    "paused, sent back": ([user("go"), Message("assistant", [USE])], [["text"], ["server_tool_use"]]),
    "paused, then talked over": ([user("go"), Message("assistant", [USE]), user("stop")],
                                 [["text"], ["text"], ["text"]]),
    "mixed, continued": ([user("go"), Message("assistant", [USE, CALL]), RESULTS],
                         [["text"], ["server_tool_use", "tool_use"], ["tool_result"]]),
    "mixed, cut then a new message": ([user("go"), Message("assistant", [USE, CALL]), RESULTS, user("next")],
                                      [["text"], ["text", "tool_use"], ["tool_result"], ["text"]]),
    "mixed, text merged into the results": ([user("go"), Message("assistant", [USE, CALL]),
                                             Message("user", [*RESULTS.content, TextBlock("next")])],
                                            [["text"], ["text", "tool_use"], ["tool_result", "text"]]),
    "mixed, then the result opened the answer": (
        [user("go"), Message("assistant", [USE, CALL]), RESULTS, Message("assistant", [FOUND, TextBlock("ok")]),
         user("thanks")],
        [["text"], ["server_tool_use", "tool_use"], ["tool_result"], ["web_search_tool_result", "text"], ["text"]]),
    "complete in one answer": ([user("go"), Message("assistant", [USE, FOUND, TextBlock("ok")]), user("more")],
                               [["text"], ["server_tool_use", "web_search_tool_result", "text"], ["text"]]),
    "a result whose call was compacted away": ([user("go"), Message("assistant", [FOUND, TextBlock("ok")]),
                                                user("more")], [["text"], ["text", "text"], ["text"]]),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_each_history_shape_settles_into_a_body_the_api_takes(name: str) -> None:
    history, expected = SHAPES[name]
    assert kinds(settle(history, {"web_search"})) == expected
    body = build_anthropic_body(ModelRequest("s", history, [BASH, SEARCH]), "claude-sonnet-4-6")
    assert check_messages(body) is None, (name, check_messages(body))


def test_without_the_tool_every_block_goes_as_text_and_says_what_was_found() -> None:
    history = [user("go"), Message("assistant", [USE, FOUND, TextBlock("ok")]), user("more")]
    settled = settle(history, set())
    texts = [b.text for b in settled[1].content if isinstance(b, TextBlock)]
    assert texts[0] == '[web_search call {"query":"q"}]' and "1. X <https://a.test/x>" in texts[1]
    body = build_anthropic_body(ModelRequest("s", history, [BASH]), "claude-sonnet-4-6")
    assert check_messages(body) is None and "server_tool_use" not in str(body)
    assert settle(history, {"web_search"})[0] is history[0], "untouched messages are the same objects"


@pytest.mark.parametrize(("entry", "problem"), [
    ("example.com", None), ("docs.example.com/guide/*", None), ("example.com/*/articles", None),
    ("https://spam.example.com", "has a scheme"), ("*.ads.example.net", "a * in the domain"),
    ("ex*.com", "a * in the domain"), ("example.com/*/news/*", "more than one *"), ("аmazon.com", "not ASCII"),
    ("localhost", "not a domain name"), ("example.com:8080", "not a domain name"), ("", "empty"),
    (" example.com", "spaces"),
])
def test_the_domain_format(entry: str, problem: str | None) -> None:
    found = domain_problem(entry)
    assert (found is None) if problem is None else (found is not None and problem in found)
    body = build_anthropic_body(ModelRequest("s", [user("go")], [BASH, SEARCH.__class__(
        **{**SEARCH.__dict__, "server_params": {"allowed_domains": [entry]}})]), "claude-sonnet-4-6")
    refused = check_messages(body)
    assert (refused is None) == (problem is None), refused
