"""The interpreter the review's tests and the evidence run use is the project's: its `.venv`, else `python3` as the
sandboxed shell finds it on PATH (an activated venv), never coder's own `sys.executable` (issue 47's trial: coder
installed apart from the project ran the project's tests without the project's dependencies)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from review_support import _git  # noqa: I001

from coder.config.layers import settings
from coder.review.context import ReviewContext
from coder.review.testing import run_selected
from coder.vcs.repo import Repo

TEST = "import onlyvenv\n\n\ndef test_the_venvs_module():\n    assert onlyvenv.ANSWER == {answer}\n"


def _venv(where: Path) -> Path:
    """A venv (no pip) holding a module `onlyvenv` that coder's interpreter does not have; pytest reaches it
    through a .pth to this interpreter's site-packages (the sandbox gets that folder through `extra_ro`)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = Path(subprocess.run([str(where / "bin" / "python"), "-c", "import sysconfig; print(sysconfig."
                                "get_paths()['purelib'])"], check=True, capture_output=True, text=True).stdout.strip())
    (site / "onlyvenv.py").write_text("ANSWER = 42\n")
    (site / "coders_pytest.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return where


def _project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "test_answer.py").write_text(TEST.format(answer=41))
    (repo / ".gitignore").write_text(".venv/\n")
    _git(tmp_path, "init", "-q", "-b", "main", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a test")
    (repo / "test_answer.py").write_text(TEST.format(answer=42))  # the change under review
    return repo


#: the tests stage only; the sandbox reads this interpreter's site-packages (pytest), which the venvs point at
CONFIG = settings({"review": {"stages": ["tests"]}, "sandbox": {"extra_ro": [sysconfig.get_paths()["purelib"]]}})


def _review_tests(repo: Path) -> tuple[Any, Repo]:
    """The review of `repo`'s uncommitted change, its tests stage only."""
    from coder.review.pipeline import review

    opened = Repo.open(repo)
    return review(opened, opened.diff(), config=CONFIG), opened


@pytest.mark.parametrize("where", [".venv in the project", "only on PATH"])
def test_the_projects_tests_run_with_the_projects_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         where: str) -> None:
    with pytest.raises(ImportError):  # the plant is live: coder's own interpreter lacks the module
        __import__("onlyvenv")
    repo = _project(tmp_path)
    if where == "only on PATH":
        env = _venv(tmp_path / "env")
        monkeypatch.setenv("PATH", f"{env / 'bin'}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("VIRTUAL_ENV", str(env))
    else:
        _venv(repo / ".venv")
    result, opened = _review_tests(repo)
    stage = result.stage("tests")
    assert result.verdict == "pass" and "related tests passed" in stage.note, result.render() + stage.details
    # issue 49's evidence run (coder.engine.verify, `on_unverified = "run"`) runs the same selection the same way
    run = run_selected(ReviewContext(opened, opened.diff(), config=CONFIG))
    assert run is not None and run.exit_code == 0 and "1 passed" in run.output, run
    assert sys.executable not in run.command


def test_no_python3_on_the_sandboxs_path_is_tests_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a venv the word `python3` is resolved in the sandbox; a PATH there without one is "tests not run"
    (a warning the commit goes past), not a failing test the model is sent to fix."""
    from coder.review.pipeline import review

    repo = _project(tmp_path)
    monkeypatch.setenv("CODER_SANDBOX_ENV", '{"PATH": "/nonexistent-bin"}')  # inside the sandbox only
    opened = Repo.open(repo)
    result = review(opened, opened.diff(), config=settings({"review": {"stages": ["tests"]}}))
    stage = result.stage("tests")
    assert "python3: command not found" in stage.details  # the plant is live
    assert result.verdict == "warn" and [f.check for f in result.findings] == ["tests-not-run"], result.render()


def test_a_failure_the_base_had_too_is_found_with_the_projects_venv(tmp_path: Path) -> None:
    """The base tree runs in an exported copy outside the project: the project's `.venv` (untracked, so not in the
    copy) is lent to that sandbox read-only, so a test that failed before the change is a warning, not an error
    the model is sent to fix. (It was not: the copy's sandbox could not see the venv, the run failed to start, and
    every failure counted as new.)"""
    repo = _project(tmp_path)
    known_bug = "\n\ndef test_known_bug():\n    assert onlyvenv.ANSWER == 0\n"
    (repo / "test_answer.py").write_text(TEST.format(answer=42) + known_bug)
    _git(repo, "commit", "-qam", "a known bug")
    (repo / "test_answer.py").write_text(TEST.format(answer=42) + known_bug + "\n\ndef test_more():\n    pass\n")
    _venv(repo / ".venv")
    result, _ = _review_tests(repo)
    assert [(f.check, f.severity) for f in result.findings] == [("tests-already-failing", "warning")], (
        result.render() + result.stage("tests").details)
    assert result.verdict == "warn"
