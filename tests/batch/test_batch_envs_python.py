"""Venvs built with the harness's Python for the version, found on this machine (pyenv here).

Found on real SWE-bench Lite dev instances (marshmallow 2.20: `collections.Mapping`, gone in Python 3.10): a venv
on the Python running coder fails the gold patch for reasons that have nothing to do with the patch, where the
harness, on its Python 3.9, resolves it. The synthetic repository here has the same kind of code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from batch_fixtures import GOLD_PATCH, git

from coder.batch.envs import EnvSpec, find_python, load_spec_table, venv_env
from coder.batch.envsteps import BUILD_REQUIRES, CONDA_BASE, PIP_UPGRADE, build_steps, wheelhouse_step
from coder.batch.evaluate import EvalConfig, evaluate
from coder.batch.instances import load_instances

OLD_STYLE = ("import collections\n\n\ndef add(a, b):\n    return a - b\n\n\n"
             "def mul(a, b):\n    assert not isinstance(a, collections.Mapping)\n    return a * b\n")
#: No pytest in a bare venv of another Python (and no network in tests): a tiny runner printing pytest's lines.
RUNNER = """import importlib.util, sys, traceback
sys.path.insert(0, ".")
for path in sys.argv[1:]:
    spec = importlib.util.spec_from_file_location("mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name in sorted(n for n in dir(mod) if n.startswith("test_")):
        try:
            getattr(mod, name)()
            print(f"PASSED {path}::{name}")
        except Exception:
            traceback.print_exc()
            print(f"FAILED {path}::{name}")
"""


def _old_style_instance(swe, python: str) -> None:
    """A new base commit whose code only runs on Python < 3.10, and a spec asking for `python`."""
    (swe.mirror / "calc.py").write_text(OLD_STYLE)
    (swe.mirror / "run_tests.py").write_text(RUNNER)
    git(swe.mirror, "add", "-A")
    git(swe.mirror, "commit", "-q", "--allow-empty", "-m", "old-style calc")
    base = git(swe.mirror, "rev-parse", "HEAD").strip()
    rec = swe.record("acme__calc-1") | {"base_commit": base, "environment_setup_commit": base}
    swe.dataset.write_text(json.dumps(rec) + "\n")
    swe.specs.write_text(json.dumps({"repos": {"acme/calc": {"log_parser": "pytest", "versions": {"1.0": {
        "python": python, "install": "", "test_cmd": "python run_tests.py", "local": "unsupported",
        "note": "collections.Mapping is gone in Python 3.10"}}}}}))


def _evaluate(swe, cache: Path, out: Path, **kw) -> dict:
    cfg = EvalConfig(output=out, repos_dir=swe.repos_dir, cache_dir=cache, specs=load_spec_table(swe.specs), **kw)
    preds = {"acme__calc-1": {"instance_id": "acme__calc-1", "model_name_or_path": "gold", "model_patch": GOLD_PATCH}}
    return evaluate(load_instances(swe.dataset), preds, cfg)["instances"]["acme__calc-1"]


def test_gold_resolved_with_the_harness_python(swe, tmp_path):
    py39 = find_python("3.9")
    assert py39, "no Python 3.9 on this machine: install one (`pyenv install 3.9` or `uv python install 3.9`)"
    _old_style_instance(swe, "3.9")
    r = _evaluate(swe, tmp_path / "cache", tmp_path / "eval")
    assert r["status"] == "resolved", r
    assert r["env"] == "acme__calc-1.0-py39"
    ready = json.loads((tmp_path / "cache" / "envs" / "acme__calc-1.0-py39" / "ready.json").read_text())
    assert ready["python"] == py39
    assert "version = 3.9." in (tmp_path / "cache" / "envs" / "acme__calc-1.0-py39" / "pyvenv.cfg").read_text()


def test_on_the_running_python_the_same_gold_patch_fails(swe, tmp_path):
    # What the evaluator did before: the venv on Python 3.11; with --force-env past the `unsupported` verdict,
    # test_mul (PASS_TO_PASS) fails on collections.Mapping, so the gold patch is "not" resolved.
    _old_style_instance(swe, "3.11")
    r = _evaluate(swe, tmp_path / "cache", tmp_path / "eval", force_env=True)
    assert r["status"] == "not"
    assert r["tests_status"]["PASS_TO_PASS"]["failure"] == ["tests/test_calc.py::test_mul"]
    # and without --force-env it refuses, naming the missing interpreter
    _old_style_instance(swe, "3.11")
    refused = _evaluate(swe, tmp_path / "cache2", tmp_path / "eval2")
    assert refused["needs_official_harness"] and "collections.Mapping" in refused["error"]


def test_unknown_python_version_is_not_found():
    assert find_python("2.99") == "" and find_python("") == "" and find_python("3.9; rm -rf /") == ""


def test_build_steps_upgrade_pip_first_then_follow_the_harness_order(tmp_path):
    # pvlib 0.9 on Python 3.9.18 (bundled pip 23.0): `pip install jupyter ipython matplotlib pytest flake8`
    # backtracked for over ten minutes; a current pip resolves it in seconds. Nothing to install: no pip at all.
    # Then the harness's order: its requirements file (as its get_requirements reads it: `-r` inlined, `-e .`
    # dropped), pip_packages (whose pins win), pre-install, install, and the build requirements' wheels.
    (tmp_path / "requirements_dev.txt").write_text("-r base.txt\n-e .\npytest\n")
    (tmp_path / "base.txt").write_text("numpy\n")
    (tmp_path / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools>=40", "setuptools_scm"]\n')
    env = tmp_path / "env"
    env.mkdir()
    spec = EnvSpec(repo="pvlib/pvlib-python", version="0.9", install="python -m pip install -e .[all]",
                   packages="requirements.txt", pip_packages=["jupyter", "pytest"], pre_install=["sed -i s/a/b/ x"],
                   requirements_paths=["missing.txt", "requirements_dev.txt"])
    steps = build_steps(spec, tmp_path, env)
    assert steps == [PIP_UPGRADE, CONDA_BASE, f"python -m pip install -r {env / 'requirements.txt'}",
                     "python -m pip install jupyter pytest", "sed -i s/a/b/ x", "python -m pip install -e .[all]",
                     wheelhouse_step(env)]
    # the build requirements are read when the step runs (after the pre-install commands), by pip's TOML reader
    listed = subprocess.run([sys.executable, "-c", BUILD_REQUIRES], cwd=tmp_path, capture_output=True, text=True)
    assert listed.stdout.split() == ["setuptools>=40", "setuptools_scm", "wheel"], listed.stderr
    assert (env / "requirements.txt").read_text().split() == ["numpy", "pytest"]
    assert build_steps(EnvSpec(repo="a/b", version="1"), tmp_path) == []


def test_constraints_reach_pip_through_the_environment(tmp_path):
    (tmp_path / "constraints.txt").write_text("pytest<9\n")
    assert venv_env(tmp_path)["PIP_CONSTRAINT"] == str(tmp_path / "constraints.txt")
    assert "PIP_CONSTRAINT" not in venv_env(tmp_path / "none")


@pytest.mark.slow  # builds a venv twice
def test_a_changed_spec_entry_rebuilds_its_venv(swe, tmp_path):
    # pvlib's venvs built before `constraints: numpy<2` was added kept numpy 2 and failed every gold patch; a venv
    # records what it was built from, and a changed entry (here: a new constraint) rebuilds it.
    cache = tmp_path / "cache"
    assert _evaluate(swe, cache, tmp_path / "e1")["status"] == "resolved"
    ready = next(cache.glob("envs/acme__calc-1.0-*/ready.json"))
    first = json.loads(ready.read_text())["fingerprint"]
    assert _evaluate(swe, cache, tmp_path / "e2")["status"] == "resolved"
    assert json.loads(ready.read_text())["fingerprint"] == first  # same entry: reused
    specs = json.loads(swe.specs.read_text())
    specs["repos"]["acme/calc"]["constraints"] = ["numpy<2"]
    swe.specs.write_text(json.dumps(specs))
    assert _evaluate(swe, cache, tmp_path / "e3")["status"] == "resolved"
    rebuilt = json.loads(ready.read_text())
    assert rebuilt["fingerprint"]["constraints"] == ["numpy<2"] and rebuilt["fingerprint"] != first
    assert (ready.parent / "constraints.txt").read_text() == "numpy<2\n"


@pytest.mark.slow  # builds a venv
def test_a_pip_upgrade_that_cannot_happen_does_not_fail_the_build(swe, tmp_path, monkeypatch):
    # Python 3.6 (pydicom 1.3): no pip 24 exists for it, and the upgrade step failed the whole build. Here the
    # upgrade cannot reach any index (pip config ignored, no index): the build goes on with the venv's own pip.
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    specs = json.loads(swe.specs.read_text())
    specs["repos"]["acme/calc"]["versions"]["1.0"]["pre_install"] = ["python -c 'open(\"built.txt\", \"w\")'"]
    swe.specs.write_text(json.dumps(specs))
    r = _evaluate(swe, tmp_path / "cache", tmp_path / "eval")
    assert r["status"] == "resolved", r
    log = next((tmp_path / "cache").glob("envs/acme__calc-1.0-*/build.log")).read_text()
    assert "pip upgrade not possible here" in log
