"""The agent processes of a batch (coder/batch/runner.py): forked warm from a fork server, still one process per
instance. A crash or a hang of one is that instance's outcome, never the batch's; the session is exported from its
database without a second process; batch workspaces take no undo checkpoints (and `coder run` still does by
default); the predictions file is kept up to date without rereading every instance. And the agent process never
imports code from the instance's repository on the host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batch_fixtures import BUGGY, TESTS, SweFixture, git

from coder.batch import runner
from coder.batch.outputs import InstanceStatus, RunDir

ROOT = Path(__file__).resolve().parents[2]


def _coder(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coder", *args], capture_output=True, text=True, timeout=240,
                          env={**os.environ, **(env or {})}, cwd=cwd)


def _run(swe, run_dir: Path, model: str, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return _coder("swebench", "run", "--dataset", str(swe.dataset), "--repos-dir", str(swe.repos_dir), "--output",
                  str(run_dir), "--model", model, "--no-env", "--no-progress", *extra, env=env)


def test_exported_session_and_no_checkpoints_in_batch_workspaces(swe, tmp_path):
    scripts = swe.write_scripts(tmp_path / "scripts", ids=["acme__calc-1"])
    run_dir = tmp_path / "run"
    proc = _run(swe, run_dir, f"scripted:{scripts}", "--instances", "acme__calc-1", "--keep-workspaces")
    assert proc.returncode == 0, proc.stderr
    inst = run_dir / "instances" / "acme__calc-1"
    status = json.loads((inst / "status.json").read_text())
    # the trajectory read from the session database is what `coder sessions export` prints
    exported = _coder("sessions", "export", status["session_id"], env={"CODER_STATE_DIR": str(inst / "state")},
                      cwd=inst)
    assert exported.returncode == 0, exported.stderr
    ours = [json.loads(line) for line in (inst / "events.jsonl").read_text().splitlines()]
    theirs = [json.loads(line) for line in exported.stdout.splitlines()]
    assert ours == theirs and len(ours) > 5 and ours[-1]["type"] == "session_end"
    # the batch's throwaway clone got no checkpoint refs...
    ws = run_dir / "workspaces" / "acme__calc-1"
    assert "a + b" in (ws / "calc.py").read_text()
    assert git(ws, "for-each-ref", "refs/coder") == ""
    # ...while `coder run` in the same kind of clone takes them (control), and refuses --commit without them
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(swe.mirror), str(other))
    script = scripts / "acme__calc-1.json"
    plain = _coder("run", "--cwd", str(other), "--model", f"scripted:{script}", "--permission-mode", "auto",
                   "fix add()", env={"CODER_STATE_DIR": str(tmp_path / "state")})
    assert plain.returncode == 0, plain.stderr
    assert "refs/coder/" in git(other, "for-each-ref", "refs/coder")
    refused = _coder("run", "--cwd", str(other), "--model", f"scripted:{script}", "--no-checkpoints", "--commit",
                     "fix add()", env={"CODER_STATE_DIR": str(tmp_path / "state")})
    assert refused.returncode == 2 and "--commit needs checkpoints" in refused.stderr


def test_a_crashing_agent_is_one_crashed_instance_and_coder_batch_agent_is_run(swe, tmp_path):
    """CODER_BATCH_AGENT is exec'ed in the forked process: an agent that dies of SIGSEGV crashes its instance
    only; the same variable naming this coder runs the instances for real."""
    crasher = tmp_path / "crasher.py"
    crasher.write_text("import os, signal, sys\nprint('starting', sys.argv[1:3], file=sys.stderr, flush=True)\n"
                       "os.kill(os.getpid(), signal.SIGSEGV)\n")
    run_dir = tmp_path / "run"
    scripts = swe.write_scripts(tmp_path / "scripts", ids=["acme__calc-1"])
    proc = _run(swe, run_dir, f"scripted:{scripts}", "--instances", "acme__calc-1",
                env={"CODER_BATCH_AGENT": f"{sys.executable} {crasher}"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr  # one instance crashed
    status = json.loads((run_dir / "instances" / "acme__calc-1" / "status.json").read_text())
    assert status["state"] == "crashed" and "coder run exited -11" in status["error"]
    assert "starting ['run', '--cwd']" in (run_dir / "instances" / "acme__calc-1" / "agent.log").read_text()
    again = _run(swe, run_dir, f"scripted:{scripts}", "--instances", "acme__calc-1",
                 env={"CODER_BATCH_AGENT": f"{sys.executable} -m coder", "PYTHONPATH": str(ROOT)})
    assert again.returncode == 0, again.stderr
    assert "a + b" in json.loads((run_dir / "preds.json").read_text())["acme__calc-1"]["model_patch"]


def test_a_hung_agent_is_stopped_at_its_wall_time(tmp_path, monkeypatch):
    """An agent that ignores SIGINT and never ends: SIGINT at the wall time (plus grace), then SIGKILL."""
    hung = tmp_path / "hung.py"
    hung.write_text("import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                    "print('ignoring SIGINT', flush=True)\ntime.sleep(600)\n")
    monkeypatch.setenv("CODER_BATCH_AGENT", f"{sys.executable} {hung}")
    monkeypatch.setattr(runner, "WALL_GRACE_S", 0.5)
    monkeypatch.setattr(runner, "STOP_WAITS", (0.5, 5.0))
    (tmp_path / "ws").mkdir()
    prompt = tmp_path / "prompt.md"
    prompt.write_text("task")
    start = time.monotonic()
    result = runner.run_agent(runner.AgentRequest(workspace=tmp_path / "ws", prompt_file=prompt,
                                                  state_dir=tmp_path / "state", model="scripted:x", wall_time=1.0,
                                                  log_path=tmp_path / "agent.log"))
    took = time.monotonic() - start
    assert result.exit_reason == "wall_time" and result.returncode == -9  # it took SIGKILL to end it
    assert 1.5 < took < 30
    assert (tmp_path / "state" / "agent.out").read_text() == "ignoring SIGINT\n"  # it was running meanwhile


def test_predictions_follow_each_record(tmp_path):
    run = RunDir(tmp_path / "run")
    run.record(InstanceStatus("b-1", model="m"), "patch b\n")
    run.record(InstanceStatus("a-1", model="m"), "patch a\n")
    preds = json.loads((run.root / "preds.json").read_text())
    assert list(preds) == ["a-1", "b-1"] and preds["a-1"]["model_patch"] == "patch a\n"
    run.record(InstanceStatus("a-1", state="crashed", error="boom"), None)  # a --redo that crashed
    assert list(json.loads((run.root / "preds.json").read_text())) == ["b-1"]
    lines = [json.loads(line) for line in (run.root / "preds.jsonl").read_text().splitlines()]
    assert lines == [{"instance_id": "b-1", "model_name_or_path": "m", "model_patch": "patch b\n"}]
    assert RunDir(run.root).predictions() == json.loads((run.root / "preds.json").read_text())  # = from disk


def test_an_instance_record_fsyncs_its_own_files_not_the_derived_ones(tmp_path, monkeypatch):
    """patch.diff and status.json (the done marker) reach the disk before the next instance; preds.json and
    preds.jsonl, rebuilt from them whenever a run starts, are only replaced atomically (no fsync per instance)."""
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{fd}")).name.split(".")[1])  # .NAME.EXT.PID.TID.tmp
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    run = RunDir(tmp_path / "run")
    run.record(InstanceStatus("a-1", model="m"), "patch a\n")
    assert sorted(synced) == ["patch", "status"]
    assert json.loads((run.root / "preds.json").read_text())["a-1"]["model_patch"] == "patch a\n"
    assert json.loads((run.root / "preds.jsonl").read_text())["instance_id"] == "a-1"


@pytest.fixture
def planted(tmp_path) -> tuple[SweFixture, Path]:
    """An instance whose repository carries a `coder` package that touches a marker outside when imported."""
    outside = tmp_path / "outside"
    outside.mkdir()
    mirror = tmp_path / "repos" / "acme__calc"
    (mirror / "tests").mkdir(parents=True)
    (mirror / "coder").mkdir()
    git(mirror, "init", "-q", "-b", "main")
    (mirror / "calc.py").write_text(BUGGY)
    (mirror / "tests" / "test_calc.py").write_text(TESTS)
    payload = f"import pathlib\npathlib.Path({str(outside / 'marker')!r}).touch()\n"
    (mirror / "coder" / "__init__.py").write_text(payload)
    (mirror / "coder" / "__main__.py").write_text(payload)
    git(mirror, "add", "-A")
    git(mirror, "commit", "-q", "-m", "calc, and a package named like the agent")
    fx = SweFixture(tmp_path, tmp_path / "repos", mirror, tmp_path / "dataset.jsonl", tmp_path / "specs.json",
                    git(mirror, "rev-parse", "HEAD").strip(), ["acme__calc-1"])
    fx.dataset.write_text(json.dumps(fx.record("acme__calc-1")) + "\n")
    return fx, outside


@pytest.mark.parametrize("agent", ["forked", "CODER_BATCH_AGENT"])
def test_a_coder_package_in_the_instance_repository_never_runs_on_the_host(planted, tmp_path, agent):
    fx, outside = planted
    # control: `python -m coder` started in a checkout of that repository runs the planted package
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(fx.mirror), str(checkout))
    subprocess.run([sys.executable, "-m", "coder", "--version"], cwd=checkout, capture_output=True, timeout=60)
    assert (outside / "marker").exists(), "the planted package did not run: the attack setup is not real"
    (outside / "marker").unlink()
    env = {"CODER_BATCH_AGENT": f"{sys.executable} -m coder", "PYTHONPATH": str(ROOT)} if agent != "forked" else {}
    scripts = fx.write_scripts(tmp_path / "scripts")
    proc = _run(fx, tmp_path / "run", f"scripted:{scripts}", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "a + b" in json.loads((tmp_path / "run" / "preds.json").read_text())["acme__calc-1"]["model_patch"]
    assert not (outside / "marker").exists()
