"""A local stand-in for a server a repository's tests reach on the internet, where the tests allow pointing them at
another address (psf/requests before 2.9: `HTTPBIN_URL`, default http://httpbin.org/).

The harness's containers have the internet; the sandbox here has none. Where the test suite reads the server's
address from the environment, the evaluation starts the stand-in inside the sandbox (its own loopback: nothing
leaves the machine, and every sandbox can use the same port) before the test command, and sets the variable.
The stand-in is a venv of its own next to the environment (`<env>/service`), built once with the index (in the
sandbox, as every build step) from the pinned packages of `test_service` in coder/batch/data/swebench_local.json,
and mounted read-only with the environment: its packages never join the tested environment.

Tests the stand-in cannot serve (https to httpbin.org's own name, a redirect to www.google.co.uk) still fail on
name resolution, and the evaluator's rule for those applies (coder/batch/evaluate.py: could not evaluate here).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from coder.batch.envs import base_interpreter, file_lock, run_build_step, venv_env
from coder.batch.specs import EnvSpec, EnvUnavailable
from coder.host import run as host_run

SERVICE_DIR = "service"
#: what a test that speaks TLS to the stand-in (plain HTTP) fails with: httpbin.org serves https on its own name
#: and certificate, which no local stand-in can (requests' test_mixed_case_scheme_acceptable)
UNSERVED = re.compile(r"WRONG_VERSION_NUMBER")
#: seconds the stand-in gets to listen before the tests start anyway (and fail, saying so in the log)
START_TIMEOUT = 60

#: waits until host:port accepts (the service's own Python runs it)
_WAIT = r"""
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
"""


def ensure_service(spec: EnvSpec, env_dir: Path, timeout: float = 900) -> Path | None:
    """The stand-in's venv for `spec` (built now if missing or built from other packages), None if it has none."""
    service: dict[str, Any] = spec.test_service
    if not service:
        return None
    target = env_dir / SERVICE_DIR
    wanted = {"packages": list(service.get("packages") or [])}
    with file_lock(env_dir / f".{SERVICE_DIR}.lock"):
        try:
            if json.loads((target / "ready.json").read_text(encoding="utf-8")) == wanted:
                return target
        except (OSError, json.JSONDecodeError):
            pass
        shutil.rmtree(target, ignore_errors=True)
        base = base_interpreter(env_dir)
        if not base:
            raise EnvUnavailable(f"{env_dir} is not a built environment (no ready.json)")
        packages = wanted["packages"]
        made = host_run([base, "-m", "venv", *([] if packages else ["--without-pip"]), str(target)],
                        purpose="a test service's venv", timeout=300, text=True)
        if made.returncode != 0:
            raise EnvUnavailable(f"python -m venv failed for the test service: {made.stderr.strip()[-400:]}")
        if packages:
            code, output = run_build_step("python -m pip install " + " ".join(map(shlex.quote, packages)), target,
                                          venv_env(target), timeout)
            if code != 0:
                shutil.rmtree(target, ignore_errors=True)
                raise EnvUnavailable(f"the test service's packages did not install: {output.strip()[-400:]}")
        (target / "ready.json").write_text(json.dumps(wanted), encoding="utf-8")
    return target


def start_lines(spec: EnvSpec, env_dir: Path, log: str) -> list[str]:
    """Shell lines of the eval script that start the stand-in in the background, wait for it, and export its
    variables; [] when the spec has none or its venv is not built."""
    service: dict[str, Any] = spec.test_service
    python = env_dir / SERVICE_DIR / "bin" / "python"
    if not service or not python.exists():
        return []
    run = " ".join(shlex.quote(a) for a in [str(python), *service.get("args", [])])
    address = shlex.quote(str(service.get("address", "")))
    wait = f"{shlex.quote(str(python))} -c {shlex.quote(_WAIT)} {address} {START_TIMEOUT}"
    env = sorted((service.get("env") or {}).items())
    return [f"{run} > {shlex.quote(log)} 2>&1 &",
            f"{wait} || echo 'coder: the test service did not listen on '{address}",
            *(f"export {name}={shlex.quote(str(value))}" for name, value in env)]


def unserved(spec: EnvSpec) -> re.Pattern[str] | None:
    """The signature of a test that needed more of the internet than the spec's stand-in serves, if it has one."""
    return UNSERVED if spec.test_service else None

