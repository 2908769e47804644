"""SWE-bench-style instances built for real: a git repository with a bug, an issue, a gold patch, a test patch,
FAIL_TO_PASS / PASS_TO_PASS lists, a local mirror in the `--repos-dir` layout, and the environment spec for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from batch_fixtures import BUGGY, SPECS, TESTS, SweFixture, git


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
