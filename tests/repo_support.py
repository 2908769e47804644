"""Helpers any test folder may import (`from repo_support import git`); fixtures stay in conftest.py."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` and return its stdout; raise on failure."""
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout
