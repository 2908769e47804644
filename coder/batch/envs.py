"""Test environments for the local evaluator: one venv per repository and version, built once, reused.

The spec table (`data/swebench_specs.json`) records what the SWE-bench harness installs per repository and
version; `--specs FILE` adds or overrides entries (same shape) for other repositories. A venv is built from a
checkout at the instance's `environment_setup_commit` (as the harness builds its environment images), with the
spec's pip packages, its requirements files and its install command; every evaluation then re-installs the
project from the evaluated workspace without dependencies. The venv uses the harness's Python for that version
(`python` in the spec, e.g. 3.9) when an interpreter of that version is on this machine (`python3.9` on PATH, a
pyenv or uv install, `$CODER_SWEBENCH_PYTHONS`): old releases (collections.Mapping, pytest ini checks, numpy ABI)
fail on a newer Python for reasons that have nothing to do with the patch. Otherwise the Python running coder.
`constraints` pin what the harness left unpinned to its era (numpy<2 ...). Where the spec needs things a venv
cannot give (conda-only `environment.yml`, apt packages, an old Python not installed here), the builder says so
instead of guessing.
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.batch.instances import Instance
from coder.errors import CoderError, UsageError

SPECS_FILE = Path(__file__).with_name("data") / "swebench_specs.json"
PY_TAG = f"py{sys.version_info.major}{sys.version_info.minor}"


class EnvUnavailable(CoderError):
    """No local environment for this repository and version; the official harness is the way."""


@dataclass
class EnvSpec:
    repo: str
    version: str
    test_cmd: str = "pytest -rA"
    install: str = ""
    packages: str = ""
    pip_packages: list[str] = field(default_factory=list)
    pre_install: list[str] = field(default_factory=list)
    requirements_paths: list[str] = field(default_factory=list)
    log_parser: str = "pytest"
    local: str = "unverified"
    note: str = ""
    harness_python: str = ""
    system_site_packages: bool = False
    constraints: list[str] = field(default_factory=list)
    python: str = ""  # the interpreter the venv is made with; "" = the Python running coder

    @property
    def key(self) -> str:
        return f"{self.repo.replace('/', '__')}-{self.version}-{self.py_tag}"

    @property
    def py_tag(self) -> str:
        if not self.python:
            return PY_TAG
        return "py" + self.harness_python.replace(".", "")


def _python_version(exe: str) -> str:
    try:
        proc = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def find_python(version: str) -> str:
    """An interpreter of `version` ("3.9") on this machine, "" when there is none.

    Looked for in `$CODER_SWEBENCH_PYTHONS` (os.pathsep-separated interpreters or bin folders), `pythonX.Y` on
    PATH, pyenv's and uv's installs; each candidate is asked for its version (a shim may point elsewhere)."""
    if not re.fullmatch(r"\d+\.\d+", version or ""):
        return ""
    name = f"python{version}"
    candidates: list[str] = []
    for entry in filter(None, os.environ.get("CODER_SWEBENCH_PYTHONS", "").split(os.pathsep)):
        candidates.append(os.path.join(entry, name) if os.path.isdir(entry) else entry)
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", f"{version}.*", "bin", name)), reverse=True)
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.local/share/uv/python/cpython-{version}.*/bin/{name}")),
                         reverse=True)
    found = shutil.which(name)
    if found:
        candidates.append(found)
    for exe in candidates:
        if os.access(exe, os.X_OK) and _python_version(exe) == version:
            return exe
    return ""


def load_spec_table(extra: Path | None = None) -> dict[str, Any]:
    table = json.loads(SPECS_FILE.read_text(encoding="utf-8"))
    if extra is not None:
        try:
            more = json.loads(Path(extra).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UsageError(f"--specs {extra}: {exc}") from None
        for repo, entry in (more.get("repos") or {}).items():
            base = table["repos"].setdefault(repo, {"versions": {}})
            base.update({k: v for k, v in entry.items() if k != "versions"})
            base.setdefault("versions", {}).update(entry.get("versions") or {})
    return table


def spec_for(inst: Instance, table: dict[str, Any]) -> EnvSpec:
    repo_entry = table["repos"].get(inst.repo)
    if repo_entry is None:
        raise EnvUnavailable(f"no environment spec for repository {inst.repo} (add one with --specs FILE)")
    ver = (repo_entry.get("versions") or {}).get(inst.version)
    if ver is None:
        raise EnvUnavailable(f"no environment spec for {inst.repo} version {inst.version} (add one with --specs)")
    default = table.get("default", {})
    harness_python = str(ver.get("python", ""))
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    python = find_python(harness_python) if harness_python and harness_python != running else ""
    return EnvSpec(
        repo=inst.repo, version=inst.version,
        test_cmd=ver.get("test_cmd") or default.get("test_cmd", "pytest -rA"),
        install=ver.get("install", ""), packages=ver.get("packages", ""),
        pip_packages=list(ver.get("pip_packages") or []), pre_install=list(ver.get("pre_install") or []),
        requirements_paths=list(repo_entry.get("requirements_paths") or []),
        log_parser=inst.log_parser or repo_entry.get("log_parser") or default.get("log_parser", "pytest"),
        local=ver.get("local", "unverified"), note=ver.get("note", ""), harness_python=harness_python,
        system_site_packages=bool(ver.get("system_site_packages", False)),
        constraints=list(repo_entry.get("constraints") or []) + list(ver.get("constraints") or []) +
        list(default.get("constraints") or []),
        python=python,
    )


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock that also holds across processes (two evaluations building one venv)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def check_buildable(spec: EnvSpec, force: bool = False) -> None:
    # `local: unsupported` is our verdict for a venv on the Python running coder; with the harness's own
    # (other) Python found here, the harness's environment is what gets built, so it is tried.
    if spec.local == "unsupported" and not force and not spec.python:
        running = f"{sys.version_info.major}.{sys.version_info.minor}"
        raise EnvUnavailable(f"{spec.repo} {spec.version} does not run on Python {running} and no "
                             f"python{spec.harness_python} was found (install it, e.g. with pyenv or uv, or name "
                             f"it in CODER_SWEBENCH_PYTHONS): {spec.note}")
    if "environment.yml" in spec.packages:
        raise EnvUnavailable(f"{spec.repo} {spec.version} needs a conda environment.yml")
    apt = [c for c in spec.pre_install if "apt-get" in c]
    if apt and not force:
        raise EnvUnavailable(f"{spec.repo} {spec.version} needs system packages: {apt[0]} "
                             "(install them yourself, then pass --force-env)")


def _run(cmd: str, cwd: Path, env: dict[str, str], log: Path, timeout: float) -> None:
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"\n$ {cmd}\n")
        fh.flush()
        proc = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT,
                              timeout=timeout)
    if proc.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-1200:]
        raise EnvUnavailable(f"environment build step failed ({cmd}):\n{tail}")


def venv_env(env_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["VIRTUAL_ENV"] = str(env_dir)
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    if (env_dir / "constraints.txt").is_file():
        env["PIP_CONSTRAINT"] = str(env_dir / "constraints.txt")
    return env


#: First step of every venv that installs anything, best effort. The pip bundled with an older Python (3.9.18:
#: pip 23.0) backtracks for tens of minutes over unpinned sets like pvlib's `jupyter ipython matplotlib pytest
#: flake8`, which pip 24 resolves in seconds. Not pip 25+: it dropped the `setup.py develop` fallback that
#: editable installs of projects pinning setuptools<64 (astroid 2.12: setuptools~=62.6) need, which the harness's
#: pip of 2024 still had. Where no pip 24 runs (Python 3.6) or the index is unreachable, the venv's own pip stays.
PIP_UPGRADE = ('python -m pip install --upgrade "pip>=24,<25" '
               '|| echo "coder: pip upgrade not possible here; keeping the venv\'s own pip"')


def build_steps(spec: EnvSpec, setup_checkout: Path) -> list[str]:
    """The shell commands that build the venv, in the harness's order: pip packages, requirements or conda
    packages (via pip), pre-install commands (apt left out), the install command."""
    steps: list[str] = []
    if spec.pip_packages:
        steps.append("python -m pip install " + " ".join(shlex.quote(p) for p in spec.pip_packages))
    if spec.packages == "requirements.txt":
        for rel in spec.requirements_paths:
            if (setup_checkout / rel).is_file():
                steps.append(f"python -m pip install -r {shlex.quote(rel)}")
    elif spec.packages:
        steps.append("python -m pip install " + spec.packages)
    steps += [c for c in spec.pre_install if "apt-get" not in c]
    if spec.install:
        steps.append(spec.install)
    return [PIP_UPGRADE, *steps] if steps else []


def build_fingerprint(spec: EnvSpec) -> dict[str, Any]:
    """What a built venv depends on: when the spec table changes one of these (a fixed pin, another Python), the
    venv built from the old entry is stale and is rebuilt instead of silently reused."""
    return {"python": spec.python or sys.executable, "pip_packages": spec.pip_packages, "packages": spec.packages,
            "requirements_paths": spec.requirements_paths, "pre_install": spec.pre_install, "install": spec.install,
            "constraints": spec.constraints, "system_site_packages": spec.system_site_packages}


def env_is_ready(spec: EnvSpec, envs_dir: Path) -> bool:
    """A venv built for this very spec (see build_fingerprint) is there."""
    try:
        built = json.loads((envs_dir / spec.key / "ready.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return False
    return built.get("fingerprint") == build_fingerprint(spec)


def ensure_env(spec: EnvSpec, setup_checkout: Path, envs_dir: Path, *, force: bool = False,
               rebuild: bool = False, timeout: float = 3600) -> Path:
    """The venv for `spec`, built now from `setup_checkout` if it is not there yet."""
    check_buildable(spec, force)
    env_dir = envs_dir / spec.key
    ready = env_dir / "ready.json"
    failed = env_dir / "failed.json"
    with file_lock(envs_dir / f".{spec.key}.lock"):
        if rebuild:
            shutil.rmtree(env_dir, ignore_errors=True)
        if env_is_ready(spec, envs_dir):
            return env_dir
        if ready.is_file():  # built from another spec entry: stale, rebuilt (a cached failure is kept below)
            shutil.rmtree(env_dir, ignore_errors=True)
        if failed.is_file():
            cached = json.loads(failed.read_text(encoding="utf-8"))
            if cached.get("fingerprint", build_fingerprint(spec)) == build_fingerprint(spec):
                raise EnvUnavailable(cached.get("error", "build failed") + " (cached failure; --rebuild-envs retries)")
        shutil.rmtree(env_dir, ignore_errors=True)
        env_dir.mkdir(parents=True)
        log = env_dir / "build.log"
        started = time.time()
        try:
            steps = build_steps(spec, setup_checkout)
            if spec.constraints:  # pins of the harness's era for what the spec leaves unpinned (PIP_CONSTRAINT)
                (env_dir / "constraints.txt").write_text("\n".join(spec.constraints) + "\n", encoding="utf-8")
            args = [spec.python or sys.executable, "-m", "venv"]
            if spec.system_site_packages:
                args.append("--system-site-packages")
            if not steps:
                args.append("--without-pip")  # nothing to install: skip ensurepip (seconds per venv)
            subprocess.run(args + [str(env_dir)], check=True, capture_output=True, timeout=300)
            env = venv_env(env_dir)
            for step in steps:
                _run(step, setup_checkout, env, log, timeout)
        except (EnvUnavailable, subprocess.SubprocessError, OSError) as exc:
            message = str(exc)
            shutil.rmtree(env_dir / "bin", ignore_errors=True)
            failed.write_text(json.dumps({"error": message[:4000], "at": time.time(),
                                          "fingerprint": build_fingerprint(spec)}), encoding="utf-8")
            raise EnvUnavailable(message) from None
        ready.write_text(json.dumps({"spec": spec.__dict__, "fingerprint": build_fingerprint(spec),
                                     "built_s": round(time.time() - started, 1),
                                     "python": spec.python or sys.executable}, indent=1), encoding="utf-8")
    return env_dir


def reinstall_command(spec: EnvSpec) -> str:
    """The spec's install command for the evaluated workspace, without touching dependencies."""
    install = spec.install.strip()
    if not install:
        return ""
    if install.startswith(("python -m pip install", "pip install")):
        head, _, rest = install.partition("install")
        quick = f"{head}install --no-deps --no-build-isolation {rest.strip()}"
        return f"{quick} || {head}install --no-deps {rest.strip()}"
    return install
