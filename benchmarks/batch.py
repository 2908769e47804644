"""Batch throughput: instances per hour of the scaffold itself (workspace, session, patch, eval) with a scripted
model, for 1 and 2 workers, next to mini-swe-agent's batch runner (`mini-extra swebench`) with its deterministic
test model on the same instances.

    python benchmarks/batch.py --quick            # 6 instances
    python benchmarks/batch.py --instances 20     # more
    python benchmarks/batch.py --peer-venv /work/peers/mini-swe-agent   # where mini-swe-agent lives

The instances are SWE-bench-style tasks built here (a git repository with a bug, its issue, gold and test patches,
FAIL_TO_PASS / PASS_TO_PASS), N copies of one task, so both tools do identical work per instance:
  coder: `coder swebench run` (one `coder run` subprocess per instance: a shared clone at the base commit, a
         headless session whose scripted model views the file, fixes it with the edit tool and answers; the diff
         against the base commit; trajectories), then `coder swebench eval` (venv reused, the tests run).
  mini-swe-agent: `mini-extra swebench --environment-class local` (Docker is not available here) with its
         DeterministicModel: a startup command makes the same shared clone, the model views the file and then
         fixes and submits in one shell command. mini-swe-agent's local environment has no per-instance working
         directory, so each instance claims one of the prepared clones atomically (identical instances, so which
         one does not matter); it has no evaluator of its own (the official harness needs Docker), so only its
         run phase is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "batch"))
from batch_fixtures import BUGGY, SPECS, TESTS, SweFixture, git


def make_instances(root: Path, n: int) -> SweFixture:
    repos = root / "repos"
    mirror = repos / "acme__calc"
    (mirror / "tests").mkdir(parents=True)
    git(mirror, "init", "-q", "-b", "main")
    (mirror / "calc.py").write_text(BUGGY)
    (mirror / "tests" / "test_calc.py").write_text(TESTS)
    git(mirror, "add", "-A")
    git(mirror, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "bug")
    base = git(mirror, "rev-parse", "HEAD").strip()
    fx = SweFixture(root, repos, mirror, root / "dataset.jsonl", root / "specs.json", base,
                    [f"acme__calc-{i}" for i in range(1, n + 1)])
    fx.dataset.write_text("".join(json.dumps(fx.record(i)) + "\n" for i in fx.ids))
    fx.specs.write_text(json.dumps(SPECS))
    fx.write_scripts(root / "scripts")
    return fx


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}... failed ({proc.returncode}):\n{proc.stdout[-1500:]}"
                           f"\n{proc.stderr[-1500:]}")
    return elapsed, proc.stdout


def bench_coder(fx: SweFixture, root: Path, workers: int, cache: Path) -> dict:
    run_dir = root / f"coder-run-w{workers}"
    t_run, _ = timed([sys.executable, "-m", "coder", "swebench", "run", "--dataset", str(fx.dataset), "--repos-dir",
                      str(fx.repos_dir), "--output", str(run_dir), "--model", f"scripted:{root / 'scripts'}",
                      "--workers", str(workers), "--no-progress"])
    preds = json.loads((run_dir / "preds.json").read_text())
    assert len(preds) == len(fx.ids) and all("a + b" in p["model_patch"] for p in preds.values())
    t_eval, _ = timed([sys.executable, "-m", "coder", "swebench", "eval", str(run_dir / "preds.json"), "--dataset",
                       str(fx.dataset), "--repos-dir", str(fx.repos_dir), "--specs", str(fx.specs), "--cache-dir",
                       str(cache), "--workers", str(workers)])
    report = json.loads((run_dir / "eval" / "report.json").read_text())
    n = len(fx.ids)
    return {"tool": "coder", "workers": workers, "instances": n, "run_s": round(t_run, 2),
            "eval_s": round(t_eval, 2), "run_per_hour": round(3600 * n / t_run),
            "run_eval_per_hour": round(3600 * n / (t_run + t_eval)), "resolved": report["resolved_instances"]}


def mini_config(root: Path, fx: SweFixture) -> Path:
    work = root / "mini-work"
    (work / "ws").mkdir(parents=True, exist_ok=True)
    (work / "claims").mkdir(exist_ok=True)
    fix = ("for d in ws/*; do mkdir \"claims/$(basename $d)\" 2>/dev/null && break; done; cd \"$d\" && "
           "sed -i 's/return a - b/return a + b/' calc.py && git add -A && "
           "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff --cached")
    outputs = [
        {"role": "assistant", "content": "THOUGHT: look at calc.py\n", "extra": {"actions": [
            {"command": "cat ws/$(ls ws | head -1)/calc.py"}]}},
        {"role": "assistant", "content": "THOUGHT: fix and submit\n", "extra": {"actions": [{"command": fix}]}},
    ]
    startup = (f"git clone -q --shared {fx.mirror} ws/{{{{instance_id}}}} && "
               "git -C ws/{{instance_id}} checkout -q {{base_commit}}")
    cfg = {"environment": {"environment_class": "local", "cwd": str(work), "timeout": 60},
           "model": {"model_class": "deterministic", "model_name": "deterministic", "outputs": outputs,
                     "cost_per_call": 0.0},
           "agent": {"step_limit": 10, "cost_limit": 0},
           "run": {"env_startup_command": startup}}
    path = root / "mini-override.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    return path


def bench_mini(fx: SweFixture, root: Path, workers: int, venv: Path) -> dict:
    out = root / f"mini-run-w{workers}"
    shutil.rmtree(root / "mini-work", ignore_errors=True)
    override = mini_config(root, fx)
    data_dir = root / "mini-dataset"  # `datasets.load_dataset(DIR)` reads the JSONL files of a folder as "train"
    data_dir.mkdir(exist_ok=True)
    shutil.copyfile(fx.dataset, data_dir / "data.jsonl")
    t_run, _ = timed([str(venv / "bin" / "mini-extra"), "swebench", "--subset", str(data_dir), "--split", "train",
                      "-o", str(out), "-w", str(workers), "-c", "swebench.yaml", "-c", str(override)],
                     env={"MSWEA_CONFIGURED": "true", "MSWEA_SILENT_STARTUP": "1", "HF_DATASETS_OFFLINE": "1"},
                     cwd=root)
    preds = json.loads((out / "preds.json").read_text())
    ok = sum("a + b" in (p.get("model_patch") or "") for p in preds.values())
    n = len(fx.ids)
    if ok != n:
        raise RuntimeError(f"mini-swe-agent produced {ok}/{n} fixing patches; see {out}")
    return {"tool": "mini-swe-agent", "workers": workers, "instances": n, "run_s": round(t_run, 2),
            "eval_s": None, "run_per_hour": round(3600 * n / t_run), "run_eval_per_hour": None, "resolved": None}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="6 instances")
    ap.add_argument("--instances", type=int, default=20)
    ap.add_argument("--peer-venv", type=Path, default=Path("/work/peers/mini-swe-agent"),
                    help="venv with mini-swe-agent (created with `python -m venv DIR && DIR/bin/pip install "
                         "mini-swe-agent` when missing and --install-peer is given)")
    ap.add_argument("--install-peer", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    args = ap.parse_args()
    n = 6 if args.quick else args.instances
    rows = []
    with tempfile.TemporaryDirectory(prefix="coder-bench-batch-") as tmp:
        root = Path(tmp)
        fx = make_instances(root, n)
        cache = root / "cache"
        for workers in (1, 2):
            rows.append(bench_coder(fx, root, workers, cache))
            print(json.dumps(rows[-1]), flush=True)
        venv = args.peer_venv
        if not (venv / "bin" / "mini-extra").exists() and args.install_peer:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "mini-swe-agent"], check=True)
        if (venv / "bin" / "mini-extra").exists():
            for workers in (1, 2):
                try:
                    rows.append(bench_mini(fx, root, workers, venv))
                    print(json.dumps(rows[-1]), flush=True)
                except RuntimeError as exc:
                    print(f"mini-swe-agent ({workers} workers) failed: {exc}", file=sys.stderr)
        else:
            print(f"mini-swe-agent not available at {venv} (use --install-peer or --peer-venv)", file=sys.stderr)
    print("\n| tool | workers | instances | run s | eval s | run inst/h | run+eval inst/h |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['tool']} | {r['workers']} | {r['instances']} | {r['run_s']} | {r['eval_s'] or '-'} | "
              f"{r['run_per_hour']} | {r['run_eval_per_hour'] or '-'} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
