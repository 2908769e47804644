"""The issue's "done when" through the real command line: `coder run --net-allow` lets the sandboxed shell
reach that host (a loopback server named through the proxy's resolver), refuses every other one, and the event
stream records both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_coder_run_allow_domain_records_every_host(git_repo: Path, tmp_path: Path, served: int) -> None:
    script = tmp_path / "script.json"
    command = (f"curl -sS http://allowed.test:{served}/; curl -sS http://unlisted.test:{served}/; "
               f"curl -sS http://denied.test:{served}/")
    script.write_text(json.dumps({"turns": [
        {"text": "fetching", "tool_calls": [{"name": "bash", "input": {"command": command}}]},
        {"text": "done"}]}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "coder", "run", "--output-format", "stream-json", "--permission-mode", "auto",
         "--model", f"scripted:{script}", "--net-allow", "allowed.test", "--net-deny", "denied.test", "go"],
        cwd=git_repo, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    access = {(e["host"], e["allowed"], e["source"]) for e in events if e["type"] == "network_access"}
    assert access == {("allowed.test", True, "allowed_domains"), ("unlisted.test", False, "unlisted"),
                      ("denied.test", False, "denied_domains")}
    output = next(e["output"] for e in events if e["type"] == "tool_call_finished")
    assert output.count("hello from the loopback server") == 1
    assert "nobody can be asked (a headless run)" in output and "[sandbox] denied_domains" in output
