"""Fixtures for the vcs tests: a repository with pre-existing user work (staged, unstaged, untracked) and
fingerprints of everything a checkpoint must never touch."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest


def git(repo: Path, *args: str, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def user_state(repo: Path) -> dict[str, str]:
    """What belongs to the user: index bytes, branch, HEAD, the stash, their refs."""
    index = repo / ".git" / "index"
    return {
        "index": hashlib.sha256(index.read_bytes()).hexdigest() if index.exists() else "",
        "head": git(repo, "rev-parse", "HEAD", check=False).strip(),
        "branch": git(repo, "symbolic-ref", "-q", "HEAD", check=False).strip(),
        "stash": git(repo, "stash", "list", check=False),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags",
                    "refs/stash"),
        "staged": git(repo, "diff", "--cached"),
    }


@pytest.fixture
def dirty_repo(git_repo: Path) -> Path:
    """git_repo plus the user's own uncommitted work: a stash, a staged change, an unstaged change, an
    untracked file, and an ignored file."""
    (git_repo / ".gitignore").write_text("*.log\nbuild/\n")
    git(git_repo, "add", ".gitignore")
    git(git_repo, "commit", "-q", "-m", "ignore logs")
    (git_repo / "README.md").write_text("# demo\nstashed idea\n")
    git(git_repo, "stash", "push", "-q", "-m", "users stash")
    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    git(git_repo, "add", "src/app.py")  # staged
    (git_repo / "README.md").write_text("# demo\nuser notes, unstaged\n")  # unstaged
    (git_repo / "notes.txt").write_text("user's untracked notes\n")  # untracked
    (git_repo / "debug.log").write_text("ignored\n")
    return git_repo


@pytest.fixture
def g():
    """`g(repo, *args)` runs git and returns stdout (fails the test on error unless check=False)."""
    return git


@pytest.fixture
def fingerprint():
    return user_state
