"""What would make every instance fail the same way is said once, before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def coder(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coder", *args], capture_output=True, text=True, timeout=240,
                          cwd=cwd, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


def test_no_mirror_for_any_instance_fails_once_with_the_commands(swe, tmp_path: Path) -> None:
    scripts = swe.write_scripts(tmp_path / "scripts")
    empty = tmp_path / "no-mirrors"
    empty.mkdir()
    proc = coder("swebench", "run", "--dataset", str(swe.dataset), "--repos-dir", str(empty), "--output",
                 str(tmp_path / "run"), "--model", f"scripted:{scripts}", "--no-progress")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no instance can run" in proc.stderr and proc.stderr.count("git clone --mirror") == 1
    assert f"{empty}/acme__calc" in proc.stderr and not (tmp_path / "run" / "instances").exists()


def test_relative_scripted_dir_is_the_callers(swe, tmp_path: Path) -> None:
    swe.write_scripts(tmp_path / "scripts")
    proc = coder("swebench", "run", "--dataset", str(swe.dataset), "--repos-dir", str(swe.repos_dir), "--output",
                 str(tmp_path / "run"), "--model", "scripted:scripts", "--instances", swe.ids[0], "--no-progress",
                 cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "1 finished now" in proc.stderr
    import json

    assert list(json.loads((tmp_path / "run" / "preds.json").read_text())) == [swe.ids[0]]


def test_duplicate_issue_ids_are_refused(tmp_path: Path) -> None:
    import pytest

    from coder.base.errors import UsageError
    from coder.batch.instances import load_issue_list

    issues = tmp_path / "issues.jsonl"
    issues.write_text('{"id": "typo", "body": "a"}\n{"id": "other", "body": "b"}\n{"id": "typo", "body": "c"}\n')
    with pytest.raises(UsageError, match=r"'typo' appears twice \(records 1 and 3\)"):
        load_issue_list(issues, "HEAD", "me/repo")
