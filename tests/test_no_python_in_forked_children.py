"""The suite's intermittent hangs (a git child that never reached exec; a fixture's `git commit` past 120 s) had
the signature of Python run in a forked child of a process with threads: `preexec_fn` (the Python documentation
warns that the child can deadlock before exec). coder now sets limits with an exec wrapper (coder/host/limits.py)
and opens terminals without Python in the child (coder/host/pty.py); this keeps `preexec_fn` out of coder."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def preexec_calls(source: str, name: str) -> list[str]:
    """`file:line` of every call in `source` that passes `preexec_fn` (by keyword, or by a `**` dict that names it)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            named = keyword.arg == "preexec_fn" or (
                keyword.arg is None and isinstance(keyword.value, ast.Dict)
                and any(isinstance(k, ast.Constant) and k.value == "preexec_fn" for k in keyword.value.keys))
            if named:
                found.append(f"{name}:{node.lineno}")
    return found


def test_no_call_in_coder_passes_preexec_fn() -> None:
    found = [hit for path in sorted((ROOT / "coder").rglob("*.py"))
             for hit in preexec_calls(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert found == [], f"preexec_fn runs Python in a forked child and can hang it: use coder/host's limits ({found})"


def test_the_check_finds_preexec_fn() -> None:
    source = ("import subprocess\n"
              "subprocess.Popen(['true'], preexec_fn=lambda: None)\n"
              "pexpect.spawn('bash', **{'preexec_fn': setup})\n"
              "subprocess.run(['true'], start_new_session=True)\n")
    assert preexec_calls(source, "x.py") == ["x.py:2", "x.py:3"]
