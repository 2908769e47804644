"""Workspaces made ahead and removed behind (coder/batch/ahead.py): the next instance's checkout is made while the
current instance's agent runs, a finished one is removed in the background, and a batch still ends with no
workspace left (also those made for instances that never started) and the same predictions. Real git (the
hardened host git of coder/batch/workspace.py) and the real agent in the bubblewrap sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from batch_fixtures import git

from coder.batch.ahead import WorkspacesAhead
from coder.batch.batch import run_batch
from coder.batch.instance_run import RunConfig, make_workspace
from coder.batch.instances import load_instances
from coder.batch.workspace import Workspace, WorkspaceError, create_workspace, workspace_patch


def _run(swe, run_dir: Path, scripts: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coder", "swebench", "run", "--dataset", str(swe.dataset),
                           "--repos-dir", str(swe.repos_dir), "--output", str(run_dir), "--model",
                           f"scripted:{scripts}", "--no-env", "--no-progress", *extra],
                          capture_output=True, text=True, timeout=240, env=dict(os.environ))


def test_the_next_workspace_is_made_while_an_instance_runs(swe, tmp_path):
    scripts = swe.write_scripts(tmp_path / "scripts", sleep={"acme__calc-1": 1.5})
    run_dir = tmp_path / "run"
    proc = _run(swe, run_dir, scripts, "--workers", "1", "--keep-workspaces")
    assert proc.returncode == 0, proc.stderr
    preds = json.loads((run_dir / "preds.json").read_text())
    assert sorted(preds) == swe.ids and all("+    return a + b" in p["model_patch"] for p in preds.values())
    first = json.loads((run_dir / "instances" / "acme__calc-1" / "status.json").read_text())
    second_ws = run_dir / "workspaces" / "acme__calc-2"
    made = (second_ws / ".git" / "HEAD").stat().st_mtime  # written by the checkout of its base commit
    # made during the first instance's `sleep 1.5`, not after it ended (1 worker: the old order)
    assert made < first["finished_at"] - 0.5, (made, first["finished_at"])
    assert "a + b" in (second_ws / "calc.py").read_text()  # and then worked in by its own agent


def test_a_batch_leaves_no_workspace_behind(swe, tmp_path):
    scripts = swe.write_scripts(tmp_path / "scripts")
    run_dir = tmp_path / "run"
    cfg = RunConfig(run_dir=run_dir, model=f"scripted:{scripts}", repos_dir=swe.repos_dir, workers=1,
                    progress=False)
    summary = run_batch(load_instances(swe.dataset), cfg)
    assert summary.finished == 3 and summary.crashed == 0
    assert list((run_dir / "workspaces").iterdir()) == []  # every removal done when run_batch returns
    preds = json.loads((run_dir / "preds.json").read_text())
    assert all("+    return a + b" in p["model_patch"] for p in preds.values())


def test_made_ahead_taken_failed_and_unused(swe, tmp_path):
    ahead = WorkspacesAhead()
    made, bad, unused = tmp_path / "ws" / "made", tmp_path / "ws" / "bad", tmp_path / "ws" / "unused"
    ahead.prepare(made, lambda: create_workspace(swe.mirror, swe.base_commit, made))
    ahead.prepare(bad, lambda: create_workspace(swe.mirror, "0" * 40, bad))
    unused_made = threading.Event()

    def make_unused() -> Workspace:
        ws = create_workspace(swe.mirror, swe.base_commit, unused)
        unused_made.set()
        return ws

    ahead.prepare(unused, make_unused)
    ws = ahead.take(made)
    assert ws is not None and ws.path == made and ws.base_commit == swe.base_commit
    assert (made / "calc.py").is_file() and not (made / "README.md").exists()  # the base commit, not main
    with pytest.raises(WorkspaceError, match="is not in the mirror"):
        ahead.take(bad)  # raised where the instance would have raised it
    assert ahead.take(tmp_path / "ws" / "never-asked") is None
    assert unused_made.wait(30)
    assert (unused / "calc.py").is_file()  # made ahead, and its instance never starts
    ahead.remove(made)
    ahead.close()
    assert not made.exists() and not unused.exists()


def test_a_settled_workspace_has_no_racily_clean_entry_and_misses_no_change(swe, tmp_path):
    """The agent's workspace is settled (workspace.settle_index) so the patch needs no hashing of the whole tree:
    every index entry is older than the index itself (what git checks); and a change of the same size made right
    away is still in the patch."""
    inst = load_instances(swe.dataset)[0]
    cfg = RunConfig(run_dir=tmp_path / "run", repos_dir=swe.repos_dir)
    ws = make_workspace(inst, cfg, tmp_path / "ws")
    index_mtime = (ws.path / ".git" / "index").stat().st_mtime
    entries = [int(line.split()[1].split(":")[0]) for line in git(ws.path, "ls-files", "--debug").splitlines()
               if line.strip().startswith("mtime:")]
    assert len(entries) == 2 and max(entries) < int(index_mtime), (entries, index_mtime)
    assert git(ws.path, "status", "--porcelain") == ""  # settled, not changed
    calc = ws.path / "calc.py"
    before = calc.read_bytes()
    calc.write_text(before.decode().replace("a - b", "a + b"))  # same size, same second as the settling
    assert calc.stat().st_size == len(before)
    patch = workspace_patch(ws.path, ws.base_commit)
    assert "-    return a - b\n+    return a + b" in patch
