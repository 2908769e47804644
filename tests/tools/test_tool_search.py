"""Issue 33: rarely used tools and MCP servers' tools are loaded on demand through `tool_search`, and the cached
prefix holds. Sessions run through `coder run`, the real SDKs and the fake server, which records every request
and judges it by the documented rules; the MCP server is a real one (tests/ext/mcp_demo_server.py, the SDK's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coder.models.wire import PrefixCache, input_tokens, segments
from coder.tools.registry import builtin_tools
from coder.tools.tool_search_tool import ToolSearchTool, arrange, first_line, search
from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "tests" / "ext" / "mcp_demo_server.py"

LOAD_AND_CALL = {"turns": [
    {"text": "Looking around.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
    {"tool_calls": [{"name": "tool_search", "input": {"query": "add two numbers"}}]},
    {"tool_calls": [{"name": "mcp__demo__add", "input": {"a": 20, "b": 22}}]},
    {"text": "It is 42."}]}
#: the editor a route defers, loaded mid-session and used: the str_replace editor on the OpenAI route ...
LOAD_EDITOR = {"turns": [
    {"text": "Looking around.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
    {"tool_calls": [{"name": "tool_search", "input": {"query": "select:str_replace_based_edit_tool"}}]},
    {"tool_calls": [{"name": "str_replace_based_edit_tool",
                     "input": {"command": "create", "path": "made.txt", "file_text": "by the editor\n"}}]},
    {"text": "Created."}]}
#: ... and apply_patch on the Anthropic route
LOAD_PATCH = {"turns": [
    {"text": "Looking around.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
    {"tool_calls": [{"name": "tool_search", "input": {"query": "select:apply_patch"}}]},
    {"tool_calls": [{"name": "apply_patch", "input": {
        "patch": "*** Begin Patch\n*** Add File: made.txt\n+by the patch\n*** End Patch"}}]},
    {"text": "Created."}]}
NO_LOAD = {"turns": [
    {"text": "Looking around.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
    {"tool_calls": [{"name": "bash", "input": {"command": "cat README.md"}}]},
    {"text": "Done."}]}


def run_coder(repo: Path, script: dict[str, Any], model: str, mcp: bool) -> tuple[list[dict[str, Any]], str]:
    if mcp:
        (repo / ".mcp.json").write_text(json.dumps(
            {"mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}}}))
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}
    with FakeServer(script) as server:
        env["ANTHROPIC_BASE_URL"] = server.base_url
        env["OPENAI_BASE_URL"] = server.base_url + "/v1"
        result = subprocess.run([sys.executable, "-m", "coder", "run", "--trust", "--output-format", "stream-json",
                                 "--permission-mode", "auto", "--model", model, "go"],
                                cwd=repo, env=env, capture_output=True, text=True, timeout=180)
        bodies = list(server.requests)
    assert result.returncode == 0, result.stderr[-2000:]
    return bodies, result.stdout


def bare(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Without the cache breakpoints, which move between requests."""
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks]


def finished_outputs(stdout: str) -> list[str]:
    return [json.loads(x)["output"] for x in stdout.splitlines() if '"tool_call_finished"' in x]


def test_anthropic_route_loads_through_tool_reference_and_keeps_the_prefix(git_repo: Path) -> None:
    bodies, stdout = run_coder(git_repo, LOAD_AND_CALL, "anthropic:claude-sonnet-4-6", mcp=True)
    assert finished_outputs(stdout)[-1] == "42"
    tools = bodies[0]["tools"]
    deferred = [t["name"] for t in tools if t.get("defer_loading")]
    assert "mcp__demo__add" in deferred and "task" in deferred
    first_deferred = next(i for i, t in enumerate(tools) if t.get("defer_loading"))
    assert all(t.get("defer_loading") for t in tools[first_deferred:]), "deferred tools come last"
    search_tool = next(t for t in tools if t["name"] == "tool_search")
    assert "MCP server demo (mcp__demo__NAME): add, " in search_tool["description"], "names without their prefix"
    # the load is a tool_reference in the conversation; tools and system prompt never change
    loads = [b for b in bodies[2]["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert loads[0]["content"] == [{"type": "tool_reference", "tool_name": "mcp__demo__add"}], "no weak matches"
    for body in bodies[1:]:
        assert bare(body["tools"]) == bare(tools) and bare(body["system"]) == bare(bodies[0]["system"])
    # each request's segments start with all of the previous one's: the whole earlier request is a cache read
    cache = PrefixCache()
    for before, after in zip(bodies, bodies[1:], strict=False):
        old, new = segments(before), segments(after)
        assert [s.text for s in new[:len(old)]] == [s.text for s in old]
    reads = [cache.account(segments(b)).cache_read_tokens for b in bodies]
    assert reads[3] >= input_tokens(bodies[2]) - 50, "the request after the load read everything before it"
    # the expanded definition is paid where it was loaded, not by the requests before
    assert input_tokens(bodies[2]) - input_tokens(bodies[1]) > len(json.dumps(tools[-1])) // 8


def test_three_mcp_tools_cost_nothing_per_request_until_loaded(git_repo: Path, tmp_path: Path) -> None:
    plain, _ = run_coder(git_repo, NO_LOAD, "anthropic:claude-sonnet-4-6", mcp=False)
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(git_repo), str(other)], check=True)
    with_mcp, _ = run_coder(other, NO_LOAD, "anthropic:claude-sonnet-4-6", mcp=True)
    for a, b in zip(plain, with_mcp, strict=True):
        assert abs(input_tokens(b) - input_tokens(a)) <= 0.03 * input_tokens(a), (input_tokens(a), input_tokens(b))
    assert any(t["name"].startswith("mcp__demo__") for t in with_mcp[0]["tools"])  # the control: they are there


def test_openai_route_appends_a_loaded_tool_after_the_others(git_repo: Path) -> None:
    bodies, stdout = run_coder(git_repo, LOAD_AND_CALL, "openai:gpt-4.1", mcp=True)
    assert finished_outputs(stdout)[-1] == "42"
    names = [[t["function"]["name"] for t in b["tools"]] for b in bodies]
    assert "mcp__demo__add" not in names[0] and "task" not in names[0] and "tool_search" in names[0]
    assert names[2] == names[0] + ["mcp__demo__add"], "appended, nothing reordered"
    assert names[3] == names[2]


def test_each_route_loads_its_own_editor_and_a_deferred_editor_loads_mid_session(git_repo: Path,
                                                                                 tmp_path: Path) -> None:
    """The lead's decision (docs/decisions/33-context-cost.md, round 3): a model sees loaded the edit tool it was
    trained on, the other one waits behind the tool search, and loading it keeps the prefix (Anthropic: every
    request's tools, system and earlier messages unchanged; OpenAI: the definition appended, nothing reordered)."""
    bodies, stdout = run_coder(git_repo, LOAD_PATCH, "anthropic:claude-sonnet-4-6", mcp=False)
    assert (git_repo / "made.txt").read_text() == "by the patch\n", stdout[-1500:]
    deferred = {t["name"] for t in bodies[0]["tools"] if t.get("defer_loading")}
    loaded = {t["name"] for t in bodies[0]["tools"] if not t.get("defer_loading")}
    assert "apply_patch" in deferred and "subagents" in deferred
    assert {"str_replace_based_edit_tool", "bash", "tool_search"} <= loaded
    loads = [b for b in bodies[2]["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert loads[0]["content"] == [{"type": "tool_reference", "tool_name": "apply_patch"}]
    for before, after in zip(bodies, bodies[1:], strict=False):
        assert bare(after["tools"]) == bare(bodies[0]["tools"]) and bare(after["system"]) == bare(bodies[0]["system"])
        old, new = segments(before), segments(after)
        assert [s.text for s in new[:len(old)]] == [s.text for s in old], "the earlier request is a prefix"

    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(git_repo), str(other)], check=True)
    bodies, stdout = run_coder(other, LOAD_EDITOR, "openai:gpt-4.1", mcp=False)
    assert (other / "made.txt").read_text() == "by the editor\n", stdout[-1500:]
    names = [[t["function"]["name"] for t in b["tools"]] for b in bodies]
    assert "apply_patch" in names[0] and "str_replace_based_edit_tool" not in names[0] and "tool_search" in names[0]
    assert names[1] == names[0], "nothing loaded yet"
    assert names[2] == names[0] + ["str_replace_based_edit_tool"] == names[3], "appended once, nothing reordered"
    for before, after in zip(bodies, bodies[1:], strict=False):
        assert after["messages"][:len(before["messages"])] == before["messages"], "earlier messages unchanged"


def test_search_ranks_names_first_and_select_loads_exact_names() -> None:
    tools = builtin_tools()
    searcher = tools["tool_search"]
    assert isinstance(searcher, ToolSearchTool)
    assert set(searcher.catalog) == {n for n, t in tools.items() if t.contract.deferred} >= {"task", "bash_output"}
    assert search(searcher.catalog, "subagent investigation")[0] == "task"
    assert search(searcher.catalog, "background job output")[0] == "bash_output"
    assert search(searcher.catalog, "kubernetes") == []
    result = searcher.run(searcher.parse({"query": "select:task"}), None)  # type: ignore[arg-type]
    assert result.data["tool_references"] == ["task"] and "task:" in result.output
    with pytest.raises(Exception, match="no loadable tool named nope"):
        searcher.run(searcher.parse({"query": "select:nope"}), None)  # type: ignore[arg-type]
    assert first_line("[MCP server x] Read a file. Then more.") == "Read a file."
    searcher.attach({**searcher.catalog, "mcp__fs__read_file": tools["task"]})
    loaded = searcher.run(searcher.parse({"query": "select:read_file"}), None)  # type: ignore[arg-type]
    assert loaded.data["tool_references"] == ["mcp__fs__read_file"]


def test_without_the_search_tool_nothing_is_deferred() -> None:
    tools = builtin_tools(["bash", "bash_output"])
    assert list(tools) == ["bash", "bash_output"] and not tools["bash_output"].contract.deferred
    again = arrange(builtin_tools())
    assert list(again)[-6:] == ["tool_search", "bash_output", "task", "subagents", "exit_plan", "web_fetch"]
    planning = builtin_tools(mode="plan")
    assert not planning["exit_plan"].contract.deferred and "exit_plan" not in planning["tool_search"].catalog  # type: ignore[attr-defined]
    assert list(planning).index("exit_plan") < list(planning).index("tool_search"), "whole: among the core tools"
    for route, core, waits in (("anthropic", "str_replace_based_edit_tool", "apply_patch"),
                               ("openai", "apply_patch", "str_replace_based_edit_tool")):
        routed = builtin_tools(route=route)
        assert not routed[core].contract.deferred and routed[waits].contract.deferred, route
        assert list(routed).index(waits) > list(routed).index("tool_search"), "a deferred tool is sent last"
    assert not builtin_tools()["apply_patch"].contract.deferred, "no route (a script): both editors loaded"
