"""Batch throughput: instances per hour of the scaffold itself (workspace, sandboxed session, patch, eval) with a
scripted model, for 1 and 2 workers, next to mini-swe-agent's batch runner (`mini-extra swebench`) with its
deterministic test model on the same instances.

    python benchmarks/batch.py --quick            # 6 instances per set
    python benchmarks/batch.py --instances 20     # more
    python benchmarks/batch.py --quick --coder-src /tmp/old   # the coder in /tmp/old (an earlier commit's export)
    python benchmarks/batch.py --quick --section  # also write the table into benchmarks/sections/batch.md

Two instance sets, each N copies of one SWE-bench-style task built here (a git repository with a bug, its issue,
gold and test patches, FAIL_TO_PASS / PASS_TO_PASS), so both tools do identical work per instance:
  tiny: the repository is the task's two files;
  mid:  the same task in a tree of ~350 files (this project's own tracked files as ballast), so checkouts cost
        what they cost in a real repository of modest size.
  coder: `coder swebench run --no-env` (one sandboxed `coder run` per instance: a shared clone at the base commit;
         the scripted model runs `cat calc.py` in the bubblewrap shell, fixes the file with the edit tool and
         answers; the diff against the base commit; trajectories), then `coder swebench eval` (its environment
         built by a warm-up evaluation first, not counted). One more row per set runs with the instances'
         environment active in the agent's shell (`--specs`, built before, not counted): each workspace is
         installed into a layer over it.
  mini-swe-agent: `mini-extra swebench --environment-class local` (Docker is not available here) with its
         DeterministicModel: a startup command makes the same shared clone, the model runs `cat` and then fixes
         and submits in one shell command, unsandboxed. Its local environment has no per-instance working
         directory, so each instance claims one of the prepared clones atomically (identical instances, so which
         one does not matter); it has no evaluator of its own (the official harness needs Docker), so only its run
         phase is measured.
Both tools run from compiled bytecode, as installed tools do (mini-swe-agent's venv has it from pip; coder's source
tree is compiled first: a shell with PYTHONDONTWRITEBYTECODE set would otherwise recompile coder in every process).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = ROOT / "benchmarks" / "sections" / "batch.md"
BEGIN, END = "<!-- benchmarks/batch.py: begin -->", "<!-- benchmarks/batch.py: end -->"
sys.path.insert(0, str(ROOT / "tests" / "batch"))
from batch_fixtures import BUGGY, SPECS, TESTS, SweFixture, git  # noqa: E402


def make_instances(root: Path, n: int, ballast: bool) -> SweFixture:
    repos = root / "repos"
    mirror = repos / "acme__calc"
    (mirror / "tests").mkdir(parents=True)
    git(mirror, "init", "-q", "-b", "main")
    if ballast:  # this project's tracked files, under a folder of their own
        for rel in git(ROOT, "ls-files").splitlines():
            src = ROOT / rel
            if src.is_file() and not src.is_symlink():
                dest = mirror / "vendor" / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)
    (mirror / "calc.py").write_text(BUGGY)
    (mirror / "tests" / "test_calc.py").write_text(TESTS)
    git(mirror, "add", "-A")
    git(mirror, "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "bug")
    base = git(mirror, "rev-parse", "HEAD").strip()
    fx = SweFixture(root, repos, mirror, root / "dataset.jsonl", root / "specs.json", base,
                    [f"acme__calc-{i}" for i in range(1, n + 1)])
    fx.dataset.write_text("".join(json.dumps(fx.record(i)) + "\n" for i in fx.ids))
    fx.specs.write_text(json.dumps(SPECS))
    write_scripts(root / "scripts", fx.ids)
    return fx


def write_scripts(directory: Path, ids: list[str]) -> None:
    """coder's scripted model: the same steps as mini-swe-agent's (a `cat` in the shell, the fix, the answer)."""
    directory.mkdir(parents=True, exist_ok=True)
    turns = [{"text": "Looking at calc.py.", "tool_calls": [{"name": "bash", "input": {"command": "cat calc.py"}}]},
             {"text": "The sign is wrong; fixing it.",
              "tool_calls": [{"name": "str_replace_based_edit_tool",
                              "input": {"command": "str_replace", "path": "calc.py", "old_str": "return a - b",
                                        "new_str": "return a + b"}}]},
             {"text": "Fixed: add() now returns a + b."}]
    for iid in ids:
        (directory / f"{iid}.json").write_text(json.dumps({"turns": turns}), encoding="utf-8")


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}... failed ({proc.returncode}):\n{proc.stdout[-1500:]}"
                           f"\n{proc.stderr[-1500:]}")
    return elapsed, proc.stdout


def coder_env(src: Path) -> dict[str, str]:
    """coder from `src`, from its bytecode (compiled here into its __pycache__ folders, as pip does on install)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env.update(PYTHONPATH=str(src), HF_DATASETS_OFFLINE="1")  # (commands run outside this repository: `python -m`
    # puts the cwd first on sys.path, and the coder here must not shadow `src`)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "coder")], env=env, check=True)
    return env


def has_flag(env: dict[str, str], flag: str, cwd: Path) -> bool:
    """Older coders (--coder-src) lack some flags of `coder swebench run`."""
    out = subprocess.run([sys.executable, "-m", "coder", "swebench", "run", "--help"], capture_output=True,
                         text=True, env=env, cwd=cwd).stdout
    return flag in out


def check_run(run_dir: Path, fx: SweFixture) -> None:
    """Every instance fixed, in the bubblewrap sandbox, its shell command run there."""
    preds = json.loads((run_dir / "preds.json").read_text())
    assert len(preds) == len(fx.ids) and all("a + b" in p["model_patch"] for p in preds.values()), run_dir
    events = [json.loads(line) for line in (run_dir / "instances" / fx.ids[0] / "events.jsonl").read_text()
              .splitlines()]
    start = next(e for e in events if e["type"] == "session_start")
    assert start["sandbox"] == "bubblewrap", f"the sandbox was {start['sandbox']!r}"
    cat = next(e for e in events if e["type"] == "tool_call_finished" and e["tool"] == "bash")
    assert not cat["is_error"] and "return a - b" in cat["output"], cat


def bench_coder(fx: SweFixture, root: Path, workers: int, env: dict[str, str], *, with_env: bool,
                no_env_flag: bool, evaluate: bool) -> dict:
    tag = f"coder-run-w{workers}" + ("-env" if with_env else "")
    run_dir = root / tag
    cmd = [sys.executable, "-m", "coder", "swebench", "run", "--dataset", str(fx.dataset), "--repos-dir",
           str(fx.repos_dir), "--output", str(run_dir), "--model", f"scripted:{root / 'scripts'}", "--workers",
           str(workers), "--no-progress"]
    if with_env:
        cmd += ["--specs", str(fx.specs), "--cache-dir", str(root / "cache")]
    elif no_env_flag:
        cmd += ["--no-env"]
    try:
        t_run, _ = timed(cmd, env, cwd=root)
    except RuntimeError as exc:
        errors = {json.loads(f.read_text()).get("error") for f in run_dir.glob("instances/*/status.json")}
        raise RuntimeError(f"{exc}\ninstance errors: {sorted(e for e in errors if e)[:3]}") from None
    check_run(run_dir, fx)
    n = len(fx.ids)
    row = {"tool": "coder" + (" (environment active)" if with_env else ""), "workers": workers, "instances": n,
           "run_s": round(t_run, 2), "eval_s": None, "run_per_hour": round(3600 * n / t_run),
           "run_eval_per_hour": None, "resolved": None}
    if evaluate:
        t_eval, _ = timed([sys.executable, "-m", "coder", "swebench", "eval", str(run_dir / "preds.json"),
                           "--dataset", str(fx.dataset), "--repos-dir", str(fx.repos_dir), "--specs", str(fx.specs),
                           "--cache-dir", str(root / "cache"), "--workers", str(workers)], env, cwd=root)
        report = json.loads((run_dir / "eval" / "report.json").read_text())
        row.update(eval_s=round(t_eval, 2), run_eval_per_hour=round(3600 * n / (t_run + t_eval)),
                   resolved=report["resolved_instances"])
    return row


def warm_up(fx: SweFixture, root: Path, env: dict[str, str]) -> None:
    """Build the environment once (evaluating one gold patch), as a machine that ran before has it cached."""
    preds = root / "warm-preds.json"
    first = fx.record(fx.ids[0])
    preds.write_text(json.dumps({first["instance_id"]: {"instance_id": first["instance_id"],
                                                        "model_name_or_path": "gold", "model_patch": first["patch"]}}))
    timed([sys.executable, "-m", "coder", "swebench", "eval", str(preds), "--dataset", str(fx.dataset),
           "--repos-dir", str(fx.repos_dir), "--specs", str(fx.specs), "--cache-dir", str(root / "cache"),
           "--instances", first["instance_id"], "--output", str(root / "warm-eval")], env, cwd=root)


def mini_config(root: Path, fx: SweFixture) -> Path:
    work = root / "mini-work"
    (work / "ws").mkdir(parents=True, exist_ok=True)
    (work / "claims").mkdir(exist_ok=True)
    (work / "ready").mkdir(exist_ok=True)  # clones whose checkout is complete (another may still be cloning)
    fix = ("for r in ready/*; do i=$(basename $r); mkdir \"claims/$i\" 2>/dev/null && break; done; cd \"ws/$i\" && "
           "sed -i 's/return a - b/return a + b/' calc.py && git add -A && "
           "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff --cached")
    outputs = [
        {"role": "assistant", "content": "THOUGHT: look at calc.py\n", "extra": {"actions": [
            {"command": "cat ws/$(ls ws | head -1)/calc.py"}]}},
        {"role": "assistant", "content": "THOUGHT: fix and submit\n", "extra": {"actions": [{"command": fix}]}},
    ]
    startup = (f"git clone -q --shared {fx.mirror} ws/{{{{instance_id}}}} && "
               "git -C ws/{{instance_id}} checkout -q {{base_commit}} && touch ready/{{instance_id}}")
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
    env = {**os.environ, "MSWEA_CONFIGURED": "true", "MSWEA_SILENT_STARTUP": "1", "HF_DATASETS_OFFLINE": "1"}
    t_run, _ = timed([str(venv / "bin" / "mini-extra"), "swebench", "--subset", str(data_dir), "--split", "train",
                      "-o", str(out), "-w", str(workers), "-c", "swebench.yaml", "-c", str(override)], env, cwd=root)
    preds = json.loads((out / "preds.json").read_text())
    ok = sum("a + b" in (p.get("model_patch") or "") for p in preds.values())
    n = len(fx.ids)
    if ok != n:
        raise RuntimeError(f"mini-swe-agent produced {ok}/{n} fixing patches; see {out}")
    return {"tool": "mini-swe-agent", "workers": workers, "instances": n, "run_s": round(t_run, 2),
            "eval_s": None, "run_per_hour": round(3600 * n / t_run), "run_eval_per_hour": None, "resolved": None}


def mini_version(venv: Path) -> str:
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "show", "mini-swe-agent"], capture_output=True,
                         text=True).stdout
    found = re.search(r"^Version: (.+)$", out, re.MULTILINE)
    return found.group(1) if found else "?"


def run_set(name: str, n: int, args: argparse.Namespace, venv: Path | None) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix=f"coder-bench-batch-{name}-") as tmp:
        root = Path(tmp)
        fx = make_instances(root, n, ballast=name == "mid")
        env = coder_env(args.coder_src)
        no_env_flag = has_flag(env, "--no-env", root)
        warm_up(fx, root, env)
        for workers in (1, 2):
            rows.append(bench_coder(fx, root, workers, env, with_env=False, no_env_flag=no_env_flag,
                                    evaluate=not args.no_eval))
            print(json.dumps({"set": name, **rows[-1]}), flush=True)
        if no_env_flag:  # a coder that activates environments in the agent's shell
            rows.append(bench_coder(fx, root, 1, env, with_env=True, no_env_flag=True, evaluate=False))
            print(json.dumps({"set": name, **rows[-1]}), flush=True)
        for workers in (1, 2) if venv else ():
            try:
                rows.append(bench_mini(fx, root, workers, venv))
                print(json.dumps({"set": name, **rows[-1]}), flush=True)
            except RuntimeError as exc:
                print(f"mini-swe-agent ({workers} workers) failed: {exc}", file=sys.stderr)
    return [{"set": name, **r} for r in rows]


def table(rows: list[dict]) -> str:
    lines = ["| set | tool | workers | instances | run (s) | local eval (s) | run: instances/h | "
             "run + eval: instances/h |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['set']} | {r['tool']} | {r['workers']} | {r['instances']} | {r['run_s']} | "
                     f"{r['eval_s'] if r['eval_s'] is not None else 'n/a'} | {r['run_per_hour']:,} | "
                     f"{format(r['run_eval_per_hour'], ',') if r['run_eval_per_hour'] else 'n/a'} |")
    return "\n".join(lines)


def write_section(rows: list[dict], command: str, label: str, mini: str) -> None:
    """Put this run's table between the markers of the section (the rest of the section is kept)."""
    load = os.getloadavg()
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    block = (f"{BEGIN}\n### {label}\n\nCommand: `{command}` · date: {date}"
             f" · machine: {os.cpu_count()} cores, Python {platform.python_version()}, load average "
             f"{load[0]:.1f} at the end · peer: {mini}\n\n{table(rows)}\n{END}")
    text = SECTION.read_text(encoding="utf-8") if SECTION.is_file() else ""
    blocks = re.findall(re.escape(BEGIN) + r".*?" + re.escape(END), text, flags=re.S)
    same = next((b for b in blocks if f"### {label}\n" in b), None)
    if same:
        text = text.replace(same, block)
    elif END in text:
        last = text.rindex(END) + len(END)
        text = text[:last] + "\n\n" + block + text[last:]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    SECTION.write_text(text, encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="6 instances per set")
    ap.add_argument("--instances", type=int, default=20)
    ap.add_argument("--sets", default="tiny,mid", help="comma-separated: tiny, mid")
    ap.add_argument("--no-eval", action="store_true", help="measure the run phase only")
    ap.add_argument("--coder-src", type=Path, default=ROOT, help="the coder source tree to measure (default: this)")
    ap.add_argument("--peer-venv", type=Path, default=Path("/work/peers/mini-swe-agent"),
                    help="venv with mini-swe-agent (created with `python -m venv DIR && DIR/bin/pip install "
                         "mini-swe-agent` when missing and --install-peer is given)")
    ap.add_argument("--install-peer", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    ap.add_argument("--section", action="store_true", help=f"write the table into {SECTION.relative_to(ROOT)}")
    ap.add_argument("--label", default="", help="the heading of this run in the section (default: from the flags)")
    args = ap.parse_args()
    args.coder_src = args.coder_src.resolve()
    n = 6 if args.quick else args.instances
    venv: Path | None = args.peer_venv
    if not (venv / "bin" / "mini-extra").exists() and args.install_peer:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "mini-swe-agent"], check=True)
    if not (venv / "bin" / "mini-extra").exists():
        print(f"mini-swe-agent not available at {venv} (use --install-peer or --peer-venv)", file=sys.stderr)
        venv = None
    rows = []
    for name in args.sets.split(","):
        rows += run_set(name.strip(), n, args, venv)
    print("\n" + table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.section:
        command = "python benchmarks/batch.py " + " ".join(sys.argv[1:])
        label = args.label or f"{n} instances per set, coder from {args.coder_src}"
        write_section(rows, command, label, f"mini-swe-agent {mini_version(venv)}" if venv else "no peer")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
