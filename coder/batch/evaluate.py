"""`coder swebench eval`: check predictions locally, without Docker, the way the official harness does.

Per instance: a workspace at the base commit, the prediction applied (git apply, then a 3-way apply, then
`patch --fuzz=5`: the harness's fallbacks), the test patch applied, the tests of the test patch run in the venv of
that repository and version, the log parsed and graded with the harness's rules (coder.batch.grading).
Instances whose environment cannot be built here end as "error" with the reason, and the official command is
printed for them; the report never mixes them with real failures.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coder.batch import grading
from coder.batch.envs import (
    EnvSpec,
    EnvUnavailable,
    ensure_env,
    env_is_ready,
    file_lock,
    reinstall_command,
    spec_for,
    venv_env,
)
from coder.batch.instances import Instance
from coder.batch.outputs import atomic_write
from coder.batch.workspace import WorkspaceError, create_workspace, ensure_mirror, git, remove_workspace
from coder.vcs import hostgit

NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
APPLY_METHODS = (("git apply", ["git", "apply", "--verbose"]),
                 ("git apply --3way", ["git", "apply", "--verbose", "--3way"]),
                 ("patch --fuzz=5", ["patch", "--batch", "--fuzz=5", "-p1", "-i"]))


@dataclass
class EvalConfig:
    output: Path
    repos_dir: Path | None = None
    cache_dir: Path = Path("~/.cache/coder")
    allow_network: bool = False
    specs: dict[str, Any] = field(default_factory=dict)
    workers: int = 1
    timeout: float = 1800.0
    force_env: bool = False
    rebuild_envs: bool = False
    keep_workspaces: bool = False
    dataset_path: str = ""


@dataclass
class InstanceEval:
    instance_id: str
    status: str = grading.ERROR  # resolved | partially | not | error
    resolved: bool = False
    patch_is_None: bool = False
    patch_exists: bool = False
    patch_successfully_applied: bool = False
    empty_patch: bool = False
    apply_method: str = ""
    tests_status: dict[str, Any] = field(default_factory=dict)
    env: str = ""
    needs_official_harness: bool = False
    error: str | None = None
    duration_s: float = 0.0


def get_test_directives(inst: Instance) -> list[str]:
    """The tests to run: the files of the test patch, as the harness names them (Django: module labels)."""
    files = re.findall(r"diff --git a/.* b/(.*)", inst.test_patch)
    files = [f for f in files if not any(f.endswith(ext) for ext in NON_TEST_EXTS)]
    if inst.repo == "django/django":
        out = []
        for f in files:
            f = f.removesuffix(".py")
            f = f.removeprefix("tests/")
            out.append(f.replace("/", "."))
        return out
    return files


def eval_test_command(inst: Instance, spec: EnvSpec) -> str:
    """The record's eval_script test command when it has one (it is what the harness ran), else the spec's."""
    if inst.eval_script:
        script = inst.eval_script.replace(f": '{grading.START_TEST_OUTPUT}'", grading.START_TEST_OUTPUT)
        section = grading.test_section(script.replace(f": '{grading.END_TEST_OUTPUT}'", grading.END_TEST_OUTPUT))
        if section and section.strip():
            return section.strip()
    return " ".join([spec.test_cmd, *(shlex.quote(d) for d in get_test_directives(inst))])


def apply_patch(ws: Path, patch: str, name: str, fallbacks: bool = True) -> str | None:
    """Apply with the harness's fallbacks; returns the method that worked, None when none did.

    Only for a clean workspace with fallbacks: a failed attempt is undone with a hard reset before the next."""
    path = ws.parent / f".{ws.name}.{name}.diff"
    path.write_text(patch if patch.endswith("\n") else patch + "\n", encoding="utf-8")
    try:
        for label, cmd in APPLY_METHODS if fallbacks else APPLY_METHODS[:1]:
            proc = (hostgit.run(ws, [*cmd[1:], str(path)], timeout=300) if cmd[0] == "git"
                    else subprocess.run([*cmd, str(path)], cwd=ws, capture_output=True, text=True, timeout=300))
            if proc.returncode == 0:
                return label
            if fallbacks:  # undo a partial apply before the next method
                git(ws, "reset", "-q", "--hard", check=False)
                git(ws, "clean", "-fdq", check=False)
        return None
    finally:
        path.unlink(missing_ok=True)


def evaluate_instance(inst: Instance, pred: dict[str, Any] | None, cfg: EvalConfig) -> InstanceEval:
    result = InstanceEval(inst.instance_id)
    started = time.monotonic()
    out_dir = cfg.output / "instances" / inst.instance_id
    out_dir.mkdir(parents=True, exist_ok=True)
    patch = None if pred is None else pred.get("model_patch")
    if patch is None:
        result.patch_is_None, result.status, result.error = True, grading.NOT_RESOLVED, "no prediction"
        return result
    result.patch_exists = True
    if not patch.strip():
        result.empty_patch, result.status = True, grading.NOT_RESOLVED
        return result
    ws_dir = cfg.output / "workspaces" / inst.instance_id
    cache = Path(cfg.cache_dir).expanduser()
    try:
        spec = spec_for(inst, cfg.specs)
        result.env = spec.key
        mirror = ensure_mirror(inst.repo, cfg.repos_dir, cache / "mirrors", cfg.allow_network)
        setup_ws = cfg.output / "workspaces" / f"_setup-{spec.key}"
        with file_lock(cache / "envs" / f".{spec.key}.setup.lock"):
            env_ready = env_is_ready(spec, cache / "envs") and not cfg.rebuild_envs
            if not env_ready:
                create_workspace(mirror, inst.environment_setup_commit or inst.base_commit, setup_ws)
            try:
                env_dir = ensure_env(spec, setup_ws, cache / "envs", force=cfg.force_env,
                                     rebuild=cfg.rebuild_envs and not env_ready)
            finally:
                remove_workspace(setup_ws)
        ws = create_workspace(mirror, inst.base_commit, ws_dir).path
        method = apply_patch(ws, patch, "model")
        if method is None:
            result.error = "the prediction does not apply (git apply, 3-way and patch --fuzz=5 all failed)"
            return result
        result.apply_method = method
        _reset_test_files(ws, inst)
        if inst.test_patch.strip() and apply_patch(ws, inst.test_patch, "test", fallbacks=False) is None:
            result.error = "the test patch does not apply on top of the prediction"
            return result
        result.patch_successfully_applied = True
        log = _run_tests(inst, spec, ws, env_dir, cfg, out_dir)
        section = grading.test_section(log)
        if section is None:
            result.error = "the test run ended before its end marker (timeout or crash); see test_output.txt"
            return result
        status_map = grading.parser_for(spec.log_parser)(section)
        report = grading.tests_report(status_map, inst.FAIL_TO_PASS, inst.PASS_TO_PASS)
        result.tests_status = report
        result.status = grading.resolution(report)
        result.resolved = result.status == grading.RESOLVED
    except EnvUnavailable as exc:
        result.needs_official_harness, result.error = True, f"environment: {exc}"
    except (WorkspaceError, OSError, subprocess.SubprocessError) as exc:
        result.error = str(exc)
    finally:
        result.duration_s = round(time.monotonic() - started, 2)
        if not cfg.keep_workspaces:
            remove_workspace(ws_dir)
        atomic_write(out_dir / "report.json", json.dumps(asdict(result), indent=1))
    return result


def _reset_test_files(ws: Path, inst: Instance) -> None:
    """As the harness's eval script does: the files the test patch touches go back to the base commit first, so
    an agent's edits to those tests neither block the test patch nor change what is tested."""
    files = re.findall(r"diff --git a/.* b/(.*)", inst.test_patch)
    existing = [f for f in files if hostgit.run(ws, ["cat-file", "-e", f"{inst.base_commit}:{f}"]).returncode == 0]
    if existing:
        git(ws, "checkout", inst.base_commit, "--", *existing)


def _run_tests(inst: Instance, spec: EnvSpec, ws: Path, env_dir: Path, cfg: EvalConfig, out_dir: Path) -> str:
    lines = ["set -uo pipefail", f"cd {shlex.quote(str(ws))}"]
    lines += [c for c in spec.pre_install if "apt-get" not in c]
    reinstall = reinstall_command(spec)
    if reinstall:
        lines.append(f"{{ {reinstall}; }} > {shlex.quote(str(out_dir / 'install.log'))} 2>&1")
    lines += [f"echo {shlex.quote(grading.START_TEST_OUTPUT)}", eval_test_command(inst, spec),
              f"echo {shlex.quote(grading.END_TEST_OUTPUT)}"]
    script = "\n".join(lines) + "\n"
    atomic_write(out_dir / "eval.sh", script)
    log_path = out_dir / "test_output.txt"
    # One evaluation per venv at a time when the project is (re)installed into it: the editable install points
    # the venv at this workspace. Without an install step evaluations of one venv run in parallel.
    lock = file_lock(env_dir.parent / f".{env_dir.name}.use.lock") if reinstall else contextlib.nullcontext()
    with lock, open(log_path, "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(["bash", "-c", script], cwd=ws, env=venv_env(env_dir), stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=cfg.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the test runner and whatever it started
            proc.wait()
            fh.write(f"\nTIMEOUT after {cfg.timeout:g}s\n")
    return log_path.read_text(encoding="utf-8", errors="replace")


def evaluate(instances: list[Instance], preds: dict[str, dict[str, Any]], cfg: EvalConfig) -> dict[str, Any]:
    """Evaluate every instance that has a prediction; write EVAL_DIR/report.json; return the report."""
    cfg.output.mkdir(parents=True, exist_ok=True)
    chosen = [i for i in instances if i.instance_id in preds]
    with ThreadPoolExecutor(max_workers=max(1, cfg.workers)) as pool:
        results = list(pool.map(lambda i: evaluate_instance(i, preds.get(i.instance_id), cfg), chosen))
    report = build_report(results, preds, cfg)
    if report["needs_official_harness"]:
        subset = {i: preds[i] for i in report["needs_official_harness"]}
        atomic_write(cfg.output / "preds_for_harness.json", json.dumps(subset, indent=2))
    atomic_write(cfg.output / "report.json", json.dumps(report, indent=2))
    return report


def build_report(results: list[InstanceEval], preds: dict[str, dict[str, Any]], cfg: EvalConfig) -> dict[str, Any]:
    ids = {s: sorted(r.instance_id for r in results if r.status == s)
           for s in (grading.RESOLVED, grading.PARTIALLY, grading.NOT_RESOLVED, grading.ERROR)}
    harness = sorted(r.instance_id for r in results if r.needs_official_harness)
    total = len(results)
    evaluable = total - len(harness)
    report = {
        "total_instances": total,
        "submitted_instances": len(preds),
        "resolved_instances": len(ids[grading.RESOLVED]),
        "partially_resolved_instances": len(ids[grading.PARTIALLY]),
        "unresolved_instances": len(ids[grading.NOT_RESOLVED]),
        "error_instances": len(ids[grading.ERROR]),
        "empty_patch_instances": sum(r.empty_patch for r in results),
        "needs_official_harness": harness,
        "resolve_rate": round(len(ids[grading.RESOLVED]) / total, 4) if total else 0.0,
        "resolve_rate_evaluable": round(len(ids[grading.RESOLVED]) / evaluable, 4) if evaluable else 0.0,
        "resolved_ids": ids[grading.RESOLVED],
        "partially_resolved_ids": ids[grading.PARTIALLY],
        "unresolved_ids": ids[grading.NOT_RESOLVED],
        "error_ids": ids[grading.ERROR],
        "empty_patch_ids": sorted(r.instance_id for r in results if r.empty_patch),
        "instances": {r.instance_id: asdict(r) for r in results},
        "evaluator": f"coder local evaluator (venv, Python {sys.version.split()[0]})",
    }
    if harness:
        report["official_command"] = official_command(cfg.dataset_path, cfg.output / "preds_for_harness.json",
                                                      harness)
    return report


def official_command(dataset: str, preds_path: Path, instance_ids: list[str] | None = None,
                     run_id: str = "coder-local") -> str:
    """The official harness command (Docker) for these predictions; a local dataset file works as its name."""
    parts = ["python", "-m", "swebench.harness.run_evaluation", "--dataset_name",
             dataset or "princeton-nlp/SWE-bench_Lite", "--predictions_path", str(preds_path),
             "--max_workers", "4", "--run_id", run_id]
    if instance_ids:
        parts += ["--instance_ids", *instance_ids]
    return " ".join(shlex.quote(p) for p in parts)
