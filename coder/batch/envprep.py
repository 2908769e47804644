"""Environments for a set of instances: found or built once per repository and version, before any instance.

`coder swebench run`, `coder swebench eval` and `coder swebench envs` all go through `prepare_envs`: the
instances are grouped by environment, each environment is looked up (and with `build=True` built from a
checkout at the group's `environment_setup_commit`), and the outcome is one `EnvState` per environment. A
failure is therefore reported once per environment, with every instance it concerns, instead of once per
instance; the instances themselves only look their environment up.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coder.batch.envs import cached_failure, ensure_env, env_is_ready, file_lock, installs_with_pip, read_ready
from coder.batch.instances import Instance
from coder.batch.instdeps import prefetch
from coder.batch.netprobe import network_differs
from coder.batch.services import ensure_service
from coder.batch.specs import EnvUnavailable, check_buildable, spec_for
from coder.batch.workspace import WorkspaceError, create_workspace, ensure_mirror, find_mirror, remove_workspace

READY = "ready"
BUILDABLE = "buildable"  # not built yet, nothing known against it
UNAVAILABLE = "unavailable"


@dataclass
class EnvState:
    key: str
    repo: str
    version: str
    status: str = UNAVAILABLE
    python: str = ""  # the version the venv uses ("3.9")
    harness_python: str = ""
    env_dir: str = ""
    error: str = ""
    built_s: float | None = None
    disk_mb: float | None = None
    instances: list[str] = field(default_factory=list)
    #: why its instances cannot be evaluated here although it builds (coder/batch/netprobe.py)
    not_here: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _disk_mb(path: Path) -> float:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return round(total / 1e6, 1)


def env_key(inst: Instance, table: dict[str, Any]) -> str:
    try:
        return spec_for(inst, table).key
    except EnvUnavailable:
        return f"{inst.repo.replace('/', '__')}-{inst.version}-nospec"


def prepare_envs(instances: list[Instance], table: dict[str, Any], cache: Path, *, build: bool,
                 repos_dir: Path | None = None, allow_network: bool = False, force: bool = False,
                 rebuild: bool = False, scratch: Path | None = None,
                 progress: Callable[[EnvState], None] | None = None) -> dict[str, EnvState]:
    """One EnvState per environment the instances need, keyed by environment key; built when `build`."""
    envs_dir = cache / "envs"
    groups: dict[str, list[Instance]] = {}
    for inst in instances:
        groups.setdefault(env_key(inst, table), []).append(inst)
    states: dict[str, EnvState] = {}
    for key, members in groups.items():
        first = members[0]
        state = EnvState(key, first.repo, first.version, instances=[i.instance_id for i in members])
        states[key] = state
        try:
            spec = spec_for(first, table)
            state.python, state.harness_python = spec.python_version, spec.harness_python
            check_buildable(spec, force)
            if spec.test_network and (why := network_differs(spec.test_network_probe.get("reaches", ()),
                                                             spec.test_network_probe.get("times_out", ()))):
                state.not_here = f"the tests need the internet as the harness's containers have it: {why}"
            if env_is_ready(spec, envs_dir) and not rebuild:
                _ready(state, envs_dir / key)
            elif (error := cached_failure(spec, envs_dir)) is not None and not rebuild:
                state.error = error + " (cached failure; --rebuild-envs retries)"
            elif not build:
                local = (repos_dir and find_mirror(repos_dir, first.repo)) or find_mirror(cache / "mirrors", first.repo)
                if not local:
                    raise WorkspaceError(f"no local mirror of {first.repo} (--repos-dir DIR/"
                                         f"{first.repo.replace('/', '__')}, or --allow-network with --build)")
                state.status = BUILDABLE
            else:
                _build(state, spec, first, envs_dir, cache, scratch or cache / "setup", repos_dir, allow_network,
                       force, rebuild)
            if build and state.status == READY and installs_with_pip(spec):
                mirror = ensure_mirror(first.repo, repos_dir, cache / "mirrors", allow_network)
                prefetch(Path(state.env_dir), mirror, members, scratch or cache / "setup", steps=spec.repo_steps)
            if build and state.status == READY:
                ensure_service(spec, Path(state.env_dir))
        except (EnvUnavailable, WorkspaceError) as exc:
            state.status, state.error = UNAVAILABLE, str(exc)
        if progress is not None:
            progress(state)
    return states


def _ready(state: EnvState, env_dir: Path) -> None:
    info = read_ready(env_dir)
    state.status, state.env_dir = READY, str(env_dir)
    state.built_s = info.get("built_s")
    state.disk_mb = info.get("disk_mb")


def _build(state: EnvState, spec: Any, inst: Instance, envs_dir: Path, cache: Path, scratch: Path,
           repos_dir: Path | None, allow_network: bool, force: bool, rebuild: bool) -> None:
    mirror = ensure_mirror(inst.repo, repos_dir, cache / "mirrors", allow_network)
    checkout = scratch / f"setup-{spec.key}"
    with file_lock(envs_dir / f".{spec.key}.setup.lock"):
        if env_is_ready(spec, envs_dir) and not rebuild:  # another process built it meanwhile
            _ready(state, envs_dir / spec.key)
            return
        started = time.monotonic()
        try:
            ws = create_workspace(mirror, inst.environment_setup_commit or inst.base_commit, checkout)
            try:
                env_dir = ensure_env(spec, checkout, envs_dir, force=force, rebuild=rebuild)
            except EnvUnavailable as exc:
                if not ws.unfilled:
                    raise
                wanted = ", ".join(f"{r} (DIR/{r.replace('/', '__')})" for r in ws.unfilled)
                raise EnvUnavailable(f"{exc} [git submodules left empty, no local mirror: {wanted}]") from None
        finally:
            remove_workspace(checkout)
    ready = env_dir / "ready.json"
    info = read_ready(env_dir)
    info["disk_mb"] = _disk_mb(env_dir)
    info.setdefault("built_s", round(time.monotonic() - started, 1))
    ready.write_text(json.dumps(info, indent=1), encoding="utf-8")
    _ready(state, env_dir)


def ready_env(inst: Instance, table: dict[str, Any], states: dict[str, EnvState]) -> tuple[Any, Path]:
    """The spec and built environment of an instance, or EnvUnavailable with its environment's reason."""
    state = states.get(env_key(inst, table))
    spec = spec_for(inst, table)
    if state is None or state.status != READY:
        raise EnvUnavailable(state.error if state and state.error else f"environment {spec.key} is not built")
    return spec, Path(state.env_dir)


def testbed_infos(instances: list[Instance], table: dict[str, Any], states: dict[str, EnvState]) -> dict[str, Any]:
    """instance_id -> what the agent run needs of its environment (coder/batch/testbed.py enter_testbed)."""
    out: dict[str, Any] = {}
    for inst in instances:
        state = states.get(env_key(inst, table))
        if state is not None and state.status == READY:
            out[inst.instance_id] = {"spec": asdict(spec_for(inst, table)), "env_dir": state.env_dir}
        else:
            out[inst.instance_id] = {"error": state.error if state else "no environment"}
    return out


def describe(state: EnvState) -> str:
    """One line per environment, as `coder swebench run|eval|envs` print them."""
    python = f"Python {state.python}" if state.python else "no Python"
    if state.status == READY:
        extra = f", built in {state.built_s:g}s" if state.built_s else ""
        extra += f", {state.disk_mb:g} MB" if state.disk_mb else ""
        line = f"environment {state.key}: ready ({python}{extra}; {len(state.instances)} instances)"
        return line + (f"; not evaluable here: {state.not_here}" if state.not_here else "")
    if state.status == BUILDABLE:
        return f"environment {state.key}: not built yet ({python}; {len(state.instances)} instances; --build)"
    return (f"environment {state.key}: NOT AVAILABLE for {len(state.instances)} instances "
            f"({', '.join(state.instances[:3])}{' ...' if len(state.instances) > 3 else ''}): "
            f"{state.error.strip().splitlines()[0] if state.error.strip() else 'unknown'}")


def coverage_table(states: list[EnvState], gold: dict[str, dict[str, Any]] | None = None) -> str:
    """The coverage report: per repository and version, status, Python (harness -> here), instances, reason; with
    `gold` (`coder swebench envs --gold`: the evaluation report's instances for the gold patches), how many agree
    with the dataset's labels, then every instance that does not, and why."""
    head = ["repository", "version", "status", "python", "instances"] + (["gold agrees"] if gold is not None else [])
    rows = [(*head, "why not")]
    for st in sorted(states, key=lambda s: (s.repo, s.version)):
        python = (f"{st.harness_python}" + ("" if st.python == st.harness_python or not st.python
                                             else f" -> {st.python}")) or "-"
        reason = st.error.strip().splitlines()[0][:110] if st.error.strip() else st.not_here[:110]
        row = [st.repo, st.version, st.status, python, str(len(st.instances))]
        if gold is not None:
            mine = [gold[i] for i in st.instances if i in gold]
            here = [r for r in mine if not r.get("needs_official_harness")]
            row.append(f"{sum(bool(r.get('resolved')) for r in here)}/{len(here)}" if here else "-")
        rows.append((*row, reason))
    n = len(head)
    widths = [max(len(r[i]) for r in rows) for i in range(n)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(n)) + "  " + r[n] for r in rows]
    total = sum(len(s.instances) for s in states)
    ok = sum(len(s.instances) for s in states if s.status == READY)
    lines.append(f"{ok}/{total} instances have a ready environment; "
                 f"{sum(s.status == READY for s in states)}/{len(states)} environments ready")
    if gold is not None:
        lines += _gold_summary(gold)
    return "\n".join(lines)


def _gold_summary(gold: dict[str, dict[str, Any]]) -> list[str]:
    here = {i: r for i, r in gold.items() if not r.get("needs_official_harness")}
    agree = sum(bool(r.get("resolved")) for r in here.values())
    lines = [f"gold patches resolved: {agree}/{len(here)} of the instances evaluable here"
             + (f"; {len(gold) - len(here)} could not be evaluated here" if len(here) < len(gold) else "")]
    for iid, r in sorted(gold.items()):
        if r.get("resolved"):
            continue
        lines.append(f"  {iid}: {miss_reason(r)}")
    return lines


def miss_reason(r: dict[str, Any]) -> str:
    """Why a gold patch did not resolve its instance, in one line: could not evaluate here, the run's error (with
    the harness's infrastructure label), or the tests that failed."""
    if r.get("needs_official_harness"):
        return "could not evaluate here: " + str(r.get("error") or "").splitlines()[0][:200]
    label = f" [{r['infra_failure_reason']}]" if r.get("infra_failure_reason") else ""
    if r.get("error"):
        return f"{r.get('status', 'error')}{label}: " + str(r["error"]).splitlines()[0][:200]
    tests = r.get("tests_status") or {}
    failing = [f"{k}: {', '.join(v['failure'][:3])}{' ...' if len(v['failure']) > 3 else ''}"
               for k, v in tests.items() if v.get("failure")]
    return f"{r.get('status', 'not')}{label}: failing " + ("; ".join(failing) or "(no test listed)")
