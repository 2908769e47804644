"""Grading as swebench 5.0 tightened it, with the real evaluator, sandbox and venv (issue 31, item 3).

- A patch that prints its own `PASSED` lines (a conftest atexit hook) while the test command fails is an error,
  never resolved: the eval script records the command's exit status after the end marker. The control grades
  the very same log without that line and gets "resolved": the forged lines were live.
- A test command that never starts (pytest refusing its options, exit 4, nothing run) is an error, not "not
  resolved" and not "all tests passed"; a log with no result and no sign of a suite is one too ("no test ran").
- A failed install of the package under test is an error labelled as the environment's failure, and the tests
  are not run against a missing package.
- The harness's failure codes and missing markers make a log no verdict; every rule as a unit too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batch_fixtures import GOLD_PATCH, SPECS

from coder.batch import grading, infra
from coder.batch.envs import load_spec_table
from coder.batch.evaluate import EvalConfig, evaluate
from coder.batch.instances import load_instances

FORGED = """diff --git a/conftest.py b/conftest.py
new file mode 100644
--- /dev/null
+++ b/conftest.py
@@ -0,0 +1,4 @@
+import atexit
+import os
+
+atexit.register(os.write, 1, b"PASSED tests/test_calc.py::test_add\\n")
"""

NEVER_STARTS = """diff --git a/pytest.ini b/pytest.ini
new file mode 100644
--- /dev/null
+++ b/pytest.ini
@@ -0,0 +1,2 @@
+[pytest]
+addopts = --no-such-option
"""


def _evaluate(swe, env_cache: Path, out: Path, patch: str, specs: Path | None = None) -> dict:
    cfg = EvalConfig(output=out, repos_dir=swe.repos_dir, cache_dir=env_cache,
                     specs=load_spec_table(specs or swe.specs), dataset_path=str(swe.dataset))
    pred = {"instance_id": "acme__calc-1", "model_name_or_path": "test", "model_patch": patch}
    return evaluate(load_instances(swe.dataset)[:1], {"acme__calc-1": pred}, cfg)


def test_forged_passed_lines_cannot_resolve_a_failing_run(swe, env_cache, tmp_path):
    report = _evaluate(swe, env_cache, tmp_path / "eval", FORGED)
    r = report["instances"]["acme__calc-1"]
    assert r["status"] == "error" and not r["resolved"] and report["resolved_ids"] == []
    assert "exited 1 while its log reports no failure" in r["error"]
    log = (tmp_path / "eval" / "instances" / "acme__calc-1" / "test_output.txt").read_text()
    assert "FAILED tests/test_calc.py::test_add" in log  # the real run failed ...
    assert log.rstrip().endswith("PASSED tests/test_calc.py::test_add") or \
        log.index("PASSED tests/test_calc.py::test_add") > log.index("FAILED tests/test_calc.py::test_add")
    assert f"{grading.TEST_EXIT_CODE}: 1" in log
    # control: the same log without the recorded exit status grades as resolved (the forgery was live)
    unrecorded = log.replace(f"{grading.TEST_EXIT_CODE}: 1", "")
    assert grading.grade(unrecorded, grading.parse_log_pytest, ["tests/test_calc.py::test_add"],
                         ["tests/test_calc.py::test_mul"]).status == grading.RESOLVED
    # and the gold patch, recorded the same way, still resolves
    gold = _evaluate(swe, env_cache, tmp_path / "gold", GOLD_PATCH)["instances"]["acme__calc-1"]
    assert gold["status"] == "resolved" and gold["error"] is None


def test_a_suite_that_never_starts_is_an_error(swe, env_cache, tmp_path):
    report = _evaluate(swe, env_cache, tmp_path / "eval", NEVER_STARTS)
    r = report["instances"]["acme__calc-1"]
    assert r["status"] == "error" and "the test command exited 4" in r["error"]
    assert report["error_ids"] == ["acme__calc-1"] and report["unresolved_ids"] == []
    log = (tmp_path / "eval" / "instances" / "acme__calc-1" / "test_output.txt").read_text()
    assert "--no-such-option" in log and f"{grading.TEST_EXIT_CODE}: 4" in log  # pytest's usage error


def test_a_failed_install_is_an_environment_error_and_no_test_runs(swe, env_cache, tmp_path):
    specs = json.loads(json.dumps(SPECS))
    # an install that works on the environment's setup checkout and fails in the instance's workspace, as when
    # the base commit needs a build requirement the environment lacks
    specs["repos"]["acme/calc"]["versions"]["1.0"]["install"] = \
        "python -c 'import os, sys; sys.exit(3 if os.path.basename(os.getcwd()) == \"acme__calc-1\" else 0)'"
    path = tmp_path / "specs.json"
    path.write_text(json.dumps(specs))
    report = _evaluate(swe, env_cache, tmp_path / "eval", GOLD_PATCH, specs=path)
    r = report["instances"]["acme__calc-1"]
    assert r["status"] == "error" and r["error"].startswith("installing the package under test failed (exit 3")
    assert r["infra_failure"] is True and r["infra_failure_reason"] == "install_failed"
    assert report["infra_failure_ids"] == ["acme__calc-1"] and report["ambiguous_failure_ids"] == []
    log = (tmp_path / "eval" / "instances" / "acme__calc-1" / "test_output.txt").read_text()
    assert grading.START_TEST_OUTPUT not in log and "Install Failed: 3" in log  # the tests never ran
    # a patch that changes how the package builds shares the blame: the label is ambiguous
    assert infra.install_failure_tier("diff --git a/setup.py b/setup.py\n") == infra.TIER_AMBIGUOUS
    assert infra.install_failure_tier(GOLD_PATCH) == infra.TIER_ENVIRONMENT


F2P, P2P = ["t.py::test_new"], ["t.py::test_old"]
RAN = f"{grading.START_TEST_OUTPUT}\nPASSED t.py::test_new\nPASSED t.py::test_old\n{grading.END_TEST_OUTPUT}\n"


@pytest.mark.parametrize("log, status, why", [
    (RAN, grading.RESOLVED, ""),
    (RAN + f"{grading.TEST_EXIT_CODE}: 0\n", grading.RESOLVED, ""),
    (RAN.replace("PASSED t.py::test_new", "FAILED t.py::test_new") + f"{grading.TEST_EXIT_CODE}: 1\n",
     grading.NOT_RESOLVED, ""),
    (RAN + f"{grading.TEST_EXIT_CODE}: 2\n", grading.ERROR, "exited 2 while its log reports no failure"),
    (RAN + ">>>>> Tests Timed Out\n", grading.ERROR, "did not complete (Tests Timed Out)"),
    (RAN.replace(grading.END_TEST_OUTPUT, ""), grading.ERROR, "ended before its end marker"),
    (f"{grading.START_TEST_OUTPUT}\nusage: pytest [options]\n{grading.END_TEST_OUTPUT}\n", grading.ERROR,
     "no test ran"),
    (f"{grading.START_TEST_OUTPUT}\n3 passing\n{grading.END_TEST_OUTPUT}\n", grading.NOT_RESOLVED, ""),
])
def test_the_rules_one_by_one(log, status, why):
    graded = grading.grade(log, grading.parse_log_pytest, F2P, P2P)
    assert graded.status == status and why in graded.error and bool(why) == bool(graded.error)


def test_infra_labels_follow_the_harness():
    assert infra.classify("E   ModuleNotFoundError: No module named 'x'") == ("missing_module", infra.TIER_AMBIGUOUS)
    assert infra.classify("Temporary failure in name resolution") == ("network_unreachable", infra.TIER_ENVIRONMENT)
    assert infra.classify("1 passed") is None


NOOP_PATCH = """diff --git a/notes.txt b/notes.txt
new file mode 100644
--- /dev/null
+++ b/notes.txt
@@ -0,0 +1 @@
+nothing
"""

NETWORK_TEST_PATCH = """diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -3,3 +3,12 @@ from calc import add, mul
 
 def test_mul():
     assert mul(3, 4) == 12
+
+
+def test_add():
+    assert add(2, 3) == 5
+
+
+def test_link():
+    import socket
+    socket.getaddrinfo("www.example.com", 80)
"""


def test_tests_that_need_the_internet_are_could_not_evaluate_here(swe, env_cache, tmp_path):
    """A PASS_TO_PASS test that reaches the internet (sphinx's linkcheck tests do, and the harness's containers have
    network) fails in the sandbox with a name-resolution error, which no patch causes: the instance is "could not
    evaluate here", not "not resolved", when that is how every failing test of its lists failed. The controls: the
    same instance without that test resolves; a patch that leaves the bug is "not resolved"."""
    rows = [json.loads(line) for line in swe.dataset.read_text().splitlines()]
    rows[0]["test_patch"] = NETWORK_TEST_PATCH
    rows[0]["PASS_TO_PASS"] = json.dumps(["tests/test_calc.py::test_mul", "tests/test_calc.py::test_link"])
    swe.dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = _evaluate(swe, env_cache, tmp_path / "eval", GOLD_PATCH)
    r = report["instances"]["acme__calc-1"]
    assert r["needs_official_harness"] is True and not r["resolved"], r
    assert r["infra_failure_reason"] == "network_unreachable" and r["infra_failure"] is True
    assert r["error"].startswith("its tests reach the internet")
    assert report["needs_official_harness"] == ["acme__calc-1"] and report["unresolved_ids"] == []
    assert r["tests_status"]["PASS_TO_PASS"]["failure"] == ["tests/test_calc.py::test_link"]  # kept, to read
    # a patch that leaves the bug: FAIL_TO_PASS fails on its assertion beside the network test, "not resolved"
    # (each failing test's own report decides, not the log as a whole)
    noop = _evaluate(swe, env_cache, tmp_path / "noop", NOOP_PATCH)["instances"]["acme__calc-1"]
    assert noop["status"] == "not" and not noop["needs_official_harness"], noop["error"]
    rows[0]["PASS_TO_PASS"] = json.dumps(["tests/test_calc.py::test_mul"])
    swe.dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    control = _evaluate(swe, env_cache, tmp_path / "control", GOLD_PATCH)["instances"]["acme__calc-1"]
    assert control["status"] == "resolved" and not control["needs_official_harness"]


def test_tests_that_need_a_left_out_package_are_could_not_evaluate_here(swe, env_cache, tmp_path):
    """The environment left a conda-only package out (left_out.json, as xarray's cdms2); a PASS_TO_PASS test that
    needs it skips, summarised by file and line, so it is missing from the log: "could not evaluate here", not "not
    resolved". The control: the same run with the package not recorded as left out stays "not resolved"."""
    rows = [json.loads(line) for line in swe.dataset.read_text().splitlines()]
    rows[0]["test_patch"] = NETWORK_TEST_PATCH.replace(
        '+    import socket\n+    socket.getaddrinfo("www.example.com", 80)\n',
        '+    import pytest\n+    pytest.importorskip("acme_conda_only")\n')
    rows[0]["PASS_TO_PASS"] = json.dumps(["tests/test_calc.py::test_mul", "tests/test_calc.py::test_link"])
    swe.dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = _evaluate(swe, env_cache, tmp_path / "first", GOLD_PATCH)["instances"]["acme__calc-1"]
    assert first["status"] == "not" and not first["needs_official_harness"]  # control: nothing recorded as left out
    env_dir = next(env_cache.glob("envs/acme__calc-1.0-*"))
    (env_dir / "left_out.json").write_text(json.dumps({"environment.yml": {"acme_conda_only": "conda-forge only"}}))
    try:
        r = _evaluate(swe, env_cache, tmp_path / "eval", GOLD_PATCH)["instances"]["acme__calc-1"]
    finally:
        (env_dir / "left_out.json").unlink()
    assert r["needs_official_harness"] is True and r["status"] == "error", r
    assert "need acme_conda_only, which this environment leaves out" in r["error"]
