"""What an environment for a repository and version is: the SWE-bench harness's spec, and whether it builds here.

`data/swebench_specs.json` is the harness's own table (generated from swebench 4.1.0 by
benchmarks/swebench_specs_gen.py: Python, conda/pip packages, pre-install and install commands, test command per
repository and version); `data/swebench_local.json` holds our additions (pins of the harness's era, verdicts);
`--specs FILE` adds or overrides entries for other repositories. All three have one shape and merge per key.

The harness builds in conda; a venv gets the same where that is faithful: the harness's Python when this machine
has it (`pythonX.Y` on PATH, pyenv, uv, `$CODER_SWEBENCH_PYTHONS`), conda package names that are also PyPI names
installed with pip, `apt-get install` steps accepted when every package they name is already installed here.
An `environment.yml` becomes pip requirements where its packages are on PyPI (coder/batch/condayml.py, with
what is left out recorded per repository); one without such a record, or that needs system packages that are
missing, is reported as not buildable, with the reason, never guessed.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from coder.base.errors import CoderError, UsageError
from coder.batch.instances import Instance
from coder.host import TimeoutExpired
from coder.host import run as host_run

DATA = Path(__file__).with_name("data")
SPECS_FILE = DATA / "swebench_specs.json"
LOCAL_FILE = DATA / "swebench_local.json"
RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"


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
    eval_commands: list[str] = field(default_factory=list)
    requirements_paths: list[str] = field(default_factory=list)
    env_yml_paths: list[str] = field(default_factory=list)
    #: `packages: environment.yml` as pip requirements (coder/batch/condayml.py): {"pypi": {...}, "leave_out": {...}}
    environment_yml: dict[str, Any] = field(default_factory=dict)
    log_parser: str = "pytest"
    local: str = "unverified"
    note: str = ""
    harness_python: str = ""
    system_site_packages: bool = False
    test_network: bool = False  # the tests reach the internet, as they can in the harness's containers
    #: what the tests expect of that internet (coder/batch/netprobe.py): {"reaches": [...], "times_out": [...]}
    test_network_probe: dict[str, list[str]] = field(default_factory=dict)
    #: addresses the tests expect to time out (a non-routable one): routed into the sandbox's own loopback
    #: (coder/sandbox/tarpit.py) for the evaluation
    tarpits: list[str] = field(default_factory=list)
    #: a local stand-in for a server the tests reach on the internet (coder/batch/services.py): packages, args,
    #: address, env
    test_service: dict[str, Any] = field(default_factory=dict)
    constraints: list[str] = field(default_factory=list)
    python: str = ""  # the interpreter the venv is made with; "" = the Python running coder

    @property
    def key(self) -> str:
        return f"{self.repo.replace('/', '__')}-{self.version}-{self.py_tag}"

    @property
    def py_tag(self) -> str:
        version = self.harness_python if self.python else RUNNING
        return "py" + version.replace(".", "")

    @property
    def python_version(self) -> str:
        return self.harness_python if self.python else RUNNING

    @property
    def apt_steps(self) -> list[str]:
        return [c for c in self.pre_install if "apt-get" in c]

    @property
    def repo_steps(self) -> list[str]:
        """The pre-install commands that change the checkout (sed on setup.py, tox.ini ...), run per workspace."""
        return [c for c in self.pre_install if "apt-get" not in c]


def _python_version(exe: str) -> str:
    try:
        proc = host_run([exe, "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                        purpose="a Python version check", text=True, timeout=30)
    except (OSError, TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


@lru_cache(maxsize=32)
def find_python(version: str) -> str:
    """An interpreter of `version` ("3.9") on this machine, "" when there is none.

    Looked for in `$CODER_SWEBENCH_PYTHONS` (os.pathsep-separated interpreters or bin folders), pyenv's and uv's
    installs, `pythonX.Y` on PATH; each candidate is asked for its version (a shim may point elsewhere). Real
    paths, not shims: the sandbox binds the interpreter's own folder, and a pyenv shim consults the host."""
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
    if found and "/shims/" not in found:
        candidates.append(found)
    for exe in candidates:
        if os.access(exe, os.X_OK) and _python_version(exe) == version:
            return exe
    return ""


def _merge(base: dict[str, Any], more: dict[str, Any]) -> None:
    """Per repository, then per version, key by key (an overlay adds `constraints` without restating a spec)."""
    for key, value in more.items():
        if key != "repos":
            base[key] = value
    for repo, entry in (more.get("repos") or {}).items():
        target = base.setdefault("repos", {}).setdefault(repo, {"versions": {}})
        target.update({k: v for k, v in entry.items() if k != "versions"})
        for version, spec in (entry.get("versions") or {}).items():
            target.setdefault("versions", {}).setdefault(version, {}).update(spec)


def load_spec_table(extra: Path | None = None) -> dict[str, Any]:
    table = json.loads(SPECS_FILE.read_text(encoding="utf-8"))
    local = json.loads(LOCAL_FILE.read_text(encoding="utf-8"))
    local.pop("_about", None)
    _merge(table, local)
    if extra is not None:
        try:
            more = json.loads(Path(extra).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise UsageError(f"--specs {extra}: {exc}") from None
        _merge(table, more)
    return table


#: what one version entry of the spec table may say (the shape `coder batch --env FILE` takes)
ENV_SPEC_KEYS = frozenset({"python", "packages", "pip_packages", "pre_install", "install", "test_cmd", "log_parser",
                           "eval_commands", "constraints", "system_site_packages", "note"})


def load_env_spec(path: Path) -> dict[str, Any]:
    """One environment entry from a JSON file, checked: unknown keys and wrong types are a usage error."""
    try:
        entry = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read the environment spec {path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None
    if not isinstance(entry, dict):
        raise UsageError(f"{path}: the environment spec must be a JSON object")
    unknown = sorted(set(entry) - ENV_SPEC_KEYS)
    if unknown:
        raise UsageError(f"{path}: unknown keys {', '.join(unknown)} (allowed: {', '.join(sorted(ENV_SPEC_KEYS))})")
    lists = ("pip_packages", "pre_install", "eval_commands", "constraints")
    for key, value in entry.items():
        want: type[Any] = list if key in lists else bool if key == "system_site_packages" else str
        if not isinstance(value, want) or (want is list and not all(isinstance(v, str) for v in value)):
            raise UsageError(f"{path}: {key} must be {'a list of strings' if want is list else want.__name__}")
    return entry


def spec_for(inst: Instance, table: dict[str, Any]) -> EnvSpec:
    repo_entry = table["repos"].get(inst.repo)
    if repo_entry is None:
        raise EnvUnavailable(f"no environment spec for repository {inst.repo} (add one with --specs FILE)")
    ver = (repo_entry.get("versions") or {}).get(inst.version)
    if ver is None:
        raise EnvUnavailable(f"no environment spec for {inst.repo} version {inst.version} (add one with --specs)")
    default = table.get("default", {})
    harness_python = str(ver.get("python", ""))
    python = find_python(harness_python) if harness_python and harness_python != RUNNING else ""
    return EnvSpec(
        repo=inst.repo, version=inst.version,
        test_cmd=ver.get("test_cmd") or default.get("test_cmd", "pytest -rA"),
        install=ver.get("install", ""), packages=ver.get("packages", ""),
        pip_packages=list(ver.get("pip_packages") or []), pre_install=list(ver.get("pre_install") or []),
        eval_commands=list(ver.get("eval_commands") or []),
        requirements_paths=list(repo_entry.get("requirements_paths") or []),
        env_yml_paths=list(repo_entry.get("env_yml_paths") or []),
        environment_yml=dict(ver.get("environment_yml", repo_entry.get("environment_yml")) or {}),
        log_parser=inst.log_parser or repo_entry.get("log_parser") or default.get("log_parser", "pytest"),
        local=ver.get("local", "unverified"), note=ver.get("note", ""), harness_python=harness_python,
        system_site_packages=bool(ver.get("system_site_packages", False)),
        test_network=bool(ver.get("test_network", repo_entry.get("test_network", False))),
        test_network_probe=dict(ver.get("test_network_probe", repo_entry.get("test_network_probe")) or {}),
        tarpits=list(ver.get("tarpits", repo_entry.get("tarpits")) or []),
        test_service=dict(ver.get("test_service", repo_entry.get("test_service")) or {}),
        constraints=list(repo_entry.get("constraints") or []) + list(ver.get("constraints") or []) +
        list(default.get("constraints") or []),
        python=python,
    )


def _apt_packages(command: str) -> list[str]:
    """The packages an `apt-get install` step names (options and other commands of the line left out)."""
    names: list[str] = []
    for part in re.split(r"&&|;|\|\|", command):
        words = shlex.split(part) if part.strip() else []
        if "apt-get" in words and "install" in words:
            names += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return names


@lru_cache(maxsize=256)
def _dpkg_installed(package: str) -> bool:
    try:
        proc = host_run(["dpkg-query", "-W", "-f=${Status}", package], purpose="a package check", text=True,
                        timeout=30)
    except (OSError, TimeoutExpired):
        return False
    return proc.returncode == 0 and "install ok installed" in proc.stdout


def missing_system_packages(spec: EnvSpec) -> list[str]:
    """Debian packages the harness's apt-get steps install that this machine lacks (empty: steps satisfied)."""
    return [p for c in spec.apt_steps for p in _apt_packages(c) if not _dpkg_installed(p)]


def check_buildable(spec: EnvSpec, force: bool = False) -> None:
    """Raise EnvUnavailable with the reason when the harness's environment cannot be reproduced here."""
    if spec.local == "unsupported" and not force and not spec.python:
        # our verdict for a venv on the running Python; with the harness's own (other) Python it does not apply
        raise EnvUnavailable(f"{spec.repo} {spec.version} does not run on Python {RUNNING} and no "
                             f"python{spec.harness_python} was found (install it, e.g. with pyenv or uv, or name "
                             f"it in CODER_SWEBENCH_PYTHONS): {spec.note}")
    if spec.harness_python and not spec.python and spec.harness_python != RUNNING:
        if spec.local != "ok" and not force:
            raise EnvUnavailable(f"{spec.repo} {spec.version} needs Python {spec.harness_python}, not found here "
                                 f"(install it: `pyenv install {spec.harness_python}` or `uv python install "
                                 f"{spec.harness_python}`, or name it in CODER_SWEBENCH_PYTHONS)"
                                 + (f": {spec.note}" if spec.note else ""))
    if spec.packages == "environment.yml" and not spec.environment_yml:
        raise EnvUnavailable(f"{spec.repo} {spec.version}: the harness builds it from a conda environment.yml "
                             "and no PyPI equivalent of its packages is recorded (`environment_yml` in "
                             "coder/batch/data/swebench_local.json)")
    missing = missing_system_packages(spec)
    if missing and not force:
        raise EnvUnavailable(f"{spec.repo} {spec.version} needs system packages missing here: {' '.join(missing)} "
                             f"(`apt-get install {' '.join(missing)}`, or pass --force-env to build without them)")
