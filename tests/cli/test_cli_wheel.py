"""A wheel built from the repository works from any directory in a fresh venv (contracts and prompts inside)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from cli_support import REPO, write_script


@pytest.mark.slow  # builds the wheel and a fresh venv
def test_wheel_in_fresh_venv(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(REPO)],
                   check=True, capture_output=True, text=True)
    wheel = next(dist.glob("coder-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "coder/_data/prompts/system.md" in names
    assert any(n.startswith("coder/_data/tools/") and n.endswith(".json") for n in names)
    assert not [n for n in names if n.startswith("coder_testkit/") or "fake_" in n], "the test kit is not shipped"

    env_dir = tmp_path / "venv"
    # dependencies come from this interpreter's site-packages; the wheel itself is installed fresh
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet",
                    str(wheel)], check=True, capture_output=True, text=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # a checkout on PYTHONPATH would win
    where = subprocess.run([str(python), "-c", "import coder; print(coder.__file__)"], cwd=elsewhere,
                           capture_output=True, text=True, check=True, env=env).stdout
    assert str(env_dir) in where, where  # the wheel, not the source checkout
    version = subprocess.run([str(env_dir / "bin" / "coder"), "--version"], cwd=elsewhere, capture_output=True,
                             text=True, check=True, env=env)
    assert version.stdout.startswith("coder ")
    script = write_script(tmp_path / "s.json", [{"text": "from the wheel"}])
    run = subprocess.run([str(env_dir / "bin" / "coder"), "run", "--model", f"scripted:{script}",
                          "--output-format", "json", "hi"], cwd=elsewhere, capture_output=True, text=True, timeout=120,
                         env=env)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["final_text"] == "from the wheel"
