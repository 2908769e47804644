"""Images from tools (issue 35): an MCP server's image result reaches the model as an image (a real MCP server over
stdio, the real anthropic SDK against the strict fake server), and the editor's `view` of an image file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from images_support import write_picture

from coder.ext.mcp_client import MCPManager, ServerConfig
from coder.models.images import fitted_size
from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "tests" / "ext" / "mcp_demo_server.py"


def test_an_mcp_image_result_comes_back_as_an_image_scaled_within_the_limits(tmp_path: Path) -> None:
    manager = MCPManager([ServerConfig("demo", sys.executable, [str(DEMO)], {})], tmp_path)
    try:
        manager.start_all()
        text, is_error, images = manager.call_tool("demo", "plot", {"width": 2500, "height": 500})
    finally:
        manager.close()
    assert not is_error and "chart 2500x500" in text
    assert [(i.media_type, i.width, i.height, i.name) for i in images] == [
        ("image/png", *fitted_size(2500, 500), "demo plot image 1")]


def run(workspace: Path, server: FakeServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_BASE_URL": server.base_url,
           "ANTHROPIC_API_KEY": "test-key"}
    return subprocess.run([sys.executable, "-m", "coder", "run", "--model", "anthropic:claude-sonnet-4-6",
                           "--output-format", "stream-json", *args], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=180)


def test_mcp_image_and_view_of_a_png_reach_the_model_in_the_tool_results(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"demo": {
        "command": sys.executable, "args": [str(DEMO)]}}}))
    write_picture(workspace / "ui.png", 800, 600)
    (workspace / "notes.png").write_text("not really a picture")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "tool_search", "input": {"query": "select:mcp__demo__plot"}}]},  # on demand
        {"tool_calls": [{"name": "mcp__demo__plot", "input": {"width": 300, "height": 200}},
                        {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "ui.png"}},
                        {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "notes.png"}}]},
        {"text": "A blue chart and a red screen."}]}))
    with FakeServer(script) as server:
        done = run(workspace, server, "--permission-mode", "auto", "--trust", "look at the chart and ui.png")
        last = server.requests[-1]["messages"][-1]["content"]
    assert done.returncode == 0, done.stderr[-2000:]
    results = {r["tool_use_id"]: r for r in last if r["type"] == "tool_result"}
    contents = list(results.values())
    assert [p["type"] for p in contents[0]["content"]] == ["text", "image"]  # the MCP chart
    assert [p["type"] for p in contents[1]["content"]] == ["text", "image"]  # view of ui.png
    assert "800x600" in contents[1]["content"][0]["text"]
    assert contents[2].get("is_error") and "not an image" in str(contents[2]["content"])
