"""An installable SWE-bench-style instance: the calc repository of batch_fixtures as a package (pyproject), with a
spec whose environment builds offline in seconds (a venv over this Python's site-packages, the project installed
editable without build isolation) and a scripted agent that runs the instance's tests through the `bash` tool."""

from __future__ import annotations

import json
from pathlib import Path

from batch_fixtures import git

#: setup.py, installed with `setup.py develop`: pip's editable installs need the `wheel` package (not installed
#: here, and no index to fetch it from)
SETUP = 'from setuptools import setup\n\nsetup(name="acme-calc", version="0.1", py_modules=["calc"])\n'

VERSION = "2.0"
SPEC = {"python": "3.11", "install": "python setup.py develop",
        "test_cmd": "python -m pytest -rA -p no:cacheprovider", "system_site_packages": True, "local": "ok",
        "pre_install": ["sed -i 's/version=\"0.1\"/version=\"0.1+swebench\"/' setup.py"]}
#: offline: pip must neither wait for an index nor fetch build requirements
OFFLINE = {"PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": "/dev/null"}


def make_package_instances(swe, spec: dict | None = None) -> str:
    """Commit a setup.py on the fixture mirror, point the dataset's instances at it (version 2.0) and write the
    spec file; returns the new base commit."""
    (swe.mirror / "setup.py").write_text(SETUP)
    (swe.mirror / ".gitignore").write_text("*.egg-info/\n__pycache__/\n")
    git(swe.mirror, "add", "-A")
    git(swe.mirror, "commit", "-q", "-m", "calc as a package")
    base = git(swe.mirror, "rev-parse", "HEAD").strip()
    rows = [swe.record(i) | {"base_commit": base, "environment_setup_commit": base, "version": VERSION}
            for i in swe.ids]
    swe.dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    swe.specs.write_text(json.dumps({"repos": {"acme/calc": {"log_parser": "pytest",
                                                            "versions": {VERSION: spec or SPEC}}}}))
    return base


PROBE = ("(cd / && python -c 'import calc, os, sys; print(\"IMPORTED\", calc.__file__); "
         "print(\"PREFIX\", sys.prefix); print(\"VENV\", os.environ.get(\"VIRTUAL_ENV\"))'); "
         "echo HEAD $(git rev-parse HEAD); echo CGROUPS $(ls /sys/fs/cgroup | wc -l)")


def write_env_scripts(directory: Path, ids: list[str]) -> Path:
    """Per instance: the agent's first command imports the package from `/` and runs the instance's tests with
    the harness's command, then it fixes the bug and runs the tests again."""
    directory.mkdir(parents=True, exist_ok=True)
    run_tests = "python -m pytest -rA -p no:cacheprovider tests/test_calc.py"
    for iid in ids:
        turns = [{"text": "Is the environment there?", "tool_calls": [{"name": "bash", "input": {"command": PROBE}}]},
                 {"text": "Run the tests.", "tool_calls": [{"name": "bash", "input": {"command": run_tests}}]},
                 {"text": "Fix the sign.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
                     "command": "str_replace", "path": "calc.py", "old_str": "return a - b",
                     "new_str": "return a + b"}}]},
                 {"text": "Check from elsewhere.", "tool_calls": [{"name": "bash", "input": {
                     "command": "(cd / && python -c 'import calc; print(\"SUM\", calc.add(2, 3))')"}}]},
                 {"text": "Fixed."}]
        (directory / f"{iid}.json").write_text(json.dumps({"turns": turns}), encoding="utf-8")
    return directory
