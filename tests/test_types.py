"""The type checker runs on every suite run, so CI runs it (issue 34): basedpyright in standard mode on `coder/`,
configured in pyproject.toml (`[tool.basedpyright]`). From the command line: `basedpyright`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def basedpyright(project: Path, timeout: float = 900) -> dict:
    """basedpyright's JSON report on `project` (its pyproject.toml says what to check)."""
    beside = Path(sys.executable).parent / "basedpyright"  # the dev extra installs it beside this Python
    command = str(beside) if beside.exists() else shutil.which("basedpyright")
    if command is None:
        pytest.fail("basedpyright is not installed: pip install -e '.[dev]' (or bash install.sh)")
    run = subprocess.run([command, "--outputjson", "--project", str(project)], cwd=project, capture_output=True,
                         text=True, timeout=timeout)
    try:
        return json.loads(run.stdout)
    except ValueError:
        pytest.fail(f"basedpyright said no JSON (exit {run.returncode}): {run.stdout[-2000:]} {run.stderr[-2000:]}")


def errors(report: dict) -> list[str]:
    return [f"{d['file']}:{d['range']['start']['line'] + 1}: {d.get('rule', '')}: {d['message']}"
            for d in report["generalDiagnostics"] if d["severity"] == "error"]


@pytest.mark.slow
@pytest.mark.timeout(1200)  # about 35 s of CPU; on a loaded 2-core machine it has taken 3 minutes
def test_coder_type_checks_clean() -> None:
    report = basedpyright(ROOT)
    assert report["summary"]["filesAnalyzed"] > 200, report["summary"]  # it really read the package
    assert errors(report) == []


def test_the_checker_finds_a_type_error(tmp_path: Path) -> None:
    """The control: the same configuration on a package with one wrong type reports it."""
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = config[config.index("[tool.basedpyright]"):]
    (tmp_path / "pyproject.toml").write_text(section, encoding="utf-8")
    (tmp_path / "coder").mkdir()
    (tmp_path / "coder" / "__init__.py").write_text("")
    (tmp_path / "coder" / "wrong.py").write_text('def width() -> int:\n    return "80"\n')
    found = errors(basedpyright(tmp_path, timeout=300))
    assert len(found) == 1 and "wrong.py:2: reportReturnType" in found[0]
