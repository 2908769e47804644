"""The spec table is the harness's own (generated from swebench 4.1.0), covers the whole benchmark, and the
grading follows the harness of the v5 rows (swebench 5.0.2) on skipped and truncated tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from coder.batch import grading
from coder.batch.condayml import read_yml_requirements
from coder.batch.envs import missing_distribution
from coder.batch.envsteps import ERA_PIP, PIP_UPGRADE, build_steps
from coder.batch.instances import Instance
from coder.batch.specs import (
    EnvSpec,
    EnvUnavailable,
    check_buildable,
    load_spec_table,
    missing_system_packages,
    spec_for,
)

LITE_PAIRS = Path(__file__).with_name("data") / "swebench_lite_repo_versions.json"  # from ../shared's Lite splits


def test_every_repository_and_version_of_the_lite_splits_has_the_harness_spec():
    raw = json.loads((Path(grading.__file__).with_name("data") / "swebench_specs.json").read_text())
    assert "swebench 4.1.0" in raw["_source"] and raw["_generated_by"] == "benchmarks/swebench_specs_gen.py"
    table = load_spec_table()
    lite = json.loads(LITE_PAIRS.read_text())
    assert lite["rows"] == 323 and len(lite["pairs"]) > 50
    missing = {(repo, version) for repo, version in lite["pairs"] if version not in table["repos"][repo]["versions"]}
    assert missing == set()
    flask = spec_for(Instance("x", repo="pallets/flask", version="2.3"), table)
    assert (flask.harness_python, flask.install, flask.requirements_paths) == (
        "3.11", "python -m pip install -e .", ["requirements/dev.txt"])
    assert "Werkzeug==2.3.7" in flask.pip_packages
    sphinx = spec_for(Instance("x", repo="sphinx-doc/sphinx", version="3.5"), table)
    assert sphinx.test_cmd == "tox --current-env -epy39 -v --" and sphinx.log_parser == "parse_log_sphinx"
    # our own overlay (swebench_local.json) merges per key: pvlib keeps the harness's packages and gets our pin
    pvlib = spec_for(Instance("x", repo="pvlib/pvlib-python", version="0.9"), table)
    assert pvlib.constraints == ["numpy<2"] and pvlib.packages == "pandas scipy"


def test_conda_only_and_missing_system_packages_are_not_buildable_with_the_reason():
    yml = EnvSpec(repo="matplotlib/matplotlib", version="3.5", packages="environment.yml", harness_python="3.11")
    try:
        check_buildable(yml)
        raise AssertionError("an environment.yml spec without a PyPI record was accepted")
    except Exception as exc:  # noqa: BLE001 - the message is what is checked
        assert "conda environment.yml" in str(exc) and "environment_yml" in str(exc)
    apt = EnvSpec(repo="a/b", version="1", harness_python="3.11",
                  pre_install=["apt-get update && apt-get install -y coder-no-such-package bash"])
    assert missing_system_packages(apt) == ["coder-no-such-package"]  # bash is installed, so not named


XARRAY_YML = """name: xarray-tests
channels:
  - conda-forge
dependencies:
  - python=3.8
  - cdms2
  - dask-core
  - hdf5
  - matplotlib-base
  - netcdf4
  - numpy=1.17
  - pandas >=1.0
  - pint 0.16.*
  - pip
  - pip:
    - numbagg
"""


def test_an_environment_yml_becomes_pypi_requirements_with_what_is_left_out_recorded(tmp_path):
    table = load_spec_table()
    xarray = spec_for(Instance("x", repo="pydata/xarray", version="0.12"), table)
    assert xarray.packages == "environment.yml" and xarray.env_yml_paths[0] == "ci/requirements/environment.yml"
    (tmp_path / "ci" / "requirements").mkdir(parents=True)
    (tmp_path / "ci" / "requirements" / "environment.yml").write_text(XARRAY_YML)
    reqs = read_yml_requirements(xarray.env_yml_paths, tmp_path, xarray.environment_yml)
    # conda names become PyPI names, conda's `=V` a version prefix; python is the venv's; the pip list as it is
    assert reqs.lines == ["dask", "matplotlib", "netCDF4", "numpy==1.17.*", "pandas>=1.0", "pint==0.16.*", "numbagg"]
    assert reqs.uploaded_prior_to == "2024-08-13T00:00:00Z"  # the harness's era for what the file leaves unpinned
    assert set(reqs.left_out) == {"cdms2", "hdf5", "pip"} and "conda-forge only" in reqs.left_out["cdms2"]
    (tmp_path / "env").mkdir()
    steps = build_steps(xarray, tmp_path, tmp_path / "env")
    era = [i for i, s in enumerate(steps) if "--uploaded-prior-to 2024-08-13T00:00:00Z -r" in s]
    assert len(era) == 1 and steps[era[0]].endswith("requirements.txt")
    # pip 26 for that one resolution, the environment's own pip again after it
    assert steps[era[0] - 1] == ERA_PIP and steps[era[0] + 1] == PIP_UPGRADE
    written = (tmp_path / "env" / "requirements.txt").read_text().split()
    assert written[:3] == ["dask", "matplotlib", "netCDF4"] and "numpy==1.23.0" in written  # one resolution, pins
    assert json.loads((tmp_path / "env" / "left_out.json").read_text())["ci/requirements/environment.yml"]["hdf5"]
    (tmp_path / "ci" / "requirements" / "environment.yml").write_text("dependencies: [numpy\n")
    try:
        read_yml_requirements(xarray.env_yml_paths, tmp_path, xarray.environment_yml)
        raise AssertionError("a broken environment file was read")
    except EnvUnavailable as exc:
        assert "not valid YAML" in str(exc)


def test_harness_grading_of_skips_and_truncated_ids():
    log = "\n".join(["PASSED t.py::test_a", "SKIPPED t.py::test_b", "SKIPPED [2] t.py:10: no network",
                     "PASSED t.py::test_c[log(photon)]", "FAILED t.py::test_d - assert 1 == 2"])
    sm = grading.parse_log_pytest(log)
    assert "[2]" not in sm and sm["t.py::test_d"] == "FAILED"
    report = grading.tests_report(sm, ["t.py::test_a", "t.py::test_b", "t.py::test_c[log(photon"],
                                  ["t.py::test_b", "t.py::test_d"])
    # a skipped FAIL_TO_PASS test is no resolution; a skipped PASS_TO_PASS test is no regression
    assert report["FAIL_TO_PASS"] == {"success": ["t.py::test_a", "t.py::test_c[log(photon"],
                                      "failure": ["t.py::test_b"]}
    assert report["PASS_TO_PASS"] == {"success": ["t.py::test_b"], "failure": ["t.py::test_d"]}
    assert grading.parser_for("parse_log_seaborn")("tests/x.py::test_y PASSED [ 50%]") == {
        "tests/x.py::test_y": "PASSED"}


def test_a_package_no_index_has_is_named(tmp_path):
    """Real pip, offline against an empty folder of wheels: its message is found and the package named first."""
    (tmp_path / "wheels").mkdir()
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-index", "--find-links",
                           str(tmp_path / "wheels"), "--dest", str(tmp_path / "out"), "dask-core"],
                          capture_output=True, text=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    assert proc.returncode != 0
    said = missing_distribution(proc.stdout + proc.stderr)
    assert said.startswith("no distribution of dask-core on the index") and "environment_yml" in said
    assert missing_distribution("Successfully installed numpy-1.23.0") == ""
