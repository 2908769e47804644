"""The shell steps that build a shared environment (coder/batch/envs.py builds, caches and locks it): in the
harness's order, its conda packages by pip or its requirements file, `pip_packages`, the pre-install and install
commands on the setup checkout, then the project's build requirements as wheels for later offline installs; and
the pip versions each step needs. Text only: nothing here runs a command (the build runs them in its sandbox).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from coder.batch.condayml import read_yml_requirements
from coder.batch.specs import EnvSpec

#: First step of every venv that installs anything, best effort. The pip bundled with an older Python (3.9.18:
#: pip 23.0) backtracks for tens of minutes over unpinned sets like pvlib's `jupyter ipython matplotlib pytest
#: flake8`, which pip 24 resolves in seconds. Not pip 25+: it dropped the `setup.py develop` fallback that
#: editable installs of projects pinning setuptools<64 (astroid 2.12: setuptools~=62.6) need, which the harness's
#: pip of 2024 still had. Where no pip 24 runs (Python 3.6) or the index is unreachable, the venv's own pip stays.
PIP_UPGRADE = ('python -m pip install --upgrade "pip>=24,<25" '
               '|| echo "coder: pip upgrade not possible here; keeping the venv\'s own pip"')

#: the first pip with --uploaded-prior-to (an environment file's unpinned packages as of the harness's era)
ERA_PIP = 'python -m pip install --upgrade "pip>=26,<27"'

#: What a conda `python` brings besides the interpreter (its pip depends on setuptools and wheel) and a venv
#: lacks: `wheel` (and setuptools from Python 3.12 on). It matters: with both importable, pip 24 installs a project
#: that has no pyproject.toml with `setup.py develop`, which puts the checkout on sys.path as the harness's
#: images have it (pylint 2.14 finds its own plugins by path); without wheel it builds a PEP 660 editable wheel
#: whose import finder leaves the checkout off sys.path. The venv's own setuptools is kept where it has one.
CONDA_BASE = ('{ python -m pip install wheel && '
              '{ python -c "import setuptools" 2>/dev/null || python -m pip install setuptools; }; } '
              '|| echo "coder: no index for wheel/setuptools here; the venv stays without them"')

#: the harness's REPLACE_REQ_PACKAGES (swebench/harness/test_spec/python.py): yanked from PyPI, replaced
REPLACE_REQ = (("types-pkg_resources", "types-setuptools"),)


def harness_requirements(spec: EnvSpec, checkout: Path) -> str | None:
    """The requirements file the harness installs for `packages: requirements.txt`, read from the checkout at
    the environment setup commit as its get_requirements reads it from GitHub: the first of the repository's
    requirements paths that exists, `-r` includes inlined, `-e .`, comments and `.[test` lines dropped."""
    for rel in spec.requirements_paths:
        path = checkout / rel
        if not path.is_file():
            continue
        skip = ("-e .", "#", ".[test")
        own: list[str] = []
        extra: list[str] = []
        for line in path.read_text(encoding="utf-8", errors="replace").split("\n"):
            if line.strip().startswith("-r"):
                included = path.parent / line.strip()[2:].strip()
                if included.is_file():
                    extra += [x for x in included.read_text(encoding="utf-8", errors="replace").split("\n")
                              if not x.strip().startswith(skip)]
            elif not line.strip().startswith(skip):
                own.append(line)
        text = "\n".join([*extra, "\n".join(own)])
        for old, new in REPLACE_REQ:
            text = re.sub(rf"^{re.escape(old)}([<>=!~]=?.*|$)", new, text, flags=re.MULTILINE)
        return text
    return None


#: The project's PEP 518 build requirements, read inside the build's sandbox *after* the pre-install commands
#: (astropy's pin `setuptools==68.0.0` into pyproject.toml there), with pip's own TOML reader (Python 3.9 has no
#: tomllib): per-workspace installs build in isolation offline, from wheels of exactly these.
BUILD_REQUIRES = r"""
import os
try:
    from pip._vendor import tomli
    data = tomli.load(open("pyproject.toml", "rb")) if os.path.isfile("pyproject.toml") else None
except Exception:
    data = None
if data is None:
    reqs = ["setuptools", "wheel"] if os.path.isfile("setup.py") else []
else:
    reqs = [r for r in (data.get("build-system") or {}).get("requires", []) if isinstance(r, str)]
if any(r.startswith("setuptools") for r in reqs) and "wheel" not in reqs:
    reqs.append("wheel")  # setuptools before 70.1 asks for it at build time (get_requires_for_build_*)
print("\n".join(reqs))
"""


def wheelhouse_step(env_dir: Path) -> str:
    """Download the build requirements the checkout names now into the environment's wheelhouse."""
    listing = shlex.quote(str(env_dir / "build-requires.txt"))
    return (f"python -c {shlex.quote(BUILD_REQUIRES)} > {listing} && "
            f"{{ [ ! -s {listing} ] || python -m pip download -q --dest {shlex.quote(str(env_dir / WHEELHOUSE))} "
            f"-r {listing}; }} || echo 'coder: no wheels of the build requirements; installs go without isolation'")


def build_steps(spec: EnvSpec, setup_checkout: Path, env_dir: Path | None = None) -> list[str]:
    """The shell commands that build the venv, in the harness's order: its conda packages (by pip) or the
    requirements file, `pip_packages`, then on the setup checkout the pre-install commands (apt steps are
    checked, not run) and the install command, then the build requirements for later offline installs."""
    steps: list[str] = []
    if spec.packages == "requirements.txt":
        reqs = harness_requirements(spec, setup_checkout)
        if reqs is not None and env_dir is not None:
            (env_dir / "requirements.txt").write_text(reqs, encoding="utf-8")
            steps.append(f"python -m pip install -r {shlex.quote(str(env_dir / 'requirements.txt'))}")
    elif spec.packages == "environment.yml":
        yml = read_yml_requirements(spec.env_yml_paths, setup_checkout, spec.environment_yml)
        if env_dir is not None:  # one resolution with the pins (see condayml); what was left out, recorded
            (env_dir / "requirements.txt").write_text("\n".join([*yml.lines, *spec.pip_packages]) + "\n",
                                                      encoding="utf-8")
            (env_dir / "left_out.json").write_text(json.dumps({yml.source: yml.left_out}, indent=1),
                                                   encoding="utf-8")
            requirements = f"-r {shlex.quote(str(env_dir / 'requirements.txt'))}"
            if yml.uploaded_prior_to:  # the versions of the harness's era, by pip 26 for this one step
                steps += [ERA_PIP, f"python -m pip install --uploaded-prior-to {shlex.quote(yml.uploaded_prior_to)} "
                                   f"{requirements}", PIP_UPGRADE]
            else:
                steps.append(f"python -m pip install {requirements}")
    elif spec.packages:
        steps.append("python -m pip install " + spec.packages)
    if spec.pip_packages:
        steps.append("python -m pip install " + " ".join(shlex.quote(p) for p in spec.pip_packages))
    steps += spec.repo_steps
    if spec.install:
        steps.append(spec.install)
    if spec.install and env_dir is not None:
        # What an isolated build fetches, as wheels in the environment: per-workspace installs build in
        # isolation from this folder, offline, exactly as the harness's builds do from PyPI, and what the
        # environment itself pinned (setuptools==68 ...) stays as it is.
        steps.append(wheelhouse_step(env_dir))
    return [PIP_UPGRADE, CONDA_BASE, *steps] if steps else []


#: the build requirements' wheels inside an environment (see build_steps)
WHEELHOUSE = "wheelhouse"
