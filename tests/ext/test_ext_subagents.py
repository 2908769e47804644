"""The `task` tool end to end through the fake server and the real SDK: the child's turns stay out of the
parent's context, only its report comes back, and the child is stored as its own session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[2]

SCRIPT = {"turns": [
    {"tool_calls": [{"name": "tool_search", "input": {"query": "select:task"}}]},  # task is loaded on demand
    {"text": "Delegating the search.", "tool_calls": [{"name": "task", "input": {
        "description": "find greet", "prompt": "Where is greet defined? Report file and line."}}]},
    {"when": "search subagent", "text": "Viewing.", "tool_calls": [
        {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "src/app.py"}}]},
    {"when": "search subagent", "tool_calls": [
        {"name": "str_replace_based_edit_tool", "input": {"command": "create", "path": "evil.py",
                                                          "file_text": "x = 1\n"}}]},
    {"when": "search subagent", "text": "REPORT: greet is defined in src/app.py at line 1."},
    {"text": "greet lives in src/app.py."},
]}


def test_subagent_report_only(git_repo: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_API_KEY": "k"}
    with FakeServer(SCRIPT) as server:
        env["ANTHROPIC_BASE_URL"] = server.base_url
        result = subprocess.run([sys.executable, "-m", "coder", "run", "--output-format", "json",
                                 "--permission-mode", "auto", "--model", "anthropic:claude-sonnet-4-6",
                                 "where is greet?"], cwd=git_repo, env=env, capture_output=True, text=True,
                                timeout=120)
        requests = server.requests
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["final_text"] == "greet lives in src/app.py."
    parent = [r for r in requests if "search subagent" not in json.dumps(r.get("system"))]
    child = [r for r in requests if "search subagent" in json.dumps(r.get("system"))]
    assert len(parent) == 3 and len(child) == 3
    final_parent = json.dumps(parent[-1]["messages"])
    assert "REPORT: greet is defined in src/app.py at line 1." in final_parent
    assert "return 'hello ' + name" not in final_parent  # the child's view output stayed in the child
    assert "task" not in {t["name"] for t in child[0]["tools"]}  # no grandchildren
    assert not (git_repo / "evil.py").exists()  # the explore agent is read-only (plan mode)
    denied = json.dumps(child[-1]["messages"])
    assert "denied" in denied.lower()
    listed = subprocess.run([sys.executable, "-m", "coder", "sessions", "list"], cwd=git_repo, env=env,
                            capture_output=True, text=True).stdout
    assert "find greet" in listed  # the child is a stored session with its own title
