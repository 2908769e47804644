"""Verdict arithmetic, the feedback text for a fix round, and test-runner detection for other ecosystems."""

from __future__ import annotations

import json
from pathlib import Path

from coder.review.types import Finding, ReviewResult, StageResult
from coder.vcs.repo import Repo


def test_verdicts_and_feedback() -> None:
    ok = StageResult("apply", "pass")
    warn = StageResult("hygiene", "warn", findings=[Finding("a.py", 3, "warning", "print left", "debug-leftover",
                                                            "hygiene")])
    broken = StageResult("tests", "error", note="sandbox unavailable: no bwrap")
    assert ReviewResult.from_stages([ok]).verdict == "pass"
    assert ReviewResult.from_stages([ok, warn]).verdict == "warn"
    assert ReviewResult.from_stages([ok, broken]).verdict == "warn"  # an unrun stage is never a silent pass
    gamed = StageResult("gaming", "fail", findings=[Finding("tests/t.py", 9, "error", "test removed", "test-removed",
                                                            "gaming")])
    failed = StageResult("tests", "fail", details="E   assert 2 == 3\nFAILED tests/t.py::test_x",
                         findings=[Finding("tests/t.py", None, "error", "tests/t.py::test_x fails", "tests-failed",
                                           "tests")])
    result = ReviewResult.from_stages([ok, warn, gamed, failed, StageResult("llm", "skipped", note="no model")])
    assert result.verdict == "fail" and len(result.errors) == 2
    text = result.feedback()
    assert text.startswith("Review verdict: FAIL.")
    assert "- tests/t.py:9 [test-removed] test removed" in text and "a.py:3 [debug-leftover]" in text
    assert "fix the code under test instead" in text and "assert 2 == 3" in text and "llm (no model)" in text
    data = json.loads(json.dumps(result.to_dict()))
    assert data["verdict"] == "fail" and data["stages"][2] == {"name": "gaming", "status": "fail", "duration": 0.0,
                                                               "note": "", "findings": 1}
    assert ReviewResult.from_stages([ok]).feedback() == "Review verdict: PASS.\nNo problems found."


def test_detection_for_npm_go_and_cargo(g_init, tmp_path: Path) -> None:
    from coder.review.context import ReviewContext
    from coder.review.testing import detect

    cases = {
        "npm": {"package.json": json.dumps({"scripts": {"test": "vitest run"}}), "src/a.js": "x\n"},
        "go": {"go.mod": "module x\n", "pkg/a.go": "package pkg\n"},
        "cargo": {"Cargo.toml": "[package]\nname='x'\n", "src/lib.rs": "\n"},
    }
    for kind, files in cases.items():
        (tmp_path / kind).mkdir()
        repo = g_init(tmp_path / kind, files)
        changed = next(p for p in files if p.startswith(("src", "pkg")))
        (repo / changed).write_text("changed\n")
        ctx = ReviewContext(Repo.open(repo), Repo.open(repo).diff())
        plan = detect(ctx, repo)
        assert plan is not None and plan.kind == kind
        if kind == "go":
            assert plan.related == "go test ./pkg"
    (tmp_path / "none").mkdir()
    repo = g_init(tmp_path / "none", {"package.json": json.dumps({"scripts": {
        "test": "echo \"Error: no test specified\" && exit 1"}})})
    (repo / "package.json").write_text("{}\n")
    assert detect(ReviewContext(Repo.open(repo), Repo.open(repo).diff()), repo) is None
