"""`coder swebench eval`: check predictions locally, without Docker, the way the official harness does.

First the environments (coder/batch/envprep.py), once per repository and version. Then per instance: a
workspace at the base commit, the prediction applied (git apply, then a 3-way apply, then `patch --fuzz=5`: the
harness's fallbacks), the tested files reset and the test patch applied, all by host git (which runs nothing of
the patch). Then, in the bubblewrap sandbox only (no network, the environment read-only, the instance layer
writable: coder/batch/testbed.py), the harness's install of the patched workspace and its test command; the log
is parsed and graded with the harness's rules (coder.batch.grading). Instances whose environment cannot be
built here, or whose tests need an internet this machine does not have (coder/batch/netprobe.py), end as
"error" with `needs_official_harness` and the reason, and the official command is printed for them; the report
never mixes them with real failures.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coder.base.errors import SandboxUnavailable
from coder.batch import grading, infra
from coder.batch.envprep import EnvState, env_key, prepare_envs, ready_env
from coder.batch.envs import installs_with_pip
from coder.batch.instances import Instance
from coder.batch.instdeps import patch_requirements
from coder.batch.outputs import atomic_write
from coder.batch.reach import dataset_paths, local_indexes
from coder.batch.services import start_lines, unserved
from coder.batch.specs import EnvSpec, EnvUnavailable
from coder.batch.testbed import Testbed, install_script, open_testbed
from coder.batch.workspace import (
    IncompleteMirror,
    WorkspaceError,
    create_workspace,
    ensure_mirror,
    git,
    past_stores_dir,
    remove_workspace,
)
from coder.host import TimeoutExpired
from coder.host import git as hostgit
from coder.host import run as host_run

NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
#: swebench 5.0's chain (run_evaluation.GIT_APPLY_CMDS), each from a clean tree; then its check that the patch
#: is not already applied in full (`git apply --check --reverse`)
APPLY_METHODS = (("git apply", ["git", "apply", "--verbose"]),
                 ("git apply --3way", ["git", "apply", "--verbose", "--3way"]),
                 ("git apply --reject", ["git", "apply", "--verbose", "--reject"]),
                 ("patch --fuzz=5", ["patch", "--batch", "--forward", "--fuzz=5", "-p1", "-i"]))


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
    split: str = ""  # of a Hugging Face dataset (the official harness's --split)


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
    infra_failure: bool = False  # the harness's label: the environment, not the patch, failed (advisory)
    infra_failure_reason: str = ""  # also set for failures of the ambiguous tier
    error: str | None = None
    duration_s: float = 0.0
    run_s: float = 0.0  # of duration_s, the sandboxed install and test run; the rest is this evaluator's overhead


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
                    else host_run([*cmd, str(path)], purpose="a patch", workdir=ws, text=True, timeout=300))
            if proc.returncode == 0:
                return label
            if fallbacks:  # undo a partial apply before the next method
                git(ws, "reset", "-q", "--hard", check=False)
                git(ws, "clean", "-fdq", check=False)
        if fallbacks and hostgit.run(ws, ["apply", "--check", "--reverse", str(path)], timeout=300).returncode == 0:
            return "already applied"
        return None
    finally:
        path.unlink(missing_ok=True)


def evaluate_instance(inst: Instance, pred: dict[str, Any] | None, cfg: EvalConfig,
                      states: dict[str, EnvState]) -> InstanceEval:
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
        result.env = env_key(inst, cfg.specs)
        spec, env_dir = ready_env(inst, cfg.specs, states)
        if (state := states.get(result.env)) is not None and state.not_here:
            result.needs_official_harness, result.error = True, state.not_here
            return result
        mirror = ensure_mirror(inst.repo, cfg.repos_dir, cache / "mirrors", cfg.allow_network)
        ws = create_workspace(mirror, inst.base_commit, ws_dir).path
        method = apply_patch(ws, patch, "model")
        if method is None:
            result.error = "the prediction does not apply (git apply, --3way, --reject and patch --fuzz=5 all failed)"
            return result
        result.apply_method = method
        _reset_test_files(ws, inst)
        if inst.test_patch.strip() and apply_patch(ws, inst.test_patch, "test", fallbacks=False) is None:
            result.error = "the test patch does not apply on top of the prediction"
            return result
        result.patch_successfully_applied = True
        patch_wheels, why = patch_requirements(env_dir, ws, patch) if installs_with_pip(spec) else (None, "")
        if why:  # the install then goes without them, and says so in its log
            atomic_write(out_dir / "patch_requirements.txt", why + "\n")
        testbed = open_testbed(spec, env_dir, ws)
        # a patch's code runs in this sandbox: nothing of the future nor of the answers in its reach either
        testbed.hide = [str(p) for p in (cfg.repos_dir, cache, cfg.output, past_stores_dir()) if p] + \
            local_indexes() + (dataset_paths(cfg.dataset_path) if cfg.dataset_path else [])
        run_started = time.monotonic()
        log = _run_tests(inst, spec, testbed, cfg, out_dir, patch_wheels)
        result.run_s = round(time.monotonic() - run_started, 2)
        install_log = _read(out_dir / "install.log")
        failed_install = INSTALL_FAILED_RE.search(log)
        if failed_install:
            last = (install_log.strip().splitlines() or ["no output"])[-1][:200]
            result.error = (f"installing the package under test failed (exit {failed_install.group(1)}: {last}); "
                            "its tests were not run against a missing package: see install.log")
            _label(result, ("install_failed", infra.install_failure_tier(patch)))
            return result
        graded = grading.grade(log, grading.parser_for(spec.log_parser), inst.FAIL_TO_PASS, inst.PASS_TO_PASS)
        result.status, result.tests_status = graded.status, graded.tests_status
        result.resolved = result.status == grading.RESOLVED
        if graded.error:
            result.error = f"{graded.error}; see test_output.txt"
        if not result.resolved:
            _label(result, infra.classify(log, install_log))
            left_out = _left_out_needed(env_dir, log, graded.tests_status, _status_map(spec, log))
            if left_out:
                result.status, result.needs_official_harness = grading.ERROR, True
                result.error = (f"its PASS_TO_PASS tests need {', '.join(left_out)}, which this environment leaves "
                                "out (no PyPI equivalent; the harness's conda environment has it): they skip here, "
                                "by file and line, and so are missing from the log; see test_output.txt")
            elif not spec.test_network and infra.failed_on_network(log, _failing(graded.tests_status),
                                                                   unserved(spec)):
                # the tests reach the internet the harness's containers have (sphinx's linkcheck): no verdict here
                result.status, result.needs_official_harness = grading.ERROR, True
                result.error = ("its tests reach the internet, which the harness's containers have and this "
                                "machine's sandbox does not: every failing test of its lists failed on name "
                                "resolution" + (" or on https to the local stand-in" if spec.test_service else "")
                                + "; see test_output.txt")
    except EnvUnavailable as exc:
        result.needs_official_harness, result.error = True, f"environment: {exc}"
    except IncompleteMirror as exc:
        result.needs_official_harness, result.error = True, f"workspace: {exc}"
    except (WorkspaceError, SandboxUnavailable, OSError, TimeoutExpired) as exc:
        result.error = str(exc)
    finally:
        result.duration_s = round(time.monotonic() - started, 2)
        if not cfg.keep_workspaces:
            remove_workspace(ws_dir)
        atomic_write(out_dir / "report.json", json.dumps(asdict(result), indent=1))
    return result


def _failing(report: dict[str, Any]) -> list[str]:
    return [t for part in ("FAIL_TO_PASS", "PASS_TO_PASS") for t in (report.get(part) or {}).get("failure", [])]


_COULD_NOT_IMPORT = re.compile(r"could not import '([A-Za-z0-9_]+)")


def _status_map(spec: EnvSpec, log: str) -> dict[str, str]:
    section = grading.test_section(log) or ""
    parser = grading.parser_for(spec.log_parser)
    return parser(section) or parser(log)


def _left_out_needed(env_dir: Path, log: str, report: dict[str, Any], status_map: dict[str, str]) -> list[str]:
    """The packages the environment left out (left_out.json: conda-only, coder/batch/condayml.py) that the run
    skipped tests for, when that alone explains the miss: every FAIL_TO_PASS test passed, and every failing
    PASS_TO_PASS test is absent from the log (pytest summarises such skips by file and line, not by test) rather
    than FAILED or ERROR. Otherwise []."""
    try:
        recorded = json.loads(_read(env_dir / "left_out.json") or "{}")
        left = {name.lower() for names in recorded.values() for name in names}
    except (json.JSONDecodeError, AttributeError):
        return []
    skipped = sorted({m.group(1) for m in _COULD_NOT_IMPORT.finditer(log) if m.group(1).lower() in left})
    if not skipped or not report or report["FAIL_TO_PASS"]["failure"]:
        return []
    missing_only = all(case not in status_map for case in report["PASS_TO_PASS"]["failure"])
    return skipped if missing_only and report["PASS_TO_PASS"]["failure"] else []


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _label(result: InstanceEval, found: tuple[str, str] | None) -> None:
    if found:
        result.infra_failure_reason, result.infra_failure = found[0], found[1] == infra.TIER_ENVIRONMENT


def _reset_test_files(ws: Path, inst: Instance) -> None:
    """As the harness's eval script does: the files the test patch touches go back to the base commit first, so
    an agent's edits to those tests neither block the test patch nor change what is tested."""
    files = re.findall(r"diff --git a/.* b/(.*)", inst.test_patch)
    existing = [f for f in files if hostgit.run(ws, ["cat-file", "-e", f"{inst.base_commit}:{f}"]).returncode == 0]
    if existing:
        git(ws, "checkout", inst.base_commit, "--", *existing)


#: eval_commands lines that only set variables run; the others (locale-gen into /etc) need root in a container
_EXPORT = re.compile(r"^export [A-Za-z_][A-Za-z0-9_]*=\S*$")
#: written to the test log instead of running the tests when the install of the patched workspace failed
INSTALL_FAILED = ">>>>> Install Failed"
INSTALL_FAILED_RE = re.compile(re.escape(INSTALL_FAILED) + r": (\d+)")


def eval_script(inst: Instance, spec: EnvSpec, layer: Path, env_dir: Path, build_wheels: Path | None = None,
                patch_wheels: Path | None = None) -> str:
    """The harness's eval script, minus its container plumbing: the exported variables of `eval_commands`, the
    pre-install and install of the (patched) workspace into its layer, then the tests between the markers. The
    output goes to files in the layer (writable in the sandbox) so nothing clips or re-encodes it."""
    lines = ["set -uo pipefail", *[c for c in spec.eval_commands if _EXPORT.match(c)]]
    output = shlex.quote(str(layer / "test_output.txt"))
    install = install_script(spec, env_dir, str(layer / "install.log"), build_wheels, patch_wheels)
    if install:  # a failed install is reported as such, never followed by a test run against a missing package
        lines += [install, "rc=$?", f'if [ "$rc" -ne 0 ]; then echo "{INSTALL_FAILED}: $rc" > {output}; exit 0; fi']
    # a local stand-in for a server the tests would reach on the internet (coder/batch/services.py), then the
    # test command's own exit status, recorded after the end marker as swebench 5.0's eval scripts do
    service = start_lines(spec, env_dir, str(layer / "service.log"))
    lines += ["{", *service, f"echo {shlex.quote(grading.START_TEST_OUTPUT)}", eval_test_command(inst, spec),
              "rc=$?", f"echo {shlex.quote(grading.END_TEST_OUTPUT)}",
              f'echo "{grading.TEST_EXIT_CODE}: $rc"; }} > {output} 2>&1']
    return "\n".join(lines) + "\n"


def _run_tests(inst: Instance, spec: EnvSpec, tb: Testbed, cfg: EvalConfig, out_dir: Path,
               patch_wheels: Path | None = None) -> str:
    """Install and test in the sandbox (the model's code never runs on the host); its logs copied out after."""
    script = eval_script(inst, spec, tb.layer, tb.env_dir, tb.build_layer, patch_wheels)
    atomic_write(out_dir / "eval.sh", script)
    try:
        # still sandboxed; network only for repositories whose tests need it (psf/requests: httpbin.org)
        code, output = tb.run(script, cfg.timeout, writable_layer=True, network=spec.test_network)
        log_path = out_dir / "test_output.txt"
        for name in ("install.log", "test_output.txt", "service.log"):
            if (tb.layer / name).is_file():
                shutil.copyfile(tb.layer / name, out_dir / name)
        text = log_path.read_text(encoding="utf-8", errors="replace") if log_path.is_file() else ""
        if code is None:
            text += f"\nTIMEOUT after {cfg.timeout:g}s\n"
        if output.strip():
            (out_dir / "sandbox_output.txt").write_text(output, encoding="utf-8")
        return text
    finally:
        shutil.rmtree(tb.layer, ignore_errors=True)


def evaluate(instances: list[Instance], preds: dict[str, dict[str, Any]], cfg: EvalConfig,
             progress: Callable[[EnvState], None] | None = None) -> dict[str, Any]:
    """Evaluate every instance that has a prediction; write EVAL_DIR/report.json; return the report.

    The environments come first, once each (built when missing); then the instances, in parallel."""
    cfg.output.mkdir(parents=True, exist_ok=True)
    chosen = [i for i in instances if i.instance_id in preds]
    needing = [i for i in chosen if (preds[i.instance_id].get("model_patch") or "").strip()]
    states = prepare_envs(needing, cfg.specs, Path(cfg.cache_dir).expanduser(), build=True,
                          repos_dir=cfg.repos_dir, allow_network=cfg.allow_network, force=cfg.force_env,
                          rebuild=cfg.rebuild_envs, scratch=cfg.output / "workspaces", progress=progress)
    with ThreadPoolExecutor(max_workers=max(1, cfg.workers)) as pool:
        results = list(pool.map(lambda i: evaluate_instance(i, preds.get(i.instance_id), cfg, states), chosen))
    report = build_report(results, preds, cfg, states)
    if report["needs_official_harness"]:
        subset = {i: preds[i] for i in report["needs_official_harness"]}
        atomic_write(cfg.output / "preds_for_harness.json", json.dumps(subset, indent=2))
    atomic_write(cfg.output / "report.json", json.dumps(report, indent=2))
    return report


def build_report(results: list[InstanceEval], preds: dict[str, dict[str, Any]], cfg: EvalConfig,
                 states: dict[str, EnvState] | None = None) -> dict[str, Any]:
    """The harness's report fields, plus what this evaluator adds: "could not evaluate" (no environment here:
    `needs_official_harness`, with the official command) kept apart from "not resolved", and one entry per
    environment that failed, naming its instances, rather than the same error once per instance."""
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
        "could_not_evaluate_instances": len(harness),
        "empty_patch_instances": sum(r.empty_patch for r in results),
        "needs_official_harness": harness,
        "resolve_rate": round(len(ids[grading.RESOLVED]) / total, 4) if total else 0.0,
        "resolve_rate_evaluable": round(len(ids[grading.RESOLVED]) / evaluable, 4) if evaluable else 0.0,
        "resolved_ids": ids[grading.RESOLVED],
        "partially_resolved_ids": ids[grading.PARTIALLY],
        "unresolved_ids": ids[grading.NOT_RESOLVED],
        "error_ids": ids[grading.ERROR],
        "empty_patch_ids": sorted(r.instance_id for r in results if r.empty_patch),
        # swebench 5.0's advisory labels: the environment failed (infra), or the logs cannot tell (ambiguous)
        "infra_failure_ids": sorted(r.instance_id for r in results if r.infra_failure),
        "ambiguous_failure_ids": sorted(r.instance_id for r in results
                                        if r.infra_failure_reason and not r.infra_failure),
        "environments": {k: s.to_dict() for k, s in sorted((states or {}).items())},
        "instances": {r.instance_id: asdict(r) for r in results},
        "evaluator": "coder local evaluator (a venv per repository and version, tests in the bubblewrap sandbox)",
    }
    if harness:
        report["official_command"] = official_command(cfg.dataset_path, cfg.output / "preds_for_harness.json",
                                                      harness, split=cfg.split)
    return report


def official_command(dataset: str, preds_path: Path, instance_ids: list[str] | None = None,
                     run_id: str = "coder-local", split: str = "") -> str:
    """The official harness command (Docker) for these predictions; a local dataset file works as its name, a
    Hub dataset keeps its split (the harness's default is test)."""
    parts = ["python", "-m", "swebench.harness.run_evaluation", "--dataset_name",
             dataset or "princeton-nlp/SWE-bench_Lite", "--predictions_path", str(preds_path),
             "--max_workers", "4", "--run_id", run_id]
    if split:
        parts += ["--split", split]
    if instance_ids:
        parts += ["--instance_ids", *instance_ids]
    return " ".join(shlex.quote(p) for p in parts)
