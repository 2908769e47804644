"""MCP servers end to end: a real server (tests/ext/mcp_demo_server.py) over stdio and streamable HTTP on
loopback, its tools called by a scripted model through `coder run`, permission rules, restarts, `coder mcp list`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coder.base.errors import ConfigError
from coder.config.sections import Config
from coder.ext.mcp_client import MCPManager, ServerConfig, servers_from_config

REPO = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).with_name("mcp_demo_server.py")


def coder(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "coder", *args], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=180)


def write_mcp_json(repo: Path, servers: dict) -> None:
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


def stdio_entry(**extra) -> dict:
    return {"command": sys.executable, "args": [str(SERVER)], **extra}


def test_scripted_model_calls_mcp_tool_over_stdio(git_repo: Path, tmp_path: Path) -> None:
    write_mcp_json(git_repo, {"demo": stdio_entry()})
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "tool_search", "input": {"query": "select:mcp__demo__add,mcp__demo__env_probe"}}]},
        {"tool_calls": [{"name": "mcp__demo__add", "input": {"a": 2, "b": 40}}]},
        {"tool_calls": [{"name": "mcp__demo__env_probe", "input": {}}]},
        {"text": "done"}]}))
    result = coder(["run", "--trust", "--output-format", "stream-json", "--permission-mode", "auto", "--model",
                    f"scripted:{script}", "add"], git_repo, {"ANTHROPIC_API_KEY": "sk-secret"})
    assert result.returncode == 0, result.stderr
    finished = [e for e in map(json.loads, result.stdout.splitlines())  # the load first, then the calls
                if e["type"] == "tool_call_finished" and e["tool"] != "tool_search"]
    assert finished[0]["tool"] == "mcp__demo__add" and finished[0]["output"] == "42"
    assert finished[1]["output"] == "clean"  # our API key never reaches an MCP server


def test_mcp_tools_obey_permission_rules(git_repo: Path, tmp_path: Path) -> None:
    write_mcp_json(git_repo, {"demo": stdio_entry()})
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "tool_search", "input": {"query": "select:mcp__demo__add,mcp__demo__write_note"}}]},
        {"tool_calls": [{"name": "mcp__demo__add", "input": {"a": 1, "b": 1}}]},
        {"tool_calls": [{"name": "mcp__demo__write_note", "input": {"text": "hi"}}]},
        {"text": "done"}]}))
    result = coder(["run", "--trust", "--output-format", "stream-json", "--permission-mode", "auto", "--deny",
                    "mcp__demo__write*", "--model", f"scripted:{script}", "go"], git_repo)
    assert result.returncode == 0, result.stderr
    finished = [e for e in map(json.loads, result.stdout.splitlines())  # the load first, then the calls
                if e["type"] == "tool_call_finished" and e["tool"] != "tool_search"]
    assert finished[0]["output"] == "2"
    assert finished[1]["is_error"] and "denied" in finished[1]["output"].lower()
    assert not (git_repo / "note-from-mcp.txt").exists()


def test_dead_server_restarted_once(tmp_path: Path) -> None:
    starts = tmp_path / "starts.txt"
    manager = MCPManager([ServerConfig("demo", sys.executable, [str(SERVER)], {"DEMO_STARTS_FILE": str(starts)})],
                         tmp_path)
    try:
        manager.start_all()
        assert manager.states["demo"].status == "ready"
        text, is_error = manager.call("demo", "crash", {})
        assert manager.states["demo"].status == "dead" or is_error
        text, is_error = manager.call("demo", "add", {"a": 1, "b": 2})  # restarted once, then answers
        assert (text, is_error) == ("3", False)
        manager.call("demo", "crash", {})
        text, is_error = manager.call("demo", "add", {"a": 1, "b": 2})
        assert is_error and "not" in text.lower()  # second death is final
        assert starts.read_text().count("start") == 2
    finally:
        manager.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_server_and_mcp_list(git_repo: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), "http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        (git_repo / ".coder").mkdir()
        (git_repo / ".coder" / "config.toml").write_text(
            f'[mcp.servers.web]\nurl = "http://127.0.0.1:{port}/mcp"\nheaders = {{ "X-Token" = "t" }}\n')
        write_mcp_json(git_repo, {"broken": {"command": "/nonexistent/server"}})
        assert coder(["trust"], git_repo).returncode == 0  # the repository's servers are approved by name
        result = coder(["mcp", "list", "--json"], git_repo)
        rows = {r["name"]: r for r in json.loads(result.stdout)}
        assert rows["web"]["status"] == "ready" and "mcp__web__add" in rows["web"]["tools"]
        assert rows["broken"]["status"] == "failed" and rows["broken"]["error"]
        assert result.returncode == 1  # one server is not ready
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("servers, message", [
    ({"x": {"args": []}}, "exactly one of `command`"),
    ({"x": {"command": "a", "url": "http://b"}}, "exactly one of"),
    ({"x": {"command": "a", "args": "b"}}, "args = \"b\": expected a list of strings"),
    ({"x": {"command": "a", "port": 1}}, "port: unknown key"),
])
def test_bad_mcp_json(tmp_path: Path, servers: dict, message: str) -> None:
    write_mcp_json(tmp_path, servers)
    config = Config()
    config.trusted = True
    with pytest.raises(ConfigError) as info:
        servers_from_config(config, tmp_path)
    assert message in str(info.value) and ".mcp.json" in str(info.value)
