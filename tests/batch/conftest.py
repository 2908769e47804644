"""SWE-bench-style instances built for real: a git repository with a bug, an issue, a gold patch, a test patch,
FAIL_TO_PASS / PASS_TO_PASS lists, a local mirror in the `--repos-dir` layout, and the environment spec for it."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

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

    def write_scripts(self, directory: Path, ids: list[str] | None = None, extra_turns: int = 0) -> Path:
        """A script per instance: the gold fix through the edit tool, then a final answer."""
        directory.mkdir(parents=True, exist_ok=True)
        for iid in ids or self.ids:
            turns = [{"text": "I will look at calc.py.",
                      "tool_calls": [{"name": "str_replace_based_edit_tool",
                                      "input": {"command": "view", "path": "calc.py"}}]}]
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


@pytest.fixture
def swe(tmp_path: Path) -> SweFixture:
    """A mirror `repos/acme__calc` with the buggy code, and a dataset of 3 instances on it."""
    repos_dir = tmp_path / "repos"
    mirror = repos_dir / "acme__calc"
    (mirror / "tests").mkdir(parents=True)
    git(mirror, "init", "-q", "-b", "main")
    (mirror / "calc.py").write_text(BUGGY)
    (mirror / "tests" / "test_calc.py").write_text(TESTS)
    git(mirror, "add", "-A")
    git(mirror, "commit", "-q", "-m", "calc with a bug")
    base = git(mirror, "rev-parse", "HEAD").strip()
    (mirror / "README.md").write_text("later work on main that instances must not see\n")
    git(mirror, "add", "-A")
    git(mirror, "commit", "-q", "-m", "later commit")
    fx = SweFixture(tmp_path, repos_dir, mirror, tmp_path / "dataset.jsonl", tmp_path / "specs.json", base,
                    ["acme__calc-1", "acme__calc-2", "acme__calc-3"])
    fx.dataset.write_text("".join(json.dumps(fx.record(i)) + "\n" for i in fx.ids))
    fx.specs.write_text(json.dumps(SPECS))
    return fx


@pytest.fixture(scope="session")
def env_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Venvs are built once per test session, like once per machine for real users."""
    return tmp_path_factory.mktemp("swebench-cache")
