"""The review feedback loop end to end: a scripted agent breaks a test, the reviewer's findings go back to it, it
fixes the code, and the commit happens only then (with the LLM stage answered by the script too)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_support import coder, write_script

BREAK = {"command": "str_replace", "path": "calc.py", "old_str": "return a + b", "new_str": "return a - b"}
FIX = {"command": "str_replace", "path": "calc.py", "old_str": "return a - b", "new_str": "return a + b  # sum"}

TURNS = [
    {"text": "Rewriting add.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": BREAK}]},
    {"text": "Done with the change."},
    {"when": "Review verdict: FAIL", "text": "The test caught it; fixing.",
     "tool_calls": [{"name": "str_replace_based_edit_tool", "input": FIX}]},
    {"when": "Review verdict: FAIL", "text": "should not be needed twice"},
    {"text": "Fixed; the tests pass now."},
    {"when": "prepare the review of a code change", "repeat": True,
     "text": "- Does add still return the sum?\n- Do the tests pass?"},
    {"when": "You review a code change made by a coding agent", "repeat": True,
     "text": '{"findings": [{"file": "calc.py", "line": 2, "severity": "warning", "message": "comment is noise"}]}'},
    {"when": "double-check one finding", "repeat": True, "text": '{"confirmed": false, "reason": "harmless"}'},
    {"when": "Write the git commit message", "repeat": True,
     "text": "fix(calc): keep add returning the sum\n\nThe review caught a sign error; add is a sum again."},
]


def make_repo(repo: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)

    repo.mkdir()
    git("init", "-q", "-b", "main")
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    git("add", "-A")
    git("commit", "-q", "-m", "initial")


def test_failing_review_goes_back_to_agent_then_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    script = write_script(tmp_path / "s.json", TURNS)
    result = coder("run", "--output-format", "stream-json", "--permission-mode", "auto", "--commit", "--model",
                   f"scripted:{script}", "make add clearer", cwd=repo, timeout=240)
    assert result.returncode == 0, result.stderr + result.stdout[-3000:]
    events = [json.loads(x) for x in result.stdout.splitlines()]
    reviews = [e for e in events if e["type"] == "review"]
    assert [r["verdict"] for r in reviews] == ["fail", "pass"]
    assert any(f["check"] == "tests-failed" for f in reviews[0]["findings"]), reviews[0]["findings"]
    assert not any(f["check"] == "llm" for f in reviews[1]["findings"])  # unconfirmed finding dropped
    kinds = [e["type"] for e in events]
    first_review, commit = kinds.index("review"), kinds.index("commit")
    fix = next(i for i, e in enumerate(events) if e["type"] == "tool_call_finished" and "a + b  # sum" in
               json.dumps(e["input"]))
    assert first_review < fix < commit  # the fix came from the feedback, and the commit only after it
    log = subprocess.run(["git", "log", "--format=%s%n%b", "-1"], cwd=repo, capture_output=True, text=True).stdout
    assert log.startswith("fix(calc): keep add returning the sum") and "Generated-by: coder" in log
    assert "a + b  # sum" in (repo / "calc.py").read_text()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert status.strip() == ""


def test_review_that_keeps_failing_does_not_commit(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    (repo / ".coder").mkdir()
    (repo / ".coder" / "config.toml").write_text("[review]\nmax_fix_rounds = 1\n")
    turns = [TURNS[0], TURNS[1], {"when": "Review verdict: FAIL", "repeat": True, "text": "I will not fix it."}]
    script = write_script(tmp_path / "s.json", turns)
    result = coder("run", "--trust", "--output-format", "json", "--permission-mode", "auto", "--commit",
                   "--model", f"scripted:{script}", "make add clearer", cwd=repo, timeout=240)
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["commit"]["committed"] is False and data["commit"]["reason"] == "review failed"
    assert data["commit"]["fix_rounds"] == 1
    head = subprocess.run(["git", "log", "--oneline"], cwd=repo, capture_output=True, text=True).stdout
    assert len(head.strip().splitlines()) == 1  # nothing committed
