"""Shared fixtures. Every test runs with a private HOME, XDG dirs and git config, so nothing touches the
user's real home, git config or keys."""

from __future__ import annotations

import compileall
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from repo_support import git
from suite_tiers import (  # noqa: F401 - the tiers' hooks, registered by being names in this conftest
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_runtest_call,
    pytest_runtest_logreport,
    pytest_runtest_logstart,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_terminal_summary,
)

from coder.host.audit import install as install_door

# Hypothesis times each example (a 200 ms deadline) and fails a test whose data it finds slow to generate: on a
# machine loaded ten times over, both fail working tests. Speed is for benchmarks/; a property test checks results.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

#: PYTHONDONTWRITEBYTECODE, as the user set it (restored once the tests are collected)
DONT_WRITE_BYTECODE = sys.dont_write_bytecode
# pytest keeps its assert-rewritten test modules only where Python may write bytecode: with PYTHONDONTWRITEBYTECODE
# set, every xdist worker of every run parsed, rewrote and compiled all ~280 test modules again (5 s of CPU each,
# 40% of its collection). They are cached, in the gitignored __pycache__ folders, while the tests are collected.
sys.dont_write_bytecode = False

REPO = Path(__file__).resolve().parents[1]


def pytest_collection_finish(session: pytest.Session) -> None:
    sys.dont_write_bytecode = DONT_WRITE_BYTECODE


def pytest_sessionstart(session: pytest.Session) -> None:
    """Byte-compile coder once, before the workers start: hundreds of tests run `python -m coder`, and where
    PYTHONDONTWRITEBYTECODE is set (CI images, some shells; the tmux tests set it) each of them would compile
    every module it imports again (a quarter of the CPU a `coder run` spends)."""
    if not hasattr(session.config, "workerinput"):  # the xdist controller, or a run without xdist
        compileall.compile_dir(REPO / "coder", quiet=1)


# the run-time door (coder/host/audit.py) over the whole suite: coder's code, and libraries it calls, start no
# process except through coder/host; the suite's own starts (git, tmux, pexpect from a test) are not coder's
install_door(suite_roots=[str(REPO / "tests"), str(REPO / "benchmarks"), str(REPO / "coder_testkit")])

SECRET_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "CODER_MODEL")


GITCONFIG = "[user]\n\tname = Test User\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(GITCONFIG)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # `python -m coder` in a test's subprocess imports the checkout under test, whatever the cwd: not the coder
    # installed (editable) from another checkout, nor nothing, when the install points at a folder that is gone
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))))
    for var in SECRET_VARS:
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture(scope="session")
def git_repo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """git_repo's repository, made once per worker (session fixtures come before isolated_home: its own
    HOME and git config here)."""
    home = tmp_path_factory.mktemp("template-home")
    (home / ".gitconfig").write_text(GITCONFIG)
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home),
           "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_CONFIG_NOSYSTEM": "1"}
    repo = tmp_path_factory.mktemp("git-repo-template") / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "README.md").write_text("# demo\n")
    (repo / "src" / "app.py").write_text("def greet(name):\n    return 'hello ' + name\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, stdin=subprocess.DEVNULL,
                       timeout=120)
    return repo


@pytest.fixture
def git_repo(tmp_path: Path, git_repo_template: Path) -> Path:
    """A real git repository with one commit (README.md and src/app.py): a copy of one made once per worker,
    its index refreshed (a copy's files have new inodes and ctimes, and the first `git status` would rewrite
    the index, which tests of the user's index would take for coder's doing). One git process, not three."""
    repo = tmp_path / "repo"
    shutil.copytree(git_repo_template, repo, symlinks=True)
    git(repo, "update-index", "-q", "--refresh")
    return repo
