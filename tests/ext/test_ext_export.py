"""Trajectories out: our event JSONL and the Agent Data Protocol shape, from a real scripted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def coder(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "coder", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_export_jsonl_and_adp(git_repo: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [
        {"text": "Listing.", "thinking": "ls is cheap", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
        {"text": "Viewing.", "tool_calls": [{"name": "str_replace_based_edit_tool",
                                             "input": {"command": "view", "path": "README.md"}}]},
        {"text": "There is a README and a src folder."}]}))
    run = coder(["run", "--output-format", "json", "--permission-mode", "auto", "--model", f"scripted:{script}",
                 "what is here?"], git_repo)
    assert run.returncode == 0, run.stderr
    session_id = json.loads(run.stdout)["session_id"]

    lines = [json.loads(x) for x in coder(["sessions", "export", session_id], git_repo).stdout.splitlines()]
    assert [x["seq"] for x in lines] == list(range(1, len(lines) + 1))
    assert all(x["session_id"] == session_id and "time" in x for x in lines)

    adp = json.loads(coder(["sessions", "export", session_id, "--format", "adp"], git_repo).stdout)
    assert adp["schema_version"] == "1.2.0" and adp["id"] == session_id
    classes = [step["class_"] for step in adp["content"]]
    assert classes == ["text_observation", "code_action", "text_observation", "api_action", "text_observation",
                       "message_action"]
    assert adp["content"][0] == {"class_": "text_observation", "content": "what is here?", "source": "user"}
    assert adp["content"][1]["language"] == "bash" and adp["content"][1]["content"] == "ls"
    assert adp["content"][1]["description"] == "Listing."
    assert "README.md" in adp["content"][2]["content"] and adp["content"][2]["source"] == "environment"
    assert adp["content"][3]["function"] == "str_replace_based_edit_tool"
    assert adp["content"][-1]["content"] == "There is a README and a src folder."
