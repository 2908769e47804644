"""The nudge over the wire (issue 49): the real `coder run` with the real sandbox and pytest, the real anthropic and
openai SDKs against the loopback fake server (as strict as the documented APIs). The note reaches the model once,
as a request the API accepts; the model that answers it with a test run ends verified; the model that ignores it
is not asked again, and its claim is flagged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[2]
ANTHROPIC, OPENAI = "anthropic:claude-sonnet-4-6", "openai:gpt-4.1"
NOTE = "[coder: your turn is ending without proof that the change works]"
#: the fix made by a shell command (the probe sees it), a tool loaded on both routes from the first request
FIX = {"text": "The sign is wrong.", "tool_calls": [{"name": "bash", "input": {
    "command": "sed -i 's/a - b/a + b/' calc.py"}}]}
TESTS = {"text": "Running the tests.", "tool_calls": [{"name": "bash", "input": {"command": "python -m pytest -q"}}]}


def calc_repo(repo: Path) -> Path:
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    for args in (["add", "-A"], ["commit", "-qm", "calc"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def run(repo: Path, model: str, turns: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str], str]:
    """(stream-json events, the text of every request's messages in order, stderr)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}
    with FakeServer({"turns": turns}) as server:
        env["ANTHROPIC_BASE_URL"] = server.base_url
        env["OPENAI_BASE_URL"] = server.base_url + "/v1"
        done = subprocess.run([sys.executable, "-m", "coder", "run", "--output-format", "stream-json",
                               "--permission-mode", "auto", "--model", model, "fix add"],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=300)
        bodies = [json.dumps(body["messages"]) for body in server.requests]
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")], bodies, done.stderr


@pytest.mark.parametrize("model", [ANTHROPIC, OPENAI])
def test_the_model_hears_once_then_proves_it(model: str, git_repo: Path) -> None:
    repo = calc_repo(git_repo)
    events, bodies, stderr = run(repo, model, [FIX, {"text": "Fixed: all tests pass."}, TESTS,
                                               {"text": "Fixed; the test passes."}])
    assert len(bodies) == 4, stderr
    assert [NOTE in b for b in bodies] == [False, False, True, True]  # sent with the third request, kept after
    assert all(b.count(NOTE) == 1 for b in bodies[2:])  # once, never twice
    assert "no test ran" in bodies[2]
    record = events[-1]["evidence"]
    assert record["state"] == "verified" and record["nudged"] == "nudge" and not record["unsupported_claim"]
    assert record["runs"][0]["counts"]["passed"] == 1 and events[-1]["final_text"] == "Fixed; the test passes."


@pytest.mark.parametrize("model", [ANTHROPIC, OPENAI])
def test_a_model_that_ignores_it_is_not_asked_again_and_its_claim_is_flagged(model: str, git_repo: Path) -> None:
    repo = calc_repo(git_repo)
    events, bodies, _ = run(repo, model, [FIX, {"text": "Fixed."}, {"text": "It works now."},
                                          {"text": "never asked for"}])
    assert len(bodies) == 3 and bodies[-1].count(NOTE) == 1
    record = events[-1]["evidence"]
    assert (record["state"], record["claim"], record["unsupported_claim"]) == ("unverified", "It works now.", True)
    assert [e["type"] for e in events].count("verify_nudge") == 1
