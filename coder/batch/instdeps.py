"""What an instance's own commit adds to its environment's dependencies, fetched once while the index is reachable.

The harness builds the environment image at `environment_setup_commit` and then, in the instance image, checks
out `base_commit` and runs the install command (`pip install -e .`) *with* the index: when the project's
requirements at the base commit differ from the setup commit's (pytest 5.0 started importing
`importlib_metadata`; the 4.6 environment has none), pip installs what is missing there. Our per-workspace
installs run offline in the sandbox, so what they would add is resolved here, while the environments are
prepared: per environment and per distinct set of dependency files at the instance's base commit (most
instances of a version share one), `pip install --dry-run --report` in the environment (in the sandbox, with
the index reachable, as every build step) says what the install would add, and those exact versions go into
the environment's wheelhouse as files. The workspace install then resolves dependencies offline from the
environment plus that wheelhouse (coder/batch/envs.py `reinstall_command`), and falls back to `--no-deps`
when it cannot.

Done markers live in `<env>/deps/<key>.json` (what was added, or why nothing could be), under a lock, so a
second run or a concurrent evaluation resolves nothing twice. Python 3.6 environments (pip 21: no
`--report`) are left as before, and say so in their marker.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Iterable
from pathlib import Path

from coder.batch.envs import WHEELHOUSE, file_lock, run_build_step, venv_env
from coder.batch.instances import Instance
from coder.batch.workspace import WorkspaceError, create_workspace, git, remove_workspace
from coder.fs.beneath import read_beneath

#: the files whose content decides what `pip install .` resolves (their blob ids make the key)
DEP_FILES = ("setup.py", "setup.cfg", "pyproject.toml", "requirements.txt")
DEPS_DIR = "deps"


def deps_key(mirror: Path, commit: str) -> str:
    """Same key, same dependency files: the blob ids of DEP_FILES at `commit` (read from the mirror)."""
    listing = git(mirror, "ls-tree", commit, "--", *DEP_FILES)
    return hashlib.sha256(listing.encode()).hexdigest()[:16]


#: where the dry run writes its report: inside the checkout, the only place the sandboxed step may write
REPORT = ".coder-deps-report.json"


def missing_requirements(env_dir: Path, checkout: Path, timeout: float = 600) -> list[str]:
    """`name==version` of what installing `checkout` into the environment would add besides the project (the
    resolution builds the project's metadata, so it runs in the sandbox like every build step)."""
    code, output = run_build_step(f"python -m pip install --dry-run -q --report {REPORT} .", checkout,
                                  venv_env(env_dir), timeout)
    if code != 0:
        raise WorkspaceError(f"pip could not resolve the instance's requirements: {output.strip()[-400:]}")
    raw = read_beneath(checkout, REPORT, limit=16 * 1024 * 1024)  # the tree was shaped by the sandboxed build
    if raw is None:
        raise WorkspaceError("pip wrote no resolution report")
    added: list[str] = []
    for item in json.loads(raw).get("install", []):
        meta = item.get("metadata") or {}
        if "dir_info" in (item.get("download_info") or {}) or not meta.get("name"):
            continue  # the project itself (a local directory; wheels may come from a file:// index too)
        added.append(f"{meta['name']}=={meta['version']}")
    return added


def prefetch(env_dir: Path, mirror: Path, instances: Iterable[Instance], scratch: Path,
             timeout: float = 900) -> dict[str, dict]:
    """Resolve and download, once per dependency key, what the instances' base commits add. Returns the markers
    by key ({"added": [...]} or {"error": "..."}); a failure leaves that key's installs as they were."""
    markers: dict[str, dict] = {}
    by_key: dict[str, Instance] = {}
    for inst in instances:
        try:
            by_key.setdefault(deps_key(mirror, inst.base_commit), inst)
        except WorkspaceError:
            continue  # the commit is not in the mirror: the instance's own checkout will say so
    deps_dir = env_dir / DEPS_DIR
    for key, inst in by_key.items():
        marker = deps_dir / f"{key}.json"
        with file_lock(deps_dir / f".{key}.lock"):
            if marker.is_file():
                markers[key] = json.loads(marker.read_text(encoding="utf-8"))
                continue
            markers[key] = _resolve(env_dir, mirror, inst, scratch / f"deps-{key}", timeout)
            marker.write_text(json.dumps(markers[key], indent=1), encoding="utf-8")
    return markers


def _resolve(env_dir: Path, mirror: Path, inst: Instance, checkout: Path, timeout: float) -> dict:
    info: dict = {"commit": inst.base_commit, "instance": inst.instance_id}
    if not (env_dir / "bin" / "python").exists():
        return {**info, "error": "the environment has no interpreter"}
    try:
        create_workspace(mirror, inst.base_commit, checkout)
        added = missing_requirements(env_dir, checkout, timeout)
        if added:
            names = " ".join(map(shlex.quote, added))
            code, output = run_build_step(f"python -m pip download -q --no-deps --dest "
                                          f"{shlex.quote(str(env_dir / WHEELHOUSE))} {names}", checkout,
                                          venv_env(env_dir), timeout)
            if code != 0:
                return {**info, "added": added, "error": f"pip download {names}: {output.strip()[-400:]}"}
        return {**info, "added": added}
    except (WorkspaceError, OSError, json.JSONDecodeError, AttributeError) as exc:
        return {**info, "error": str(exc)[:600]}
    finally:
        remove_workspace(checkout)
