"""Best of N by evidence (issue 49): `coder swebench run --attempts 3` with three scripted attempts (one ends
unverified, one with failing tests, one verified) submits the verified one, whatever its place, records every
attempt and why, and keeps the predictions in the official format with the evidence beside them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from batch_fixtures import git

from coder.batch.attempts import Attempt, why

EDIT = "str_replace_based_edit_tool"


def edit(old: str, new: str) -> dict:
    return {"text": "Editing calc.py.", "tool_calls": [{"name": EDIT, "input": {
        "command": "str_replace", "path": "calc.py", "old_str": old, "new_str": new}}]}


def pytest_turn() -> dict:
    return {"text": "Running the tests.", "tool_calls": [{"name": "bash", "input": {"command": "python -m pytest -q"}}]}


def test_best_of_three_submits_the_verified_attempt(swe, tmp_path: Path) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    attempts = {
        1: [edit("return a - b", "return a + b"), {"text": "Fixed."}],  # unverified (the nudge gets no answer)
        2: [edit("return a - b", "return a + b"), edit("return a * b", "return a ** b"), pytest_turn(),
            {"text": "Done."}, {"text": "The test of mul fails."}],  # failed
        3: [edit("return a - b", "return a + b"), pytest_turn(), {"text": "Fixed; the tests pass."}],  # verified
    }
    for k, turns in attempts.items():
        (scripts / f"acme__calc-1.{k}.json").write_text(json.dumps({"turns": turns}))
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "coder", "swebench", "run", "--dataset", str(swe.dataset),
                           "--repos-dir", str(swe.repos_dir), "--output", str(run_dir), "--model",
                           f"scripted:{scripts}", "--instances", "acme__calc-1", "--attempts", "3", "--workers", "2"],
                          capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    inst = run_dir / "instances" / "acme__calc-1"
    record = json.loads((inst / "attempts.json").read_text())
    states = {a["number"]: a["evidence"] for a in record["attempts"]}
    assert states == {1: "unverified", 2: "failed", 3: "verified"}, record
    assert record["chosen"] == 3 and record["why"] == "the strongest evidence: verified over failed (attempt 2)"
    preds = json.loads((run_dir / "preds.json").read_text())
    assert set(preds["acme__calc-1"]) == {"instance_id", "model_name_or_path", "model_patch"}  # the official three
    patch = preds["acme__calc-1"]["model_patch"]
    assert "+    return a + b" in patch and "a ** b" not in patch
    assert json.loads((run_dir / "evidence.json").read_text())["acme__calc-1"]["state"] == "verified"
    status = json.loads((inst / "status.json").read_text())
    assert (status["attempts"], status["chosen_attempt"], status["evidence"]["state"]) == (3, 3, "verified")
    assert status["turns"] == sum(a["turns"] for a in record["attempts"]) > 3  # every attempt's spend counts
    assert "best-of=3 chose=3" in proc.stdout and "evidence=verified" in proc.stdout
    traj = json.loads((inst / "acme__calc-1.traj.json").read_text())
    assert traj["info"]["submission"] == patch  # the chosen attempt's trajectory is the instance's
    rep = subprocess.run([sys.executable, "-m", "coder", "swebench", "report", str(run_dir)], capture_output=True,
                         text=True, timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert "| verified | 1 | n/a | 0 |" in (run_dir / "report.md").read_text()


def test_best_of_two_in_your_own_repository_branches_the_chosen_one(git_repo: Path, tmp_path: Path) -> None:
    """`coder batch --branches --attempts 2`: branch coder/<id> is the chosen attempt's commit, never the attempt
    that happened to finish last, and the attempts leave no ref behind. One worker, so the verified attempt (1)
    finishes first and the unverified one (2) after it: the last to finish must not win."""
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (git_repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-qm", "calc")
    issues = tmp_path / "issues.jsonl"
    issues.write_text(json.dumps({"id": "calc-1", "title": "add subtracts", "body": "add(2, 3) is -1."}) + "\n")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for k, turns in {1: [edit("return a - b", "return a + b"), pytest_turn(), {"text": "Fixed; the test passes."}],
                     2: [edit("return a - b", "return b + a"), {"text": "Fixed."}, {"text": "Fixed."}]}.items():
        (scripts / f"calc-1.{k}.json").write_text(json.dumps({"turns": turns}))
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "coder", "batch", str(issues), "--repo", str(git_repo), "--model",
                           f"scripted:{scripts}", "--branches", "--attempts", "2", "--workers", "1", "--output",
                           str(run_dir)], capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record = json.loads((run_dir / "instances" / "calc-1" / "attempts.json").read_text())
    assert {a["number"]: a["evidence"] for a in record["attempts"]} == {1: "verified", 2: "unverified"}, record
    assert record["chosen"] == 1
    assert "return a + b" in git(git_repo, "show", "coder/calc-1:calc.py")  # the verified attempt's fix
    assert git(git_repo, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/coder/calc-1",
                                                                            "refs/heads/main"]
    assert git(git_repo, "status", "--porcelain") == ""  # the user's tree untouched


def test_why_one_attempt_wins() -> None:
    def a(n: int, evidence: str, verdict: str = "pass", size: int = 2, state: str = "done") -> Attempt:
        return Attempt(n, state, "done", evidence, verdict, size, 0, 0.0, True)

    assert why(a(2, "verified"), [a(1, "failed")]) == "the strongest evidence: verified over failed (attempt 1)"
    assert why(a(1, "failed", "pass"), [a(2, "failed", "fail")]) == "the reviewer's verdict: pass over fail (attempt 2)"
    assert why(a(2, "verified", size=3), [a(1, "verified", size=9)]) == \
        "the smaller patch: +3/-0 over +9/-0 (attempt 1)"
    assert why(a(1, "unverified"), [a(2, "verified", size=0)]) == "a patch: a patch over no patch (attempt 2)"
    assert why(a(1, "verified"), [a(2, "verified")]) == "as strong as attempt 2 on every count: the earlier one"
    best = max([a(1, "failed"), a(2, "unverified"), a(3, "verified", "fail", 40)], key=Attempt.rank)
    assert best.number == 3
