"""Issue 44: releases of the project wherever the agent's sandbox shows them, on synthetic trees laid out as the
tools lay them out: `uv tool install` (under HOME's uv folder, which the sandbox binds), conda's envs and its
extracted pkgs (a conda root shown to the sandbox), a wheel without top_level.txt (its RECORD names `sklearn`),
and pip's vendored requests. Each is found, hidden (the real sandbox reads nothing of it, while the control
without the hide reads the marker) or, for the vendored copy, recorded and flagged when a command names it."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from coder.batch.reach import project_releases, scan_trajectory, vendored_copies
from coder.sandbox.exec import run_sandboxed
from coder.sandbox.profile import SandboxConfig

MARK = f"FUTURE_RELEASE_{secrets.token_hex(4)}"


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _shown(paths: list[Path], ws: Path, **sandbox: list[str]) -> str:
    return run_sandboxed("cat " + " ".join(str(p) for p in paths) + " 2>&1; true", ws, SandboxConfig(**sandbox),
                         60).output


def test_releases_where_the_tools_install_them_are_found_and_hidden(tmp_path, monkeypatch):
    home = Path(os.environ["HOME"])
    uv = home / ".local/share/uv/tools/pylint/lib/python3.12/site-packages"  # `uv tool install pylint`
    _tree(uv, {"pylint/__pkginfo__.py": f"# {MARK} pylint 9.9\n", "pylint-9.9.dist-info/METADATA": "Name: pylint\n",
               "pylint-9.9.dist-info/RECORD": "pylint/__pkginfo__.py,,\n", "astroid/x.py": "OTHER\n",
               "astroid-9.9.dist-info/RECORD": "astroid/x.py,,\n"})
    conda = tmp_path / "conda"  # a conda root the sandbox shows (here through extra_ro; /opt/conda on a machine)
    env_site = conda / "envs/py39/lib/python3.9/site-packages"
    pkg = conda / "pkgs/pylint-9.9-pyhd8ed1ab_0"  # an extracted noarch package: site-packages at its top
    _tree(conda, {f"{env_site.relative_to(conda)}/pylint/lint.py": f"# {MARK} env\n",
                  f"{env_site.relative_to(conda)}/pylint-9.9.dist-info/top_level.txt": "pylint\n",
                  f"{pkg.relative_to(conda)}/site-packages/pylint/lint.py": f"# {MARK} pkgs\n",
                  f"{pkg.relative_to(conda)}/info/index.json": "{}\n",
                  "pkgs/pylint-9.9-pyhd8ed1ab_0.conda": f"{MARK} archive\n",
                  "pkgs/pylint-quality-1.0-py_0/info/index.json": "OTHER\n"})
    wheel_site = tmp_path / "conda/lib/python3.11/site-packages"  # meson-python's wheel: no top_level.txt
    _tree(wheel_site, {"sklearn/__init__.py": f"# {MARK} sklearn\n",
                       "scikit_learn-9.9.dist-info/RECORD": "sklearn/__init__.py,sha256=x,1\n"
                                                            "scikit_learn-9.9.dist-info/METADATA,,\n"
                                                            "../../../bin/sk,,\n",
                       "scikit_learn-9.9.dist-info/METADATA": "Name: scikit-learn\n"})
    pylint = project_releases("pylint", [str(conda)])
    want = {uv / "pylint", uv / "pylint-9.9.dist-info", env_site / "pylint", pkg,
            conda / "pkgs/pylint-9.9-pyhd8ed1ab_0.conda"}
    assert {str(p) for p in want} <= set(pylint)
    assert not [p for p in pylint if "astroid" in p or "pylint-quality" in p]
    sklearn = project_releases("scikit-learn", [str(conda)])
    assert {str(wheel_site / "sklearn"), str(wheel_site / "scikit_learn-9.9.dist-info")} <= set(sklearn)
    ws = tmp_path / "ws"
    ws.mkdir()
    files = [uv / "pylint/__pkginfo__.py", env_site / "pylint/lint.py", pkg / "site-packages/pylint/lint.py",
             conda / "pkgs/pylint-9.9-pyhd8ed1ab_0.conda", wheel_site / "sklearn/__init__.py", uv / "astroid/x.py"]
    assert _shown(files, ws, extra_ro=[str(conda)]).count(MARK) == 5  # the control: all in reach without the hide
    hidden = _shown(files, ws, extra_ro=[str(conda)], hide=[*pylint, *sklearn])
    assert MARK not in hidden and "OTHER" in hidden


def test_a_vendored_copy_is_recorded_and_a_command_that_names_it_is_flagged(tmp_path):
    site = tmp_path / "env/lib/python3.11/site-packages"
    _tree(site, {"pip/_vendor/requests/__version__.py": "__version__ = '9.9'\n", "pip/__init__.py": "",
                 "requests_toolbelt/_vendor/x.py": ""})
    copies = vendored_copies("requests", [str(tmp_path / "env")])
    assert str(site / "pip/_vendor/requests") in copies and not [c for c in copies if "toolbelt" in c]
    assert vendored_copies("flask", [str(tmp_path / "env")]) == []  # nobody vendors flask

    def call(command: str) -> list[dict]:
        return [{"type": "assistant_message", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": command}}]}}]

    flag = "vendored copy: pip/_vendor/requests"
    assert flag in [f["flag"] for f in scan_trajectory(call(f"cat {site}/pip/_vendor/requests/api.py"), [], [],
                                                       copies)]
    assert flag in [f["flag"] for f in scan_trajectory(call("python -c 'import pip._vendor.requests as r'"), [], [],
                                                       copies)]
    assert scan_trajectory(call("python -c 'import requests'"), [], [], copies) == []
