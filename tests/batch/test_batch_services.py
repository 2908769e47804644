"""What the harness's containers have of the internet, given to the evaluation without it (coder/batch/services.py,
coder/sandbox/tarpit.py), with the real evaluator, sandbox and venv: a local stand-in for a server the tests reach
by an address they read from the environment (requests' HTTPBIN_URL), and a tarpit that must time out (requests'
10.255.255.1). The control: the same instance without them is not resolved."""

from __future__ import annotations

import json

from batch_fixtures import GOLD_PATCH, SPECS

from coder.batch.envs import load_spec_table
from coder.batch.evaluate import EvalConfig, evaluate
from coder.batch.instances import load_instances

PORT = 36880  # the sandbox has a network namespace of its own: no other process can hold it
NETWORK_TESTS = """diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -3,3 +3,18 @@ from calc import add, mul
 
 def test_mul():
     assert mul(3, 4) == 12
+
+
+def test_add():
+    assert add(2, 3) == 5
+
+
+def test_service():
+    import os, urllib.request
+    assert urllib.request.urlopen(os.environ["ACME_SERVER"], timeout=10).status == 200
+
+
+def test_tarpit():
+    import pytest, socket
+    with pytest.raises(socket.timeout):
+        socket.create_connection(("10.255.255.1", 80), timeout=0.5)
"""


def test_a_local_stand_in_and_a_tarpit_serve_the_tests(swe, env_cache, tmp_path):
    rows = [json.loads(line) for line in swe.dataset.read_text().splitlines()]
    rows[0]["test_patch"] = NETWORK_TESTS
    rows[0]["PASS_TO_PASS"] = json.dumps([f"tests/test_calc.py::{t}" for t in ("test_mul", "test_service",
                                                                                 "test_tarpit")])
    swe.dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    specs = json.loads(json.dumps(SPECS))
    # another version: an environment of its own (the stand-in's venv sits beside the environment)
    version = specs["repos"]["acme/calc"]["versions"]["1.0"] | {
        "tarpits": ["10.255.255.1"],
        "test_service": {"packages": [], "args": ["-m", "http.server", "--bind", "127.0.0.1", str(PORT)],
                         "address": f"127.0.0.1:{PORT}", "env": {"ACME_SERVER": f"http://127.0.0.1:{PORT}/"}}}
    specs["repos"]["acme/calc"]["versions"]["1.0"] = version
    path = tmp_path / "specs-with-network.json"
    path.write_text(json.dumps(specs))

    def run(specs_path, out):
        cfg = EvalConfig(output=out, repos_dir=swe.repos_dir, cache_dir=tmp_path / "cache",
                         specs=load_spec_table(specs_path), dataset_path=str(swe.dataset))
        pred = {"instance_id": "acme__calc-1", "model_name_or_path": "test", "model_patch": GOLD_PATCH}
        return evaluate(load_instances(swe.dataset)[:1], {"acme__calc-1": pred}, cfg)["instances"]["acme__calc-1"]

    r = run(path, tmp_path / "eval")
    assert r["status"] == "resolved", r["error"]
    assert list((tmp_path / "cache" / "envs").glob("*/service/bin/python"))
    # control: the same tests without the stand-in and the tarpit fail (connection refused, network unreachable)
    control = run(swe.specs, tmp_path / "control")
    assert control["status"] == "not", control["error"]
    assert sorted(control["tests_status"]["PASS_TO_PASS"]["failure"]) == [
        "tests/test_calc.py::test_service", "tests/test_calc.py::test_tarpit"]
