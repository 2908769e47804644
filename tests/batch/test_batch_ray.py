"""`--backend ray` on a real local Ray cluster that the test starts on loopback (Ray is an optional extra)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


@pytest.fixture
def ray_cluster(tmp_path: Path):
    ray_bin = shutil.which("ray")
    assert ray_bin, "Ray is not installed: pip install 'ray[default]' (or pip install 'coder[ray]')"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    log = open(tmp_path / "ray.log", "w")
    temp_dir = Path("/tmp") / f"ray-coder-test-{os.getpid()}-{port}"  # Ray's socket paths must stay short
    proc = subprocess.Popen([ray_bin, "start", "--head", "--block", "--node-ip-address", "127.0.0.1", "--port",
                             str(port), "--num-cpus", "2", "--include-dashboard", "false", "--disable-usage-stats",
                             "--temp-dir", str(temp_dir)], stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if "--block" in (tmp_path / "ray.log").read_text() or proc.poll() is not None:
            break
        time.sleep(0.2)
    assert proc.poll() is None, (tmp_path / "ray.log").read_text()[-2000:]
    try:
        yield address
    finally:
        proc.send_signal(signal.SIGTERM)  # `ray start --block` drains and stops what it started
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # leftovers of this cluster only (its own session)
        except ProcessLookupError:
            pass
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.slow  # starting and draining a Ray cluster takes ~15 s on a loaded 2-core machine
def test_ray_backend_on_local_cluster(swe, tmp_path, ray_cluster):
    scripts = swe.write_scripts(tmp_path / "scripts")
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "coder", "swebench", "run", "--dataset", str(swe.dataset),
                           "--repos-dir", str(swe.repos_dir), "--output", str(run_dir), "--model",
                           f"scripted:{scripts}", "--backend", "ray", "--address", ray_cluster, "--workers", "2"],
                          capture_output=True, text=True, timeout=240,
                          env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    preds = json.loads((run_dir / "preds.json").read_text())
    assert sorted(preds) == swe.ids and all("+    return a + b" in p["model_patch"] for p in preds.values())
    for iid in swe.ids:
        inst = run_dir / "instances" / iid
        # the task ran in a scratch dir of its Ray worker; the driver wrote its artefacts into RUN_DIR
        assert json.loads((inst / f"{iid}.traj.json").read_text())["info"]["exit_status"] == "Submitted"
        assert (inst / "events.jsonl").read_text().count("session_end") == 1
        assert json.loads((inst / "status.json").read_text())["exit_reason"] == "done"
