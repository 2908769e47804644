"""Issue 7 end to end through the fake server and the real anthropic SDK, in one `coder run`: the scripted model
calls an MCP tool, a before_tool hook blocks a shell command, and a custom tool runs in the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).with_name("mcp_demo_server.py")

HOOK = """import json, sys
event = json.load(sys.stdin)
if "rm -rf" in event["input"].get("command", ""):
    print("rm -rf is not allowed here", file=sys.stderr)
    sys.exit(2)
"""


def test_mcp_hook_and_custom_tool_in_one_run(git_repo: Path) -> None:
    (git_repo / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"demo": {"command": sys.executable, "args": [str(SERVER)]}}}))
    coder_dir = git_repo / ".coder"
    (coder_dir / "tools").mkdir(parents=True)
    (coder_dir / "hooks").mkdir()
    (coder_dir / "hooks" / "no_rm.py").write_text(HOOK)
    (coder_dir / "config.toml").write_text(
        '[[hooks.before_tool]]\nmatch = "bash"\ncommand = "python3 .coder/hooks/no_rm.py"\n')
    (coder_dir / "tools" / "count_lines.json").write_text(json.dumps({
        "name": "count_lines", "description": "Count the lines of a file.", "permission": "read",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        "command": "wc -l < {path}"}))
    script = {"turns": [
        {"tool_calls": [{"name": "tool_search", "input": {"query": "select:mcp__demo__add"}}]},  # on demand
        {"tool_calls": [{"name": "mcp__demo__add", "input": {"a": 20, "b": 22}}]},
        {"tool_calls": [{"name": "bash", "input": {"command": "rm -rf src"}}]},
        {"tool_calls": [{"name": "count_lines", "input": {"path": "src/app.py"}}]},
        {"text": "all three done"}]}
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_API_KEY": "k"}
    with FakeServer(script) as server:
        env["ANTHROPIC_BASE_URL"] = server.base_url
        result = subprocess.run([sys.executable, "-m", "coder", "run", "--trust", "--output-format", "stream-json",
                                 "--permission-mode", "auto", "--model", "anthropic:claude-sonnet-4-6", "go"],
                                cwd=git_repo, env=env, capture_output=True, text=True, timeout=180)
        tools_declared = {t["name"] for t in server.requests[0]["tools"]}
    assert result.returncode == 0, result.stderr
    assert {"mcp__demo__add", "count_lines", "bash"} <= tools_declared
    finished = [e for e in map(json.loads, result.stdout.splitlines())  # the load first, then the calls
                if e["type"] == "tool_call_finished" and e["tool"] != "tool_search"]
    assert finished[0]["output"] == "42"
    assert finished[1]["is_error"] and "rm -rf is not allowed here" in finished[1]["output"]
    assert (git_repo / "src" / "app.py").exists()  # the hook really blocked it
    assert finished[2]["output"].strip() == "2" and not finished[2]["is_error"]
