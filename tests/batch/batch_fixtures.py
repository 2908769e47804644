"""Data of the SWE-bench-style test instances (imported by conftest.py and the tests; a unique module name so it
never collides with another area's helpers)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = "from calc import add, mul\n\n\ndef test_mul():\n    assert mul(3, 4) == 12\n"

GOLD_PATCH = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,5 +1,5 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
"""

BREAKING_PATCH = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,6 +1,6 @@
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
-    return a * b
+    return a ** b
"""

TEST_PATCH = """diff --git a/tests/test_calc.py b/tests/test_calc.py
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -3,3 +3,7 @@ from calc import add, mul
 
 def test_mul():
     assert mul(3, 4) == 12
+
+
+def test_add():
+    assert add(2, 3) == 5
"""

SPECS = {"repos": {"acme/calc": {"log_parser": "pytest", "versions": {"1.0": {
    "python": "3.11", "install": "", "test_cmd": "python -m pytest -rA -p no:cacheprovider",
    "system_site_packages": True, "local": "ok"}}}}}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@dataclass
class SweFixture:
    root: Path
    repos_dir: Path
    mirror: Path
    dataset: Path
    specs: Path
    base_commit: str
    ids: list[str]

    def record(self, instance_id: str) -> dict:
        return {
            "instance_id": instance_id, "repo": "acme/calc", "base_commit": self.base_commit,
            "problem_statement": "add() subtracts instead of adding: add(2, 3) returns -1, expected 5.",
            "hints_text": "", "patch": GOLD_PATCH, "test_patch": TEST_PATCH,
            "FAIL_TO_PASS": json.dumps(["tests/test_calc.py::test_add"]),
            "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_mul"]),
            "version": "1.0", "environment_setup_commit": self.base_commit, "created_at": "2024-01-01T00:00:00Z",
        }

    def write_scripts(self, directory: Path, ids: list[str] | None = None, extra_turns: int = 0,
                      sleep: dict[str, float] | None = None) -> Path:
        """A script per instance: the gold fix through the edit tool, then a final answer (`sleep`: a shell
        `sleep N` first, for instances that must still be running at some point of a test)."""
        directory.mkdir(parents=True, exist_ok=True)
        for iid in ids or self.ids:
            turns = [{"text": "I will look at calc.py.",
                      "tool_calls": [{"name": "str_replace_based_edit_tool",
                                      "input": {"command": "view", "path": "calc.py"}}]}]
            if sleep and iid in sleep:
                turns.append({"text": "Waiting.", "tool_calls": [{"name": "bash",
                                                                  "input": {"command": f"sleep {sleep[iid]}"}}]})
            turns += [{"text": "Looking again.", "tool_calls": [{"name": "str_replace_based_edit_tool",
                                                                 "input": {"command": "view", "path": "calc.py"}}]}
                      for _ in range(extra_turns)]
            turns += [{"text": "The sign is wrong; fixing it.",
                       "tool_calls": [{"name": "str_replace_based_edit_tool",
                                       "input": {"command": "str_replace", "path": "calc.py",
                                                 "old_str": "return a - b", "new_str": "return a + b"}}]},
                      {"text": "Fixed: add() now returns a + b."}]
            (directory / f"{iid}.json").write_text(json.dumps({"turns": turns}), encoding="utf-8")
        return directory


