"""The local evaluator on real git repositories and a real venv: gold resolved, empty and breaking patches not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from batch_fixtures import BREAKING_PATCH, GOLD_PATCH

from coder.batch import grading
from coder.batch.envs import load_spec_table
from coder.batch.evaluate import EvalConfig, evaluate
from coder.batch.instances import load_instances


def _cfg(swe, env_cache: Path, out: Path, **kw) -> EvalConfig:
    return EvalConfig(output=out, repos_dir=swe.repos_dir, cache_dir=env_cache, specs=load_spec_table(swe.specs),
                      dataset_path=str(swe.dataset), **kw)


def _pred(iid: str, patch: str | None) -> dict:
    return {"instance_id": iid, "model_name_or_path": "test", "model_patch": patch}


def test_gold_resolved_empty_and_breaking_not(swe, env_cache, tmp_path):
    insts = load_instances(swe.dataset)
    preds = {"acme__calc-1": _pred("acme__calc-1", GOLD_PATCH),
             "acme__calc-2": _pred("acme__calc-2", ""),
             "acme__calc-3": _pred("acme__calc-3", BREAKING_PATCH)}
    report = evaluate(insts, preds, _cfg(swe, env_cache, tmp_path / "eval", workers=2))
    inst = report["instances"]
    assert inst["acme__calc-1"]["status"] == "resolved" and inst["acme__calc-1"]["resolved"] is True
    assert inst["acme__calc-1"]["tests_status"]["FAIL_TO_PASS"]["success"] == ["tests/test_calc.py::test_add"]
    assert inst["acme__calc-2"]["status"] == "not" and inst["acme__calc-2"]["empty_patch"] is True
    assert inst["acme__calc-3"]["status"] == "not"
    assert inst["acme__calc-3"]["tests_status"]["PASS_TO_PASS"]["failure"] == ["tests/test_calc.py::test_mul"]
    assert report["resolved_ids"] == ["acme__calc-1"] and report["resolved_instances"] == 1
    saved = json.loads((tmp_path / "eval" / "report.json").read_text())
    assert saved["unresolved_ids"] == ["acme__calc-2", "acme__calc-3"]
    log = (tmp_path / "eval" / "instances" / "acme__calc-1" / "test_output.txt").read_text()
    assert "PASSED tests/test_calc.py::test_add" in log
    # the user's mirror was only read: still on its own branch, clean
    assert subprocess.run(["git", "status", "--porcelain"], cwd=swe.mirror, capture_output=True,
                          text=True).stdout == ""


def test_env_built_once_and_reused(swe, env_cache, tmp_path):
    insts = load_instances(swe.dataset)[:1]
    preds = {"acme__calc-1": _pred("acme__calc-1", GOLD_PATCH)}
    evaluate(insts, preds, _cfg(swe, env_cache, tmp_path / "e1"))
    ready = next(env_cache.glob("envs/acme__calc-1.0-*/ready.json"))
    stamp = ready.stat().st_mtime_ns
    report = evaluate(insts, preds, _cfg(swe, env_cache, tmp_path / "e2"))
    assert report["resolved_instances"] == 1
    assert ready.stat().st_mtime_ns == stamp  # not rebuilt


def test_fuzzy_prediction_applies_through_fallback(swe, env_cache, tmp_path):
    # Line numbers off by 3 and no index line: `git apply` is strict about context positions only loosely,
    # so shift the hunk's context instead: a wrong trailing context line that only `patch --fuzz` tolerates.
    fuzzy = GOLD_PATCH.replace(" def mul(a, b):\n", " def mul(x, y):\n")
    report = evaluate(load_instances(swe.dataset)[:1], {"acme__calc-1": _pred("acme__calc-1", fuzzy)},
                      _cfg(swe, env_cache, tmp_path / "eval"))
    r = report["instances"]["acme__calc-1"]
    assert r["apply_method"] in ("git apply --3way", "patch --fuzz=5"), r
    assert r["status"] == "resolved"


def test_agent_edits_to_the_tested_files_are_reset_like_the_harness_does(swe, env_cache, tmp_path):
    # The fix plus a weakened test_mul in the file the test patch touches: the harness checks those files out at
    # the base commit before applying the test patch, so the weakening neither blocks it nor counts.
    weakened = GOLD_PATCH + """diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -3,3 +3,3 @@ from calc import add, mul
 
 def test_mul():
-    assert mul(3, 4) == 12
+    assert True
"""
    broken_mul = BREAKING_PATCH + weakened[len(GOLD_PATCH):]
    report = evaluate(load_instances(swe.dataset)[:2],
                      {"acme__calc-1": _pred("acme__calc-1", weakened),
                       "acme__calc-2": _pred("acme__calc-2", broken_mul)},
                      _cfg(swe, env_cache, tmp_path / "eval"))
    assert report["instances"]["acme__calc-1"]["status"] == "resolved"
    assert report["instances"]["acme__calc-2"]["status"] == "not"  # the weakened test did not hide the breakage


def test_unappliable_prediction_is_an_error_not_a_failure(swe, env_cache, tmp_path):
    bad = GOLD_PATCH.replace("calc.py", "nothere.py")
    report = evaluate(load_instances(swe.dataset)[:1], {"acme__calc-1": _pred("acme__calc-1", bad)},
                      _cfg(swe, env_cache, tmp_path / "eval"))
    r = report["instances"]["acme__calc-1"]
    assert r["status"] == grading.ERROR and r["patch_successfully_applied"] is False
    assert "does not apply" in r["error"]


def test_no_environment_says_so_and_prints_official_command(swe, env_cache, tmp_path):
    rows = [json.loads(line) for line in swe.dataset.read_text().splitlines()]
    rows[0]["version"] = "9.9"  # no spec for this version
    ds = tmp_path / "ds.jsonl"
    ds.write_text(json.dumps(rows[0]) + "\n")
    cfg = _cfg(swe, env_cache, tmp_path / "eval")
    cfg.dataset_path = str(ds)
    report = evaluate(load_instances(ds), {"acme__calc-1": _pred("acme__calc-1", GOLD_PATCH)}, cfg)
    r = report["instances"]["acme__calc-1"]
    assert r["status"] == "error" and r["needs_official_harness"] is True
    assert "no environment spec" in r["error"]
    assert report["needs_official_harness"] == ["acme__calc-1"]
    assert report["official_command"].startswith("python -m swebench.harness.run_evaluation --dataset_name ")
    assert "--instance_ids acme__calc-1" in report["official_command"]
    subset = json.loads((tmp_path / "eval" / "preds_for_harness.json").read_text())
    assert list(subset) == ["acme__calc-1"]


def test_unsupported_spec_refuses_with_reason(swe, env_cache, tmp_path):
    specs = json.loads(swe.specs.read_text())
    specs["repos"]["acme/calc"]["versions"]["1.0"].update(local="unsupported", note="needs Python 2.7")
    swe.specs.write_text(json.dumps(specs))
    report = evaluate(load_instances(swe.dataset)[:1], {"acme__calc-1": _pred("acme__calc-1", GOLD_PATCH)},
                      _cfg(swe, env_cache, tmp_path / "eval"))
    r = report["instances"]["acme__calc-1"]
    assert r["needs_official_harness"] and "needs Python 2.7" in r["error"]


def test_cli_eval_writes_report(swe, env_cache, tmp_path):
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"acme__calc-1": _pred("acme__calc-1", GOLD_PATCH),
                                 "acme__calc-3": _pred("acme__calc-3", BREAKING_PATCH)}))
    out = tmp_path / "ev"
    proc = subprocess.run([sys.executable, "-m", "coder", "swebench", "eval", str(preds), "--dataset",
                           str(swe.dataset), "--repos-dir", str(swe.repos_dir), "--output", str(out), "--specs",
                           str(swe.specs), "--cache-dir", str(env_cache)],
                          capture_output=True, text=True, env={**os.environ}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "resolved  acme__calc-1" in proc.stdout and "not       acme__calc-3" in proc.stdout
    report = json.loads((out / "report.json").read_text())
    assert report["resolved_ids"] == ["acme__calc-1"] and report["unresolved_ids"] == ["acme__calc-3"]
    official = subprocess.run([sys.executable, "-m", "coder", "swebench", "eval", str(preds), "--dataset",
                               str(swe.dataset), "--official"], capture_output=True, text=True, timeout=60)
    assert official.returncode == 0
    assert official.stdout.startswith("python -m swebench.harness.run_evaluation")
    assert str(preds) in official.stdout


def test_a_partial_mirror_is_could_not_evaluate_not_a_failure(swe, env_cache, tmp_path):
    insts = load_instances(swe.dataset)[:1]
    preds = {"acme__calc-1": _pred("acme__calc-1", GOLD_PATCH)}
    evaluate(insts, preds, _cfg(swe, env_cache, tmp_path / "e1"))  # the environment, from the full mirror
    partial = tmp_path / "partial"
    subprocess.run(["git", "-C", str(swe.mirror), "config", "uploadpack.allowFilter", "true"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", "--filter=blob:none", swe.mirror.as_uri(),
                    str(partial / "acme__calc.git")], check=True)  # every blob left out
    cfg = _cfg(swe, env_cache, tmp_path / "e2")
    cfg.repos_dir = partial
    report = evaluate(insts, preds, cfg)
    r = report["instances"]["acme__calc-1"]
    assert r["status"] == "error" and r["needs_official_harness"] is True and "partial snapshot" in r["error"]
    assert report["needs_official_harness"] == ["acme__calc-1"] and "official_command" in report


def test_envs_gold_reports_agreement_and_every_miss(swe, env_cache, tmp_path):
    """Issue 31, item 4: `coder swebench envs --gold` evaluates the gold patches and says, per environment, how
    many agree with the labels, then why each other does not (here a record whose gold patch breaks test_mul)."""
    rows = [json.loads(line) for line in swe.dataset.read_text().splitlines()]
    rows[2]["patch"] = BREAKING_PATCH
    swe.dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = subprocess.run([sys.executable, "-m", "coder", "swebench", "envs", "--dataset", str(swe.dataset),
                           "--repos-dir", str(swe.repos_dir), "--specs", str(swe.specs), "--cache-dir", str(env_cache),
                           "--gold", "--output", str(tmp_path / "gold"), "--workers", "2"],
                          capture_output=True, text=True, env={**os.environ}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    header, row = proc.stdout.splitlines()[:2]
    assert "gold agrees" in header and row.split()[:6] == ["acme/calc", "1.0", "ready", "3.11", "3", "2/3"]
    assert "gold patches resolved: 2/3 of the instances evaluable here" in proc.stdout
    assert "  acme__calc-3: not: failing PASS_TO_PASS: tests/test_calc.py::test_mul" in proc.stdout
    assert "acme__calc-1:" not in proc.stdout  # only the misses are listed
    assert json.loads((tmp_path / "gold" / "report.json").read_text())["resolved_ids"] == ["acme__calc-1",
                                                                                          "acme__calc-2"]
