"""One broken Messages API body per rule of server tools and tools on demand (coder_testkit/fake_rules/
messages_server.py, issue 46), with the message the API answers with; and the valid shapes the same rules must let
through (a paused turn sent back to continue it, a mixed turn's results-only continuation, a result that opens the
next answer). test_models_fake_rule_table checks every rule has a case; test_models_fake_rules sends them."""

from __future__ import annotations

from typing import Any

from fake_rules_support import BASH, RESULT, USE, Case, body, user

SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
S_USE = {"type": "server_tool_use", "id": "srvtoolu_a", "name": "web_search", "input": {"query": "widget"}}
S_RESULT = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_a", "content": [
    {"type": "web_search_result", "url": "https://example.org/w", "title": "Widget", "encrypted_content": "e1"}]}
PAUSED = [{"role": "user", "content": "search"}, {"role": "assistant", "content": [S_USE]}]
#: a turn that called the search and a client tool together: the search waits for the client's results
MIXED = [{"role": "user", "content": "search and list"}, {"role": "assistant", "content": [S_USE, USE]},
         {"role": "user", "content": [RESULT]}]


def _search(**fields: Any) -> dict[str, Any]:
    return body(tools=[BASH, SEARCH | fields])


CASES: list[Case] = [
    Case("tools.custom-fields", body(tools=[BASH | {"parameters": {}}]),
         "tools.0.custom.parameters: Extra inputs are not permitted"),
    Case("tools.web-search-fields", _search(max_results=3),
         "tools.1.web_search_20250305.max_results: Extra inputs are not permitted"),
    Case("tools.web-search-max-uses", _search(max_uses="5"),
         "tools.1.web_search_20250305.max_uses: Input should be a valid integer"),
    Case("tools.web-search-max-uses", _search(max_uses=0),
         "tools.1.web_search_20250305.max_uses: Input should be greater than 0"),
    Case("tools.web-search-domain-list", _search(allowed_domains="example.org"),
         "tools.1.web_search_20250305.allowed_domains: Input should be a valid list of strings"),
    Case("tools.web-search-domain-format", _search(blocked_domains=["https://spam.example.com"]),
         "tools.1.web_search_20250305.blocked_domains: Invalid domain format: 'https://spam.example.com'. Domains must "
         "not include a scheme, and a wildcard (*) may only appear in the path after the domain."),
    Case("tools.web-search-domain-format", _search(blocked_domains=["*.ads.example.net"]),
         "tools.1.web_search_20250305.blocked_domains: Invalid domain format: '*.ads.example.net'. Domains must not "
         "include a scheme, and a wildcard (*) may only appear in the path after the domain."),
    Case("tools.deferred-cache-control", body(tools=[BASH, BASH | {"name": "grep", "defer_loading": True,
                                                                   "cache_control": {"type": "ephemeral"}}]),
         "tools.1: A tool with defer_loading cannot have cache_control. Put the cache breakpoint on a non-deferred "
         "tool."),
    Case("tools.deferred-limit", body(tools=[BASH] + [BASH | {"name": f"t{n}", "defer_loading": True}
                                                      for n in range(10_001)]),
         "tools: At most 10000 tools can have defer_loading set, got 10001."),
    Case("tools.defer-loading-model", body("claude-opus-4-1", tools=[BASH, BASH | {"name": "grep",
                                                                                  "defer_loading": True}]),
         "tools.1.custom.defer_loading: Tool search is not supported for claude-opus-4-1."),
    Case("web-search-result.fields", body(tools=[BASH, SEARCH], messages=[
        {"role": "user", "content": "search"},
        {"role": "assistant", "content": [S_USE, S_RESULT | {"content": [{"type": "web_search_result", "url": "u",
                                                                          "title": "t"}]}]},
        {"role": "user", "content": "thanks"}]),
         "messages.1.content.1.content.0.web_search_result.encrypted_content: Field required"),
    Case("history.server-result-without-call", body(tools=[BASH, SEARCH], messages=[
        {"role": "user", "content": "search"}, {"role": "assistant", "content": [S_RESULT]},
        {"role": "user", "content": "go on"}]),
         "messages.1.content.0: `web_search_tool_result` block has tool_use_id `srvtoolu_a`, which does not match any "
         "earlier `server_tool_use` block."),
    # a mixed turn cut by --max-turns or Ctrl+C, then the user's next message: text ends the turn
    Case("history.server-tool-unanswered", body(tools=[BASH, SEARCH], messages=MIXED + user("and now?")),
         "`web_search` tool use with id `srvtoolu_a` was found without a corresponding `web_search_tool_result` "
         "block"),
    Case("history.server-tool-unanswered", body(tools=[BASH, SEARCH], messages=MIXED[:2] + [
        {"role": "user", "content": [RESULT, {"type": "text", "text": "and now?"}]}]),
         "`web_search` tool use with id `srvtoolu_a` was found without a corresponding `web_search_tool_result` "
         "block"),
    # a paused turn the user talked over
    Case("history.server-tool-unanswered", body(tools=[BASH, SEARCH], messages=PAUSED + user("never mind")),
         "`web_search` tool use with id `srvtoolu_a` was found without a corresponding `web_search_tool_result` "
         "block"),
    Case("history.server-tool-undeclared", body(tools=[BASH], messages=MIXED),
         "`web_search` tool use with id `srvtoolu_a` is waiting to run, but no `web_search` tool was provided"),
    Case("message.block-role", body(messages=user() + [{"role": "assistant", "content": [
        {"type": "image", "source": {"type": "url", "url": "https://example.org/a.png"}}]}, *user("more")]),
         "messages.1.content.0: `image` blocks can only be in `user` messages"),
]

#: bodies the same rules accept (controls): the documented continuations, on a model without prefill
VALID: list[dict[str, Any]] = [
    body(tools=[BASH, SEARCH], messages=PAUSED),  # [server-tools] pause_turn: the paused answer sent back as it came
    body(tools=[BASH, SEARCH], messages=MIXED),  # a mixed turn continued with its results only
    body(tools=[BASH, SEARCH], messages=MIXED + [{"role": "assistant", "content": [S_RESULT, {
        "type": "text", "text": "Found it."}]}, *user("thanks")]),  # the next answer opened with the result
    _search(allowed_domains=["example.com", "docs.example.com/guide/*"]),
]
