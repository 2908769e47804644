"""Helpers to run the real `coder` command line in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def coder(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 60,
          stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "coder", *args], cwd=cwd, env=full_env, capture_output=True,
                          text=True, timeout=timeout, input=stdin if stdin is not None else "")


def write_script(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"turns": turns}))
    return path

