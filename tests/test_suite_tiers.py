"""The tiers hold (tests/suite_tiers.py): a small suite, run by a real pytest, is classed by the rules, gets each
tier's timeout, and a unit test that starts a process fails even when the code under test swallows the refusal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from suite_tiers import TIMEOUTS, process_modules

TESTS = Path(__file__).resolve().parent

CONFTEST = """
import sys
sys.path.insert(0, {tests!r})
from suite_tiers import pytest_collection_modifyitems, pytest_configure, pytest_runtest_call, pytest_runtest_setup
import pytest

@pytest.fixture
def shell():
    import os
    return lambda: os.system("true")
"""

HELPERS = """
import subprocess

def run_true():
    return subprocess.run(["true"], check=True)
"""

SUITE = """
import pytest
from helpers import run_true


def tier(request):
    markers = {m.name for m in request.node.iter_markers()}
    timeout = request.node.get_closest_marker("timeout").args[0]
    return [t for t in ("unit", "integration", "slow") if t in markers], timeout


def test_pure(request):
    assert tier(request) == (["unit"], {unit})


def test_helper_runs_a_process(request):
    run_true()
    assert tier(request) == (["integration"], {integration})


def test_fixture_runs_a_process(request, shell):
    assert shell() == 0 and tier(request) == (["integration"], {integration})


@pytest.mark.slow
def test_marked_slow(request):
    run_true()
    assert tier(request) == (["slow"], {slow})


@pytest.mark.timeout(7)
def test_own_timeout_kept(request):
    assert tier(request) == (["unit"], 7)


def test_hidden_process_is_refused():
    getattr(__import__("subproc" + "ess"), "run")(["true"])


def test_swallowed_refusal_still_fails():
    try:
        getattr(__import__("subproc" + "ess"), "run")(["true"])
    except Exception:
        pass


@pytest.mark.integration
def test_hidden_process_marked_integration(request):
    getattr(__import__("subproc" + "ess"), "run")(["true"], check=True)
    assert tier(request) == (["integration"], {integration})


def test_threads_of_earlier_tests_are_not_blamed(request):
    import threading
    assert tier(request)[0] == ["unit"]
    assert [t for t in threading.enumerate() if t.name == "earlier"]  # started by the test before, still running
"""

EARLIER = """
import subprocess, threading, time

def test_a_server_of_an_earlier_test():
    def serve():
        for _ in range(400):  # a process now and then, while the later tests run
            subprocess.run(["true"])
            time.sleep(0.05)
    threading.Thread(target=serve, name="earlier", daemon=True).start()
    assert True
"""


@pytest.mark.integration  # it runs pytest as a process through names the static rule does not follow
def test_a_small_suite_is_classed_timed_and_held_to_its_tiers(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST.format(tests=str(TESTS)))
    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "test_a_earlier.py").write_text(EARLIER)
    suite = SUITE
    for tier, seconds in TIMEOUTS.items():
        suite = suite.replace("{" + tier + "}", str(seconds))
    (tmp_path / "test_b_suite.py").write_text(suite)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(TESTS)])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "-rA", "-n", "0", "--rootdir", str(tmp_path), str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    outcomes = {line.split()[1].split("::")[-1]: line.split()[0] for line in proc.stdout.splitlines()
                if line.startswith(("PASSED ", "FAILED ", "ERROR "))}
    assert outcomes == {
        "test_a_server_of_an_earlier_test": "PASSED",
        "test_pure": "PASSED",
        "test_helper_runs_a_process": "PASSED",
        "test_fixture_runs_a_process": "PASSED",
        "test_marked_slow": "PASSED",
        "test_own_timeout_kept": "PASSED",
        "test_hidden_process_is_refused": "FAILED",
        "test_swallowed_refusal_still_fails": "FAILED",
        "test_hidden_process_marked_integration": "PASSED",
        "test_threads_of_earlier_tests_are_not_blamed": "PASSED",
    }, proc.stdout[-4000:] + proc.stderr[-2000:]
    for name in ("test_hidden_process_is_refused", "test_swallowed_refusal_still_fails"):
        refusal = f"{name} is a unit test and started a process (subprocess.Popen ['true'])"
        assert refusal in proc.stdout, proc.stdout[-4000:]
    order = [line.split("::")[-1].split()[0] for line in proc.stdout.splitlines() if line.startswith("PASSED")]
    assert order.index("test_marked_slow") < order.index("test_a_server_of_an_earlier_test")  # slow ones first


def test_the_coder_modules_that_start_processes() -> None:
    """The module rule on coder itself: the packages that run processes, and what imports them, are found; a
    package that runs none is not."""
    spawning = process_modules()
    assert {"coder.host.spawn", "coder.host.pty", "coder.vcs.repo", "coder.sandbox.shell", "coder.sandbox.exec",
            "coder.engine.builder"} <= spawning
    assert "coder.base.errors" not in spawning and "coder.edit.matcher" not in spawning
