"""Shared environments: one venv per repository and version, built once, cached, reused by agent and evaluator.

What the harness splits into an environment image and an instance image is split the same way here:
- the *environment* (this module): a venv from the harness's Python with the packages its conda step and
  `pip_packages` install, plus the project's own dependencies and build requirements. To get those, the
  checkout at the instance's `environment_setup_commit` gets the harness's pre-install and install commands,
  as the harness does; the project itself is then removed from the venv again, so the venv holds dependencies
  only and never points at a checkout.
- the *instance layer* (coder/batch/testbed.py): per workspace, a small venv stacked on this one where the
  workspace is installed the way the harness installs the repository (editable), so what tests import is the
  workspace the agent edits, while several workspaces of one version share one environment.

Builds run in the sandbox with network (they install from PyPI; the repository's setup code never runs on the
host), with a scrubbed environment (no credentials) and a pip cache of their own,
under an fcntl lock per environment (two evaluations never build one venv twice), and record the spec they
were built from: an environment whose spec changed is rebuilt, a failed build is remembered (and reported once
per environment) until `--rebuild-envs`.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from coder.batch.envsteps import WHEELHOUSE, build_steps
from coder.batch.specs import (  # noqa: F401 - re-exported: the table and the spec are part of this API
    EnvSpec,
    EnvUnavailable,
    check_buildable,
    find_python,
    load_spec_table,
    spec_for,
)
from coder.batch.workspace import borrowed_objects
from coder.host import TimeoutExpired, looks_secret, scrubbed_env
from coder.host import run as host_run
from coder.sandbox.exec import run_sandboxed
from coder.sandbox.profile import SandboxConfig

PY_TAG = f"py{sys.version_info.major}{sys.version_info.minor}"


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


#: system folders every sandbox has anyway (an interpreter there needs no extra mount)
SYSTEM_PREFIXES = ("/usr", "/bin", "/lib", "/opt", "/etc")


def interpreter_prefix(python: str) -> list[str]:
    """The install prefix of `python` (pyenv's versions/3.9.x), for the sandbox to mount read-only."""
    if not python:
        return []
    prefix = Path(os.path.realpath(python)).parent.parent
    return [] if str(prefix).startswith(SYSTEM_PREFIXES) else [str(prefix)]


def run_build_step(cmd: str, cwd: Path, env: dict[str, str], timeout: float,
                   read_only: tuple[str, ...] = ()) -> tuple[int | None, str]:
    """A build step in the sandbox, with network (it installs from the index): `cwd` (the checkout) and the
    venv named by VIRTUAL_ENV writable, with pip's cache of the environments folder; the interpreter and the
    checkout's borrowed git objects (its checkpoint's store: its own past) read-only. The repository's setup code
    runs here, never on the host."""
    venv = env["VIRTUAL_ENV"]
    base = interpreter_prefix(os.path.join(venv, "bin", "python"))
    section = SandboxConfig(network=True, extra_rw=[venv, env["PIP_CACHE_DIR"]],
                            extra_ro=[*read_only, *borrowed_objects(cwd), *base], timeout=timeout,
                            max_timeout=timeout, max_output_chars=10**9, max_output_bytes=256 * 1024 * 1024)
    Path(env["PIP_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)
    result = run_sandboxed(cmd, cwd, section, timeout, env=env)
    return result.exit_code, result.output


def _run(cmd: str, cwd: Path, env: dict[str, str], log: Path, timeout: float) -> None:
    code, output = run_build_step(cmd, cwd, env, timeout)
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"\n$ {cmd}\n{output}")
    if code != 0:
        tail = log.read_text(encoding="utf-8", errors="replace")[-1200:]
        missing = missing_distribution(output)
        why = f"environment build step failed ({cmd[:200]}):\n{tail}"
        raise EnvUnavailable(f"{missing}\n{why}" if missing else why)  # the first line is what reports show


_NO_DISTRIBUTION = re.compile(r"No matching distribution found for (\S+)")


def missing_distribution(output: str) -> str:
    """Which package pip could not have, said first (it is buried under the download log otherwise)."""
    match = _NO_DISTRIBUTION.search(output)
    if not match:
        return ""
    return (f"no distribution of {match.group(1)} on the index for this Python (a conda-only package, or another "
            "name on PyPI: record it in environment_yml pypi or leave_out, coder/batch/data/swebench_local.json)")


#: what pip needs of the host to reach an index: its own settings and the proxy and certificate variables
PIP_HOST_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy", "SSL_CERT_FILE",
                 "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")


def venv_env(env_dir: Path) -> dict[str, str]:
    """The host environment for build steps in `env_dir`: scrubbed of credentials (pip's own settings and the
    proxy variables kept, unless their names look secret), the venv first on PATH."""
    env = {k: v for k, v in scrubbed_env().items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update({k: v for k, v in os.environ.items()
                if (k.startswith("PIP_") or k in PIP_HOST_VARS) and not looks_secret(k)})
    env["VIRTUAL_ENV"] = str(env_dir)
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_CACHE_DIR"] = str(env_dir.parent / ".pip-cache")  # the sandbox's home is empty: a cache of their own
    if (env_dir / "constraints.txt").is_file():
        env["PIP_CONSTRAINT"] = str(env_dir / "constraints.txt")
    return env


#: Removes the project installed from the setup checkout (PEP 610 direct_url to it, or an egg-link to it),
#: so the shared venv holds dependencies only. Runs on the venv's Python (3.6 and later) and prints their names; the
#: build's shell hands them to pip (the script itself starts nothing).
_UNINSTALL_PROJECT = r"""
import glob, json, os, sys, site
root = os.path.realpath(sys.argv[1])
names = set()
for sp in site.getsitepackages():
    for f in glob.glob(os.path.join(sp, "*.dist-info", "direct_url.json")):
        try:
            url = json.load(open(f)).get("url", "")
        except ValueError:
            continue
        if url.startswith("file://") and os.path.realpath(url[7:]).startswith(root):
            for line in open(os.path.join(os.path.dirname(f), "METADATA"), errors="replace"):
                if line.startswith("Name:"):
                    names.add(line.split(":", 1)[1].strip())
                    break
    for f in glob.glob(os.path.join(sp, "*.egg-link")):
        if os.path.realpath(open(f).readline().strip()).startswith(root):
            names.add(os.path.basename(f)[:-len(".egg-link")])
for name in sorted(names):
    sys.stderr.write("coder: removing the project %s from the shared environment (installed per workspace)\n" % name)
    print(name)
"""


def build_fingerprint(spec: EnvSpec) -> dict[str, Any]:
    """What a built venv depends on: when the spec table changes one of these (a fixed pin, another Python), the
    venv built from the old entry is stale and is rebuilt instead of silently reused."""
    return {"python": spec.python or sys.executable, "pip_packages": spec.pip_packages, "packages": spec.packages,
            "requirements_paths": spec.requirements_paths, "pre_install": spec.pre_install, "install": spec.install,
            "constraints": spec.constraints, "system_site_packages": spec.system_site_packages, "layout": 5,
            **({"environment_yml": spec.environment_yml} if spec.environment_yml else {})}


def env_is_ready(spec: EnvSpec, envs_dir: Path) -> bool:
    """A venv built for this very spec (see build_fingerprint) is there."""
    return read_ready(envs_dir / spec.key).get("fingerprint") == build_fingerprint(spec)


def read_ready(env_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((env_dir / "ready.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}


def cached_failure(spec: EnvSpec, envs_dir: Path) -> str | None:
    """The error of an earlier failed build of this very spec, if any (not retried without --rebuild-envs)."""
    try:
        cached = json.loads((envs_dir / spec.key / "failed.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if cached.get("fingerprint", build_fingerprint(spec)) != build_fingerprint(spec):
        return None
    return str(cached.get("error", "build failed"))


def base_interpreter(env_dir: Path) -> str:
    """The interpreter a venv was made from (what instance layers are made from too)."""
    return str(read_ready(env_dir).get("base_python") or "")


def ensure_env(spec: EnvSpec, setup_checkout: Path | None, envs_dir: Path, *, force: bool = False,
               rebuild: bool = False, timeout: float = 3600) -> Path:
    """The venv for `spec`, built now from `setup_checkout` if it is not there yet (`setup_checkout` may be None
    when the caller knows it is ready: env_is_ready)."""
    check_buildable(spec, force)
    env_dir = envs_dir / spec.key
    with file_lock(envs_dir / f".{spec.key}.lock"):
        if rebuild:
            shutil.rmtree(env_dir, ignore_errors=True)
        if env_is_ready(spec, envs_dir):
            return env_dir
        error = cached_failure(spec, envs_dir)
        if error is not None:
            raise EnvUnavailable(error + " (cached failure; --rebuild-envs retries)")
        if setup_checkout is None:
            raise EnvUnavailable(f"environment {spec.key} is not built yet")
        _build(spec, setup_checkout, env_dir, timeout)
    return env_dir


def _build(spec: EnvSpec, setup_checkout: Path, env_dir: Path, timeout: float) -> None:
    shutil.rmtree(env_dir, ignore_errors=True)
    env_dir.mkdir(parents=True)
    log = env_dir / "build.log"
    started = time.time()
    base = spec.python or getattr(sys, "_base_executable", "") or sys.executable
    try:
        steps = build_steps(spec, setup_checkout, env_dir)
        if spec.constraints:  # pins of the harness's era for what the spec leaves unpinned (PIP_CONSTRAINT)
            (env_dir / "constraints.txt").write_text("\n".join(spec.constraints) + "\n", encoding="utf-8")
        args = [base, "-m", "venv"]
        if spec.system_site_packages:
            args.append("--system-site-packages")
        if not steps:
            args.append("--without-pip")  # nothing to install: skip ensurepip (seconds per venv)
        made = host_run(args + [str(env_dir)], purpose="an instance environment", timeout=300, text=True)
        if made.returncode != 0:
            raise EnvUnavailable(f"python -m venv failed: {made.stderr.strip()[-1000:]}")
        env = venv_env(env_dir)
        for step in steps:
            _run(step, setup_checkout, env, log, timeout)
        if spec.install:
            _run(f"python -c {shlex.quote(_UNINSTALL_PROJECT)} {shlex.quote(str(setup_checkout))}"
                 " | xargs -r python -m pip uninstall -y",
                 setup_checkout, env, log, 600)
    except (EnvUnavailable, TimeoutExpired, OSError) as exc:
        message = str(exc)
        shutil.rmtree(env_dir / "bin", ignore_errors=True)
        shutil.rmtree(env_dir / "lib", ignore_errors=True)
        (env_dir / "failed.json").write_text(json.dumps({"error": message[:4000], "at": time.time(),
                                                         "fingerprint": build_fingerprint(spec)}), encoding="utf-8")
        raise EnvUnavailable(message) from None
    (env_dir / "ready.json").write_text(json.dumps({
        "spec": spec.__dict__, "fingerprint": build_fingerprint(spec), "built_s": round(time.time() - started, 1),
        "python": spec.python or sys.executable, "base_python": base,
        "python_version": spec.python_version}, indent=1), encoding="utf-8")


def installs_with_pip(spec: EnvSpec) -> bool:
    """The harness installs the repository with pip (so dependencies can resolve), not `setup.py develop`."""
    return spec.install.strip().startswith(("python -m pip install", "pip install"))


def reinstall_command(spec: EnvSpec, env_dir: Path | None = None, build_layer: Path | None = None,
                      patch_wheels: Path | None = None) -> str:
    """The spec's install command for a workspace, offline: no index; an isolated build takes its requirements
    from the environment's wheelhouse (without one: no build isolation, the environment's own setuptools), and
    from `build_layer`, the wheels of the workspace commit's own build requirements where the wheelhouse lacks
    them (coder/batch/instdeps.py), and
    from `patch_wheels`, what an evaluated patch's own dependency changes add (instdeps.patch_requirements). The
    same folders go to `PIP_FIND_LINKS`, for the pip that setuptools runs to fetch a `setup_requires`.
    Dependencies resolve from the environment plus the wheelhouse, where coder/batch/instdeps.py put what the
    instance's own commit adds (as the harness's install at the base commit would fetch); when they cannot,
    the install goes without them, as before."""
    install = spec.install.strip()
    if not install:
        return ""
    if installs_with_pip(spec):
        head, _, rest = install.partition("install")
        wheels = env_dir / WHEELHOUSE if env_dir is not None else None
        links = [w for w, files in ((wheels, "*.whl"), (build_layer, "*"), (patch_wheels, "*")) if w is not None and
                 w.is_dir() and any(w.glob(files))]
        source = " ".join(f"--find-links {shlex.quote(str(w))}" for w in links) or "--no-build-isolation"
        if links:  # also for a pip that setuptools runs for `setup_requires` (xarray's setuptools_scm)
            head = f"PIP_FIND_LINKS={shlex.quote(' '.join(str(w) for w in links))} {head}"
        with_deps = f"{head}install --no-index {source} {rest.strip()}"
        return (f"{with_deps} || {{ echo 'coder: dependencies do not resolve offline; installing without them'; "
                f"{head}install --no-deps --no-index {source} {rest.strip()}; }}")
    return install
