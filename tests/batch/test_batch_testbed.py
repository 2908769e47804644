"""Environments shared by agent and evaluator, for real: a package instance whose environment builds offline,
the agent's sandboxed shell importing the workspace through it, the evaluation sandboxed, and a failed build
reported once per environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from batch_fixtures import GOLD_PATCH
from testbed_fixtures import OFFLINE, SPEC, VERSION, make_package_instances, write_env_scripts

from coder.batch.envs import load_spec_table
from coder.batch.evaluate import EvalConfig, evaluate
from coder.batch.instances import load_instances


def coder(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "coder", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **OFFLINE})


def _pred(iid: str, patch: str) -> dict:
    return {"instance_id": iid, "model_name_or_path": "test", "model_patch": patch}


@pytest.mark.slow  # builds a venv for the instance
def test_agent_shell_runs_the_tests_in_the_environment_then_eval_resolves(swe, env_cache, tmp_path):
    base = make_package_instances(swe)
    scripts = write_env_scripts(tmp_path / "scripts", ["acme__calc-1"])
    run_dir = tmp_path / "run"
    proc = coder("swebench", "run", "--dataset", str(swe.dataset), "--repos-dir", str(swe.repos_dir), "--output",
                 str(run_dir), "--model", f"scripted:{scripts}", "--instances", "acme__calc-1", "--specs",
                 str(swe.specs), "--cache-dir", str(env_cache))
    assert proc.returncode == 0, proc.stderr
    assert f"environment acme__calc-{VERSION}-py311: ready" in proc.stderr
    inst = run_dir / "instances" / "acme__calc-1"
    traj = json.loads((inst / "acme__calc-1.traj.json").read_text())
    outputs = [m["content"] for m in traj["messages"] if m["role"] == "tool"]
    ws = run_dir / "workspaces" / "acme__calc-1"
    # first command, from `/`: the package is the workspace's, through the instance layer over the environment
    assert f"IMPORTED {ws}/calc.py" in outputs[0], outputs[0]
    assert f"VENV {ws}.testbed" in outputs[0] and f"PREFIX {ws}.testbed" in outputs[0]
    # git works in the shell: the shared clone's borrowed objects (the mirror's) are mounted read-only; HEAD is
    # the harness-style setup commit on top of the base commit
    head = outputs[0].split("HEAD ", 1)[1].split()[0]
    assert len(head) == 40 and head != base
    # no host cgroup tree, as the evaluator's sandbox (a cgroup v1 host's cpu.shares would read as one CPU)
    assert "CGROUPS 0" in outputs[0], outputs[0]
    # the instance's tests ran with pytest from the environment: test_mul passes, the bug shows in test output
    assert "PASSED tests/test_calc.py::test_mul" in outputs[1]
    assert "SUM 5" in outputs[3]  # the agent's edit is what Python imports (editable install)
    prompt = (inst / "prompt.md").read_text()
    assert "test environment is active" in prompt and "`python -m pytest -rA -p no:cacheprovider`" in prompt
    preds = json.loads((run_dir / "preds.json").read_text())
    patch = preds["acme__calc-1"]["model_patch"]
    # the harness's pre-install change (committed as the harness commits it) and the egg-info stay out of the patch
    assert "+    return a + b" in patch and "setup.py" not in patch and "egg-info" not in patch
    ev = coder("swebench", "eval", str(run_dir / "preds.json"), "--dataset", str(swe.dataset), "--repos-dir",
               str(swe.repos_dir), "--specs", str(swe.specs), "--cache-dir", str(env_cache))
    assert ev.returncode == 0, ev.stderr
    assert "resolved  acme__calc-1" in ev.stdout


def _writer(*targets: Path) -> str:
    """Python lines that try to write a marker at each target (errors ignored: a read-only place stays so)."""
    return (f"for _p in {tuple(str(t) for t in targets)!r}:\n    try:\n        open(_p, 'w').write('x')\n"
            "    except OSError:\n        pass\n")


def test_evaluation_runs_the_patch_in_the_sandbox(swe, env_cache, tmp_path, monkeypatch):
    # A prediction whose code, imported by the tests, writes markers outside the workspace: in a folder of the
    # test's own, in HOME, and into the shared environment (which would poison every later instance).
    make_package_instances(swe)
    for key, value in OFFLINE.items():
        monkeypatch.setenv(key, value)
    outside = tmp_path / "outside"
    outside.mkdir()
    env_dir = env_cache / "envs" / f"acme__calc-{VERSION}-py311"
    targets = (outside / "marker", Path.home() / "marker", env_dir / "marker")
    # and what it sees of the host's cgroup tree: nothing, as in the harness's containers on a cgroup v2 host
    payload = _writer(*targets) + ("open('cgroups.txt', 'w')"
                                   ".write(str(len(__import__('os').listdir('/sys/fs/cgroup'))))\n")
    attack = GOLD_PATCH.replace(" def add(a, b):\n", "".join(f"+{line}\n" for line in payload.splitlines()) +
                                " def add(a, b):\n")
    attack = attack.replace("@@ -1,5 +1,5 @@", f"@@ -1,5 +1,{5 + len(payload.splitlines())} @@")
    # control: the same code, run directly on the host, does write its marker
    control = tmp_path / "control"
    control.mkdir()
    subprocess.run([sys.executable, "-c", _writer(control / "marker")], check=True)
    assert (control / "marker").exists()
    cfg = EvalConfig(output=tmp_path / "eval", repos_dir=swe.repos_dir, cache_dir=env_cache,
                     specs=load_spec_table(swe.specs), dataset_path=str(swe.dataset), keep_workspaces=True)
    report = evaluate(load_instances(swe.dataset)[:1], {"acme__calc-1": _pred("acme__calc-1", attack)}, cfg)
    r = report["instances"]["acme__calc-1"]
    assert r["status"] == "resolved", r  # the tests did run, and imported the patched code
    assert (tmp_path / "eval" / "workspaces" / "acme__calc-1" / "cgroups.txt").read_text() == "0"
    assert not any(t.exists() for t in targets), [t for t in targets if t.exists()]
    assert env_dir.is_dir()


@pytest.mark.slow  # builds (and fails) an environment
def test_a_failed_environment_build_is_reported_once_for_all_its_instances(swe, tmp_path):
    make_package_instances(swe, SPEC | {"pip_packages": ["no-such-package-anywhere==0.0.1"]})
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({i: _pred(i, GOLD_PATCH) for i in swe.ids}))
    cache = tmp_path / "cache"
    proc = coder("swebench", "eval", str(preds), "--dataset", str(swe.dataset), "--repos-dir", str(swe.repos_dir),
                 "--specs", str(swe.specs), "--cache-dir", str(cache), "--output", str(tmp_path / "eval"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("NOT AVAILABLE") == 1 and "no-such-package-anywhere" in proc.stderr
    assert proc.stderr.count("no-such-package-anywhere") == 1  # the reason once, not once per instance
    assert "could not evaluate 3" in proc.stderr and "python -m swebench.harness.run_evaluation" in proc.stderr
    report = json.loads((tmp_path / "eval" / "report.json").read_text())
    (env,) = report["environments"].values()
    assert env["status"] == "unavailable" and env["instances"] == swe.ids
    assert report["needs_official_harness"] == swe.ids and report["unresolved_instances"] == 0
    log = next(cache.glob("envs/acme__calc-*/build.log")).read_text()
    assert log.count("no-such-package-anywhere") >= 1 and log.count("$ python -m pip install no-such") == 1
    # and `coder swebench envs` reports it, with the reason, from the cache (no new build)
    envs = coder("swebench", "envs", "--dataset", str(swe.dataset), "--repos-dir", str(swe.repos_dir), "--specs",
                 str(swe.specs), "--cache-dir", str(cache))
    assert envs.returncode == 0, envs.stderr
    assert "unavailable" in envs.stdout and "no-such-package-anywhere" in envs.stdout
    assert "0/3 instances have a ready environment" in envs.stdout
    assert next(cache.glob("envs/acme__calc-*/build.log")).read_text() == log


@pytest.mark.slow  # builds a venv for the instance
def test_batch_in_own_repo_with_an_environment(swe, tmp_path):
    # `coder batch --env SPEC`: the user's repository gets an environment like a SWE-bench version, and the
    # agent's first command imports the workspace through it. The build runs the repository's own setup code:
    # in the sandbox, where a step that writes outside the checkout and the venv (here: into a folder of the
    # test's own and into HOME) writes nothing.
    make_package_instances(swe)
    outside = tmp_path / "outside"
    outside.mkdir()
    targets = (outside / "from-build", Path.home() / "from-build")
    writer = "; ".join(f"(echo x > {t}) 2>/dev/null || true" for t in targets)
    issues = tmp_path / "issues.jsonl"
    issues.write_text(json.dumps({"id": "acme__calc-1", "title": "add subtracts", "body": "add(2, 3) is -1"}) + "\n")
    scripts = write_env_scripts(tmp_path / "scripts", ["acme__calc-1"])
    spec = tmp_path / "env.json"
    entry = {k: v for k, v in SPEC.items() if k != "local"}
    spec.write_text(json.dumps(entry | {"pre_install": [*entry["pre_install"], writer]}))
    args = ("batch", str(issues), "--repo", str(swe.mirror), "--model", f"scripted:{scripts}", "--env", str(spec),
            "--cache-dir", str(tmp_path / "envs"), "--output", str(tmp_path / "run"))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"python": "3.11", "instal": "pip install -e ."}))
    typo = coder(*[a if a != str(spec) else str(bad) for a in args])
    assert typo.returncode == 2 and "unknown keys instal" in typo.stderr and "Traceback" not in typo.stderr
    proc = coder(*args)
    assert proc.returncode == 0, proc.stderr
    assert ": ready (Python 3.11" in proc.stderr, proc.stderr
    assert not any(t.exists() for t in targets)
    # control: the same step, run directly, does write its marker
    subprocess.run(["bash", "-c", f"echo x > {outside / 'control'}"], check=True)
    assert (outside / "control").exists()
    traj = json.loads((tmp_path / "run" / "instances" / "acme__calc-1" / "acme__calc-1.traj.json").read_text())
    outputs = [m["content"] for m in traj["messages"] if m["role"] == "tool"]
    ws = tmp_path / "run" / "workspaces" / "acme__calc-1"
    assert f"IMPORTED {ws}/calc.py" in outputs[0] and f"VENV {ws}.testbed" in outputs[0], outputs[0]
    assert "PASSED tests/test_calc.py::test_mul" in outputs[1]
    assert "+    return a + b" in (tmp_path / "run" / "patches" / "acme__calc-1.patch").read_text()
