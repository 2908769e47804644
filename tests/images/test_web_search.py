"""Web search (issue 35): the Anthropic server tool through the real SDK and `coder run` against the strict fake
server, which runs the scripted searches only when the request declares the tool, and the per-session cap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coder.base.errors import ConfigError
from coder.config.layers import load_config, settings
from coder.models.types import Message, ServerToolBlock
from coder.tools.registry import builtin_tools
from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[2]
RESULTS = [{"url": "https://docs.example.test/widget/2.0", "title": "Widget 2.0 release notes"}]


def run(workspace: Path, server: FakeServer, *args: str, env: dict[str, str] | None = None,
        model: str = "anthropic:claude-sonnet-4-6") -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "test-key", **(env or {})}
    return subprocess.run([sys.executable, "-m", "coder", "run", "--model", model, "--output-format", "json",
                           *args], cwd=workspace, env=full, capture_output=True, text=True, timeout=120)


def test_the_server_search_runs_and_its_blocks_go_back_unchanged_on_the_next_request(tmp_path: Path) -> None:
    user = tmp_path / "xdg" / "coder"  # the user's own config: a repository may only turn web search off
    user.mkdir(parents=True)
    (user / "config.toml").write_text('[web]\nsearch_allowed_domains = ["docs.example.test"]\n')
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"web_search": [{"query": "widget 2.0 changelog", "results": RESULTS}],
         "tool_calls": [{"name": "bash", "input": {"command": "true"}}]},
        {"text": "Widget 2.0 dropped Python 3.8."}]}))
    with FakeServer(script) as server:
        done = run(workspace, server, "--permission-mode", "auto", "--trust", "what changed in widget 2.0?",
                   env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
        first, second = server.requests[0], server.requests[-1]
    assert done.returncode == 0, done.stderr[-2000:]
    declared = next(t for t in first["tools"] if t.get("name") == "web_search")
    assert declared["type"] == "web_search_20250305" and declared["max_uses"] == 5
    assert declared["allowed_domains"] == ["docs.example.test"]
    answer = next(m for m in second["messages"] if m["role"] == "assistant")["content"]
    kinds = [b["type"] for b in answer]
    assert kinds[:2] == ["server_tool_use", "web_search_tool_result"]  # sent back as the API gave them
    assert answer[1]["content"][0]["url"] == RESULTS[0]["url"]
    assert json.loads(done.stdout.splitlines()[-1])["final_text"] == "Widget 2.0 dropped Python 3.8."


def test_off_in_batch_off_by_config_and_not_offered_without_a_backend_elsewhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = builtin_tools(["web_search"])["web_search"]
    tool.configure(settings({}), "anthropic:claude-sonnet-4-6")
    assert tool.spec() is not None and tool.spec().server_params == {"max_uses": 5}  # type: ignore[union-attr]
    tool.configure(settings({"web": {"search": "off"}}), "anthropic:claude-sonnet-4-6")
    assert tool.spec() is None
    tool.configure(settings({}), "openai:gpt-4o")
    assert tool.spec() is None  # no backend on this route: nothing to offer
    backend = settings({"web": {"search_backend": "https://search.example.test/?q={query}&format=json"}})
    tool.configure(backend, "openai:gpt-4o")
    spec = tool.spec()
    assert spec is not None and spec.anthropic_type is None and "query" in spec.input_schema["properties"]
    monkeypatch.setenv("CODER_WEB_SEARCH", "off")
    tool.configure(load_config(tmp_path), "anthropic:claude-sonnet-4-6")
    assert tool.spec() is None
    monkeypatch.setenv("CODER_WEB_SEARCH", "on")  # a batch agent's reach is the batch's: off unless --web-search
    monkeypatch.setenv("CODER_BATCH_REACH", "{}")
    tool.configure(load_config(tmp_path), "anthropic:claude-sonnet-4-6")
    assert tool.spec() is None
    with pytest.raises(ConfigError, match="search_allowed_domains"):
        settings({"web": {"search_allowed_domains": ["a.test"], "search_blocked_domains": ["b.test"]}})


def test_the_session_cap_counts_the_searches_in_the_answers() -> None:
    tool = builtin_tools(["web_search"])["web_search"]
    tool.configure(settings({"web": {"search_session_cap": 3, "search_max_uses": 5}}), "anthropic:claude-sonnet-4-6")
    use = ServerToolBlock({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}})
    tool.saw_answer(Message("assistant", [use, use]))
    assert tool.spec().server_params["max_uses"] == 1  # type: ignore[union-attr]
    tool.saw_answer(Message("assistant", [use]))
    assert tool.spec() is None
