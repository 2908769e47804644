"""Run directories, predictions in the official formats, the report and its PNG chart."""

from __future__ import annotations

import json
import subprocess
import sys

from coder.batch.outputs import InstanceStatus, RunDir, load_predictions
from coder.batch.png import Canvas, read_png
from coder.batch.report import COLORS, build, write_report


def _status(iid: str, cost: float, reason: str = "done", files: int = 1, state: str = "done") -> InstanceStatus:
    return InstanceStatus(instance_id=iid, state=state, exit_reason=reason, submitted=reason == "done" and files > 0,
                          turns=3, input_tokens=1000, output_tokens=200, cost_usd=cost, duration_s=2.5,
                          patch_files=["calc.py"] * files, patch_added=files, patch_removed=files, model="m1")


def _run(tmp_path) -> RunDir:
    run = RunDir(tmp_path / "run")
    run.record(_status("a", 0.10), "diff --git a/calc.py b/calc.py\n")
    run.record(_status("b", 0.30, files=0), "")
    run.record(_status("c", 0.05, reason="max_turns"), "diff --git a/x b/x\n")
    run.record(_status("d", 0.0, reason="error", files=0, state="crashed"), None)
    return run


def test_preds_in_official_formats(tmp_path):
    run = _run(tmp_path)
    preds = json.loads((run.root / "preds.json").read_text())
    assert set(preds) == {"a", "b", "c"}  # a crashed instance has no prediction (it is retried on resume)
    assert preds["a"] == {"instance_id": "a", "model_name_or_path": "m1",
                          "model_patch": "diff --git a/calc.py b/calc.py\n"}
    lines = [json.loads(line) for line in (run.root / "preds.jsonl").read_text().splitlines()]
    assert [p["instance_id"] for p in lines] == ["a", "b", "c"]
    assert load_predictions(run.root / "preds.jsonl") == load_predictions(run.root) == preds
    status_lines = (run.root / "status.jsonl").read_text().splitlines()
    assert len(status_lines) == 4 and json.loads(status_lines[3])["state"] == "crashed"
    assert run.is_done("a") and not run.is_done("d")


def test_report_before_evaluation_uses_agent_outcomes(tmp_path):
    run = _run(tmp_path)
    rep = build(run.root)
    assert rep["outcome_source"].startswith("agent")
    assert rep["outcomes"] == {"submitted": 1, "no patch": 1, "limit": 1, "crashed": 1}
    assert rep["resolve_rate"] is None and rep["cost_usd"]["total"] == 0.45


def test_report_with_evaluation(tmp_path):
    run = _run(tmp_path)
    (run.root / "eval").mkdir()
    (run.root / "eval" / "report.json").write_text(json.dumps({"instances": {
        "a": {"status": "resolved"}, "b": {"status": "not"}, "c": {"status": "partially"}, "d": {"status": "error"}}}))
    paths = write_report(run.root)
    rep = json.loads(paths["json"].read_text())
    assert rep["outcomes"] == {"resolved": 1, "partially": 1, "not": 1, "error": 1}
    assert rep["resolve_rate"] == 0.25
    assert rep["cost_per_resolved_usd"] == 0.45  # all the money spent, per resolved instance
    assert rep["tokens"]["input_tokens"] == 4000 and rep["turns"]["mean"] == 3
    assert rep["exit_reasons"] == {"done": 2, "max_turns": 1, "error": 1}
    md = paths["md"].read_text()
    assert "Resolve rate: 25.0%" in md and "| a | resolved | done |" in md and "report.png" in md
    width, height, rows = read_png(paths["png"].read_bytes())
    assert (width, height) == (720, 120 + 60 * 4)
    pixels = {bytes(row[i:i + 3]) for row in rows for i in range(0, len(row), 3)}
    for outcome in ("resolved", "partially", "not", "error"):
        assert bytes(COLORS[outcome]) in pixels, outcome  # every outcome's disc and label is drawn


def test_report_cli(tmp_path):
    run = _run(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "coder", "swebench", "report", str(run.root)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert (run.root / "report.png").read_bytes().startswith(b"\x89PNG")
    assert "Instances: 4" in proc.stdout
    empty = subprocess.run([sys.executable, "-m", "coder", "swebench", "report", str(tmp_path / "nothing")],
                           capture_output=True, text=True, timeout=60)
    assert empty.returncode == 2 and "no finished instances" in empty.stderr and "Traceback" not in empty.stderr


def test_png_writer_roundtrip():
    cv = Canvas(30, 20)
    cv.rect(2, 2, 5, 5, (255, 0, 0))
    cv.text(10, 5, "A1", (0, 0, 255), scale=1)
    w, h, rows = read_png(cv.png())
    assert (w, h) == (30, 20)
    assert rows[3][3 * 3: 3 * 3 + 3] == bytes((255, 0, 0))
    assert rows[0][:3] == bytes((255, 255, 255))
    assert rows[5][3 * 11: 3 * 11 + 3] == bytes((0, 0, 255))  # top stroke of the "A"


def test_report_says_which_runs_were_clean_beside_the_resolved_rate(tmp_path):
    """Issue 44: a run whose workspace held a commit after the base, or whose agent reached past the instance, is
    named beside the resolve rate, with how many of those resolved; a run without the record says so."""
    run = RunDir(tmp_path / "run")
    clean = {"git": {"after_base": 0, "submodules": {}}}
    for iid, reach, flags in (("a", clean, []), ("b", clean, [{"flag": "git: reflog", "turn": 2, "evidence": ""}]),
                              ("c", {"git": {"after_base": 0, "submodules": {"h": {"after_base": 4}}}},
                               [{"flag": "future commits in reach: 4", "turn": 0, "evidence": ""}])):
        status = _status(iid, 0.1)
        status.reach, status.flags = reach, flags
        run.record(status, "diff --git a/calc.py b/calc.py\n")
    (run.root / "eval").mkdir()
    (run.root / "eval" / "report.json").write_text(json.dumps({"instances": {
        "a": {"status": "resolved"}, "b": {"status": "resolved"}, "c": {"status": "not"}}}))
    rep = build(run.root)
    assert rep["clean"] == {"recorded": 3, "clean": 1, "flagged": ["b", "c"], "flagged_resolved": ["b"],
                            "future_in_reach": ["c"]}
    text = (write_report(run.root)["md"]).read_text()
    assert "- Resolve rate: 66.7%\n- Clean runs: 1/3" in text and "FUTURE COMMITS IN REACH: c" in text
    assert "| b | resolved |" in text and "| git: reflog |" in text
    assert "Clean runs: not recorded" in (write_report(_run(tmp_path / "old").root)["md"]).read_text()
