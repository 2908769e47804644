"""A plugin repository whose only folder is a link to a host folder (the second red-team pass, finding F): `coder
plugin install file://REPO` installed the host folder (`p -> /outside`, which held a manifest and a secret) as a
plugin for every project. The plugin's folder is never reached through a link; the control is the same folder as
a real one in the repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_support import git

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("how", ["link", "control"])
def test_a_plugin_folder_reached_through_a_link_is_not_installed(tmp_path: Path, how: str) -> None:
    outside = tmp_path / "outside"
    (outside / ".claude-plugin").mkdir(parents=True)
    (outside / ".claude-plugin" / "plugin.json").write_text('{"name": "hostplug"}')
    (outside / "secret.txt").write_text("HOST-SECRET\n")
    source = tmp_path / "plugin-repo"
    source.mkdir()
    git(source, "init", "-q")
    if how == "link":
        os.symlink(outside, source / "p")
    else:
        shutil.copytree(outside, source / "p")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "plugin")
    data = tmp_path / "data"
    proc = subprocess.run([sys.executable, "-m", "coder", "plugin", "install", f"file://{source}"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(REPO), "XDG_DATA_HOME": str(data)})
    assert "Traceback" not in proc.stderr, proc.stderr
    installed = list(data.rglob("secret.txt"))
    if how == "link":
        assert proc.returncode != 0 and installed == [], proc.stdout + proc.stderr
        assert "no plugin here" in proc.stderr or "symlink" in proc.stderr, proc.stderr
    else:
        assert proc.returncode == 0, proc.stderr
        assert [p.read_text() for p in installed] == ["HOST-SECRET\n"]
