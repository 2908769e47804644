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

The base commit's *build* requirements are the other half (issue 31): the environment's wheelhouse holds what
the setup commit's build asked for, but a workspace builds its own commit in isolation, and pylint 3.0 pins
`setuptools~=66.1`, astropy 5.0 `cython==0.29.22`, at commits whose setup commit asked for others. So, after the
harness's pre-install commands on the same checkout (they may pin the build, as astropy's does), what the
commit's `pyproject.toml` `[build-system] requires`, `setup.cfg` `setup_requires` and a literal `setup_requires`
of `setup.py` name is checked against the environment's wheelhouse offline; when it is not all there, it is
downloaded (with what it needs) into a layer of its own, `<env>/build-wheels/<key>`, which only the workspaces of
that key add to their install's wheels (`build_layer`). Commits the wheelhouse already serves keep exactly the
build they had.

Done markers live in `<env>/deps/<key>.json` (what was added, or why nothing could be; `build` for the build
layer), under a lock, so a second run or a concurrent evaluation resolves nothing twice. Python 3.6
environments (pip 21: no `--report`) are left as before, and say so in their marker.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from coder.batch.envs import file_lock, run_build_step, venv_env
from coder.batch.envsteps import WHEELHOUSE
from coder.batch.instances import Instance
from coder.batch.workspace import WorkspaceError, create_workspace, git, remove_workspace
from coder.fs.beneath import read_beneath

#: the files whose content decides what `pip install .` resolves (their blob ids make the key)
DEP_FILES = ("setup.py", "setup.cfg", "pyproject.toml", "requirements.txt")
DEPS_DIR = "deps"
BUILD_LAYERS = "build-wheels"


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


#: where what a patch's own dependency changes add is downloaded, inside the evaluated workspace
PATCH_WHEELS = ".coder-patch-wheels"
_PATCHED_FILE = re.compile(r"^diff --git a/(\S+) b/", re.M)


def patch_requirements(env_dir: Path, workspace: Path, patch: str, timeout: float = 900) -> tuple[Path | None, str]:
    """What a patch's own dependency changes add (a gold patch that starts importing appdirs and adds it to
    setup.cfg, as pylint-dev__pylint-4661's does): the harness's install runs with the index and fetches it; ours is
    offline, so the patched workspace is resolved now, in the sandbox with network as every build step (the patched
    setup code runs there, as it would in the harness's container), and what it adds is downloaded into the
    workspace (PATCH_WHEELS) for its install. Returns (that folder or None, an error or "")."""
    touched = {m.group(1) for m in _PATCHED_FILE.finditer(patch)}
    if not touched & set(DEP_FILES):
        return None, ""
    try:
        added = missing_requirements(env_dir, workspace, timeout)
    except WorkspaceError as exc:
        return None, str(exc)[:400]
    if not added:
        return None, ""
    code, output = run_build_step(f"python -m pip download -q --no-deps --dest {PATCH_WHEELS} "
                                  + " ".join(map(shlex.quote, added)), workspace, venv_env(env_dir), timeout)
    if code != 0:
        return None, f"pip download {' '.join(added)}: {output.strip()[-300:]}"
    return workspace / PATCH_WHEELS, ""


def build_layer(env_dir: Path, repo: Path, commit: str = "HEAD") -> Path | None:
    """The per-commit wheels of the build requirements for `commit` of `repo` (a workspace), if it needs any."""
    try:
        layer = env_dir / BUILD_LAYERS / deps_key(repo, commit)
    except WorkspaceError:
        return None
    return layer if layer.is_dir() and any(layer.iterdir()) else None


#: The commit's own build requirements (no default for a bare setup.py: the environment's wheelhouse has those),
#: read in the sandbox with pip's TOML reader (Python 3.6-3.10 have no tomllib): `[build-system] requires`,
#: `setup.cfg` `setup_requires`, a literal `setup_requires` of setup.py, and what setup.py computes: astropy 3.x
#: (astropy_helpers) extends its `setup_requires` with cython and jinja2 in code, which no static reading sees.
#: Both write to the file named by their first argument (setup.py may print).
COMMIT_BUILD_REQUIRES = r"""
import ast, configparser, os, sys
reqs = []
try:
    from pip._vendor import tomli
    if os.path.isfile("pyproject.toml"):
        data = tomli.load(open("pyproject.toml", "rb"))
        reqs += [r for r in (data.get("build-system") or {}).get("requires", []) if isinstance(r, str)]
except Exception:
    pass
cfg = configparser.ConfigParser()
try:
    cfg.read("setup.cfg")
    reqs += [r.strip() for r in cfg.get("options", "setup_requires", fallback="").replace(";", "\n").splitlines()
             if r.strip()]
except Exception:
    pass
try:
    for node in ast.walk(ast.parse(open("setup.py").read())):
        if isinstance(node, ast.keyword) and node.arg == "setup_requires":
            value = ast.literal_eval(node.value)
            reqs += [value] if isinstance(value, str) else list(value)
except Exception:
    pass
if any(r.startswith("setuptools") for r in reqs) and not any(r.startswith("wheel") for r in reqs):
    reqs.append("wheel")
open(sys.argv[1], "w").write("".join(r + "\n" for r in dict.fromkeys(reqs)))
"""
#: ... and, in an interpreter of its own (setuptools' distutils shim must load before anything imports the
#: standard library's distutils, as pip does), what setup.py computes, appended to the same file: setup.py runs
#: as for `develop` (the install the harness's `pip install -e` runs; astropy_helpers asks for nothing on
#: `egg_info`), with setuptools' fetching of `setup_requires` replaced by a recorder and no command run.
SETUP_PY_REQUIRES = r"""
import contextlib, os, sys
out, found = sys.argv[1], []
def record(self, requires):
    for item in [requires] if isinstance(requires, str) else list(requires or []):
        found.extend(line.strip() for line in str(item).splitlines() if line.strip())
    return []
try:
    with contextlib.redirect_stdout(sys.stderr):
        import setuptools.dist
        setuptools.dist.Distribution.fetch_build_eggs = record
        setuptools.dist.Distribution.run_commands = lambda self: None
        sys.argv, sys.path[:0] = ["setup.py", "develop"], [os.getcwd()]
        exec(compile(open("setup.py").read(), "setup.py", "exec"), {"__name__": "__main__", "__file__": "setup.py"})
except BaseException as exc:
    print("coder: setup.py did not finish:", repr(exc)[:300], file=sys.stderr)
open(out, "a").write("".join(r + "\n" for r in found))
"""
#: the reader's revision, in each marker: the build part of a marker an older reader wrote is resolved again
BUILD_READER = 2


def _build_requirements(env_dir: Path, checkout: Path, steps: list[str], key: str, timeout: float) -> dict:
    """After the pre-install `steps`: the commit's build requirements, and the layer they were downloaded to
    when the environment's wheelhouse does not serve them all offline."""
    env = venv_env(env_dir)
    for step in steps:
        code, output = run_build_step(step, checkout, env, timeout)
        if code != 0:
            return {"error": f"pre-install step failed ({step[:120]}): {output.strip()[-300:]}"}
    listing = ".coder-build-requires.txt"
    code, output = run_build_step(f"python -c {shlex.quote(COMMIT_BUILD_REQUIRES)} {listing} && "
                                  f"{{ [ ! -f setup.py ] || python -c {shlex.quote(SETUP_PY_REQUIRES)} {listing}; }}",
                                  checkout, env, timeout)
    raw = read_beneath(checkout, listing, limit=1024 * 1024) if code == 0 else None
    reqs = list(dict.fromkeys(r.strip() for r in (raw or b"").decode("utf-8", "replace").splitlines() if r.strip()))
    if code != 0 or not reqs:
        return {"requires": reqs} if code == 0 else {"error": f"reading the build requirements: {output[-300:]}"}
    wheels = shlex.quote(str(env_dir / WHEELHOUSE))
    # offline against the wheelhouse alone: no user's find-links or index may stand in for it
    served = run_build_step(f"env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null "
                            f"python -m pip download -q --no-index --find-links {wheels} --dest .coder-served "
                            f"-r {listing}", checkout, env, timeout)[0] == 0
    if served:
        return {"requires": reqs, "layer": None}
    layer = env_dir / BUILD_LAYERS / key
    code, output = run_build_step(f"python -m pip download -q --dest {shlex.quote(str(layer))} -r {listing}",
                                  checkout, env, timeout)
    if code != 0:
        return {"requires": reqs, "error": f"pip download of the build requirements: {output.strip()[-400:]}"}
    return {"requires": reqs, "layer": str(layer)}


def prefetch(env_dir: Path, mirror: Path, instances: Iterable[Instance], scratch: Path,
             timeout: float = 900, steps: list[str] | None = None) -> dict[str, dict]:
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
            known = json.loads(marker.read_text(encoding="utf-8")) if marker.is_file() else None
            if known is not None and "build" in known and known.get("build_reader") == BUILD_READER:
                markers[key] = known
                continue
            markers[key] = _resolve(env_dir, mirror, inst, scratch / f"deps-{key}", timeout, list(steps or []),
                                    key, known)
            marker.write_text(json.dumps(markers[key], indent=1), encoding="utf-8")
    return markers


def _resolve(env_dir: Path, mirror: Path, inst: Instance, checkout: Path, timeout: float, steps: list[str],
             key: str, known: dict | None) -> dict:
    """What the commit adds at run time (unless a marker of an earlier version already says) and its build layer."""
    info: dict = {"commit": inst.base_commit, "instance": inst.instance_id, "build_reader": BUILD_READER}
    if not (env_dir / "bin" / "python").exists():
        return {**info, "error": "the environment has no interpreter", "build": {}}
    try:
        create_workspace(mirror, inst.base_commit, checkout)
        if known is None:
            info.update(_added(env_dir, checkout, timeout))
        else:
            info.update({k: v for k, v in known.items() if k not in info})
        info["build"] = _build_requirements(env_dir, checkout, steps, key, timeout)
        return info
    except (WorkspaceError, OSError, json.JSONDecodeError, AttributeError) as exc:
        return {**info, "error": str(exc)[:600], "build": {}}
    finally:
        remove_workspace(checkout)


def _added(env_dir: Path, checkout: Path, timeout: float) -> dict:
    try:
        added = missing_requirements(env_dir, checkout, timeout)
    except WorkspaceError as exc:
        return {"error": str(exc)[:600]}
    if added:
        names = " ".join(map(shlex.quote, added))
        code, output = run_build_step(f"python -m pip download -q --no-deps --dest "
                                      f"{shlex.quote(str(env_dir / WHEELHOUSE))} {names}", checkout,
                                      venv_env(env_dir), timeout)
        if code != 0:
            return {"added": added, "error": f"pip download {names}: {output.strip()[-400:]}"}
    return {"added": added}
