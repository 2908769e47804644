"""Dependencies are declared as used (issue 48, item 7): deptry reads every import of the product and its test kit
against pyproject.toml; an import of a package that is not declared (one that only came along with another), or a
declared package nothing imports, fails. Its configuration and the few packages it cannot see used are
`[tool.deptry]` in pyproject.toml, each with the reason."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def deptry(*args: str, cwd: Path = ROOT) -> tuple[int, str]:
    """deptry's exit code and report (colours taken out)."""
    assert importlib.util.find_spec("deptry") is not None, "deptry is missing: pip install -e '.[dev]'"
    done = subprocess.run([sys.executable, "-m", "deptry", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())})
    return done.returncode, re.sub(r"\x1b\[[0-9;]*m", "", done.stderr + done.stdout)


def test_every_import_is_declared_and_every_dependency_imported() -> None:
    code, out = deptry("coder", "coder_testkit")
    assert code == 0 and "No dependency issues found" in out, out


def test_the_check_sees_a_missing_and_an_unused_dependency(tmp_path: Path) -> None:
    """The control: the same check over a small project that imports a package it does not declare (yaml, here
    installed only because something else needs it: deptry calls it transitive) and declares one it never imports."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n'
                                             'dependencies = ["rich>=13"]\n')
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "__init__.py").write_text("import yaml\n")
    code, out = deptry("demo", cwd=tmp_path)
    assert code == 1 and "DEP003 'yaml' imported but it is a transitive dependency" in out \
        and "DEP002 'rich' defined as a dependency but not used in the codebase" in out, out
