"""Helpers any test folder may import (`from repo_support import git`); fixtures stay in conftest.py."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` and return its stdout; raise on failure.

    stdin is /dev/null (an xdist worker's stdin is its channel to the controller; nothing may read it) and a
    git that has not finished in 120 s fails the test at once with its command, rather than hanging the run
    until pytest-timeout (CI once saw a fixture's `git commit` hang for 300 s)."""
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120).stdout
