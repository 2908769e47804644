"""SWE-bench Lite test instances in their environments, against the official labels.

For every Lite test instance whose repository is available here (bare mirrors brought by the search tool's
`fetch`, under /work/.mirror/owner+name/repo; django, scikit-learn and matplotlib are too large to bring):
- the environment of its repository and version is built (once; build time and disk recorded);
- (a) the gold patch is evaluated by `coder swebench eval`'s evaluator: it must be resolved, as the harness's
  FAIL_TO_PASS / PASS_TO_PASS labels say; (b) an empty patch and a no-op patch (a new text file) must not be;
- (c) in the agent's sandboxed shell (the persistent shell the `bash` tool uses, with the variables
  `coder swebench run` gives the agent), with the test patch applied, the FAIL_TO_PASS tests are run with the
  harness's test command: they must fail before the gold patch and pass after it;
- (d) per repository, `--cli N` instances (default 1) go the way a new user goes: `coder swebench run` with a
  scripted model that runs the instance's test command in its sandboxed shell (the tests must run: no missing
  module) and applies the gold patch from there, then `coder swebench eval` (the verdict must be resolved).

    python benchmarks/swebench_envs.py --quick          # flask, requests and a few pytest instances
    python benchmarks/swebench_envs.py --repos pytest-dev/pytest,sphinx-doc/sphinx --write-section

Results go to benchmarks/sections/swebench_envs.md (with --write-section) and a JSON file per run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from coder.batch import grading  # noqa: E402
from coder.batch.envprep import READY, describe, env_key, prepare_envs, ready_env  # noqa: E402
from coder.batch.envs import load_spec_table  # noqa: E402
from coder.batch.evaluate import EvalConfig, apply_patch, eval_test_command, evaluate  # noqa: E402
from coder.batch.instances import Instance, load_instances  # noqa: E402
from coder.batch.reach import agent_reach, instance_reach  # noqa: E402
from coder.batch.testbed import enter_testbed  # noqa: E402
from coder.batch.workspace import create_workspace, find_mirror, remove_workspace  # noqa: E402

DATASET = ROOT.parent / "shared" / "data" / "swebench" / "swebench_lite_test.jsonl"
FETCHED = Path("/work/.mirror")
QUICK_REPOS = ("pallets/flask", "psf/requests", "pytest-dev/pytest")
NOOP = "diff --git a/coder_noop.txt b/coder_noop.txt\nnew file mode 100644\n--- /dev/null\n+++ b/coder_noop.txt\n" \
       "@@ -0,0 +1 @@\n+nothing\n"


def mirrors_dir(target: Path) -> Path:
    """`owner__name` links to the fetched bare repositories, the layout --repos-dir expects."""
    target.mkdir(parents=True, exist_ok=True)
    for repo in sorted(FETCHED.glob("*+*/repo")):
        link = target / repo.parent.name.replace("+", "__", 1)
        if not link.exists():
            link.symlink_to(repo)
    return target


def shell_check(inst: Instance, info: dict, work: Path) -> dict:
    """(c): F2P in the agent's sandboxed shell, before and after the gold patch."""
    from coder.sandbox.profile import SandboxConfig
    from coder.sandbox.shell import PersistentShell

    ws_dir = work / inst.instance_id
    inst_dir = work / f"{inst.instance_id}.logs"
    inst_dir.mkdir(parents=True, exist_ok=True)
    prompt = inst_dir / "prompt.md"
    prompt.write_text("task\n")
    out: dict = {}
    try:
        ws = create_workspace(Path(info["mirror"]), inst.base_commit, ws_dir)
        env = enter_testbed({"spec": info["spec"], "env_dir": info["env_dir"]}, ws, prompt, inst_dir)
        if apply_patch(ws.path, inst.test_patch, "test", fallbacks=False) is None:
            return {"error": "test patch does not apply"}
        # what the agent's sandbox hides (issue 44): the run's folders, local indexes, the project's releases
        reach = agent_reach([], env["CODER_SANDBOX_EXTRA_RO"].split(os.pathsep))
        _, hidden, _ = instance_reach(ws.path, {}, inst.repo, [str(work), str(Path(info["mirror"]).parent)], reach)
        cfg = SandboxConfig(extra_ro=env["CODER_SANDBOX_EXTRA_RO"].split(os.pathsep), hide=hidden,
                            private_cgroups=env.get("CODER_SANDBOX_PRIVATE_CGROUPS") == "1",
                            max_output_chars=10**8, max_timeout=1800)
        shell = PersistentShell(ws.path, cfg, host_env={**os.environ, "CODER_SANDBOX_ENV": env["CODER_SANDBOX_ENV"]})
        shell.start()
        try:
            command = info["test_cmd"]
            parser = grading.parser_for(info["log_parser"])
            for phase in ("before", "after"):
                if phase == "after" and apply_patch(ws.path, inst.patch, "gold") is None:
                    return {**out, "error": "gold patch does not apply"}
                res = shell.run(command, timeout=1800)
                (inst_dir / f"shell_{phase}.txt").write_text(res.output, encoding="utf-8")
                status = parser(res.output)
                f2p = [t for t in inst.FAIL_TO_PASS if grading.passed(t, status)]
                out[phase] = len(f2p)
            out["f2p"] = len(inst.FAIL_TO_PASS)
            out["ok"] = out["before"] < out["f2p"] and out["after"] == out["f2p"]
        finally:
            shell.close()
    except Exception as exc:  # noqa: BLE001 - one instance must not end the benchmark
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        remove_workspace(ws_dir)
    return out


def cli_check(inst: Instance, info: dict, repos_dir: Path, cache_dir: Path, work: Path, dataset: str) -> dict:
    """(d): what a new user does, through the CLI: `coder swebench run` with a scripted model whose first
    command runs the instance's test command in the sandboxed shell, then applies the gold patch from the shell
    (as a model's edit), and `coder swebench eval` of the predictions."""
    import subprocess

    run_dir, scripts = work / inst.instance_id, work / f"{inst.instance_id}.scripts"
    scripts.mkdir(parents=True, exist_ok=True)
    body = inst.patch if inst.patch.endswith("\n") else inst.patch + "\n"  # a blank context line ends in a space
    apply = f"git apply -v <<'CODER_GOLD_EOF'\n{body}CODER_GOLD_EOF"
    turns = [{"text": "Run the tests.", "tool_calls": [{"name": "bash", "input": {"command": info["test_cmd"],
                                                                                 "timeout": 1800}}]},
             {"text": "Fix.", "tool_calls": [{"name": "bash", "input": {"command": apply}}]},
             {"text": "Done."}]
    (scripts / f"{inst.instance_id}.json").write_text(json.dumps({"turns": turns}), encoding="utf-8")
    common = ["--dataset", dataset, "--repos-dir", str(repos_dir), "--cache-dir", str(cache_dir)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "coder", "swebench", "run", *common, "--instances", inst.instance_id,
                          "--model", f"scripted:{scripts}", "--output", str(run_dir), "--no-progress",
                          "--max-turns", "5"], capture_output=True, text=True, env=env, timeout=7200)
    out: dict = {"run_rc": run.returncode}
    traj_file = run_dir / "instances" / inst.instance_id / f"{inst.instance_id}.traj.json"
    if traj_file.is_file():
        tools = [m["content"] for m in json.loads(traj_file.read_text())["messages"] if m["role"] == "tool"]
        first = tools[0] if tools else ""
        out["tests_ran"] = bool(re.search(r"\b(passed|failed|error|PASSED|FAILED|OK|tests finished)\b", first)) \
            and "ModuleNotFoundError" not in first and "command not found" not in first
    ev = subprocess.run([sys.executable, "-m", "coder", "swebench", "eval", str(run_dir / "preds.json"), *common],
                        capture_output=True, text=True, env=env, timeout=7200)
    out["verdict"] = "resolved" if f"resolved  {inst.instance_id}" in ev.stdout else \
        (ev.stdout.strip().splitlines() or [ev.stderr.strip()[-200:]])[-1][:160]
    out["ok"] = bool(out.get("tests_ran")) and out["verdict"] == "resolved"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK_REPOS)} (3 instances each)")
    ap.add_argument("--repos", help="comma-separated repositories (default: every fetched one)")
    ap.add_argument("--limit", type=int, default=0, help="instances per repository (0: all)")
    ap.add_argument("--instances", help="comma-separated instance ids (only these)")
    ap.add_argument("--dataset", default=str(DATASET),
                    help="the instances: a JSON/JSONL/parquet file or a Hugging Face name (default: Lite's test split)")
    ap.add_argument("--sample", type=Path, metavar="JSON",
                    help="only the instances a kept sample lists (benchmarks/data/swebench_verified_sample.json)")
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/swe-cache"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/swe-bench-envs"))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--cli", type=int, default=1, metavar="N",
                    help="per repository, N ready instances also go through `coder swebench run` + `eval` (0: none)")
    ap.add_argument("--shell", type=int, default=-1, metavar="N",
                    help="per repository, the shell check (c) for N ready instances only (default: all)")
    ap.add_argument("--label", default="Lite test split", help="what the instances are, for the section's title")
    ap.add_argument("--write-section", action="store_true")
    ap.add_argument("--combine", nargs="+", type=Path, metavar="RESULTS_JSON",
                    help="only render the section from results.json files of earlier runs (one per repository)")
    args = ap.parse_args()
    started = time.time()
    if args.combine:
        return combine(args)
    repos_dir = mirrors_dir(args.work / "mirrors")
    insts = [i for i in load_instances(args.dataset) if find_mirror(repos_dir, i.repo)]
    if args.sample:
        kept = set(json.loads(args.sample.read_text(encoding="utf-8"))["instances"])
        insts = [i for i in insts if i.instance_id in kept]
    wanted = QUICK_REPOS if args.quick else tuple(args.repos.split(",")) if args.repos else None
    if wanted:
        insts = [i for i in insts if i.repo in wanted]
    if args.instances:
        insts = [i for i in insts if i.instance_id in set(args.instances.split(","))]
    limit = 3 if args.quick and not args.limit else args.limit
    if limit:
        per: dict[str, int] = defaultdict(int)
        insts = [i for i in insts if (per.__setitem__(i.repo, per[i.repo] + 1) or per[i.repo] <= limit)]
    print(f"{len(insts)} instances", file=sys.stderr)
    table = load_spec_table()
    states = prepare_envs(insts, table, args.cache_dir, build=True, repos_dir=repos_dir,
                          scratch=args.work / "setup", progress=lambda s: print(describe(s), file=sys.stderr))
    out_dir = args.work / "eval"
    results: dict[str, dict] = {i.instance_id: {"repo": i.repo, "env": env_key(i, table)} for i in insts}
    for label, patch_of in (("gold", lambda i: i.patch), ("noop", lambda _i: NOOP), ("empty", lambda _i: "")):
        preds = {i.instance_id: {"instance_id": i.instance_id, "model_name_or_path": label,
                                 "model_patch": patch_of(i)} for i in insts}
        cfg = EvalConfig(output=out_dir / label, repos_dir=repos_dir, cache_dir=args.cache_dir, specs=table,
                         workers=args.workers, timeout=1800, dataset_path=str(args.dataset))
        report = evaluate(insts, preds, cfg)
        for iid, r in report["instances"].items():
            results[iid][label] = r["status"]
            if label == "gold":
                results[iid]["timing"] = {"duration_s": r.get("duration_s"), "run_s": r.get("run_s")}
            if label == "gold" and r.get("needs_official_harness"):
                results[iid]["not_here"] = r.get("error", "")[:300]
            if r.get("error"):
                results[iid][f"{label}_error"] = r["error"][:300]
        print(f"{label}: {report['resolved_instances']} resolved of {len(insts)}", file=sys.stderr)
    cli_done: dict[str, int] = defaultdict(int)
    shell_done: dict[str, int] = defaultdict(int)
    jobs: list[tuple[Instance, dict, bool]] = []
    for inst in insts:
        state = states[results[inst.instance_id]["env"]]
        if state.status != READY or results[inst.instance_id].get("not_here"):
            continue
        if 0 <= args.shell <= shell_done[inst.repo]:
            results[inst.instance_id]["shell"] = {"skipped": True}
            continue
        shell_done[inst.repo] += 1
        spec, env_dir = ready_env(inst, table, states)
        info = {"spec": spec.__dict__, "env_dir": str(env_dir), "mirror": str(find_mirror(repos_dir, inst.repo)),
                "test_cmd": eval_test_command(inst, spec), "log_parser": spec.log_parser}
        cli = cli_done[inst.repo] < args.cli
        cli_done[inst.repo] += cli
        jobs.append((inst, info, cli))

    def check(job: tuple[Instance, dict, bool]) -> None:
        inst, info, cli = job
        results[inst.instance_id]["shell"] = shell_check(inst, info, args.work / "shell")
        if cli:
            results[inst.instance_id]["cli"] = cli_check(inst, info, repos_dir, args.cache_dir, args.work / "cli",
                                                       args.dataset)
        print(inst.instance_id, results[inst.instance_id], file=sys.stderr)

    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        list(pool.map(check, jobs))
    (args.work / "results.json").write_text(json.dumps({"results": results, "elapsed_s": time.time() - started,
                                                        "envs": {k: s.to_dict() for k, s in states.items()}},
                                                       indent=1))
    section = render(results, states, args, time.time() - started)
    print(section)
    if args.write_section:
        (ROOT / "benchmarks" / "sections" / "swebench_envs.md").write_text(section, encoding="utf-8")
    return 0


def combine(args: argparse.Namespace) -> int:
    from coder.batch.envprep import EnvState

    results: dict[str, dict] = {}
    states: dict[str, EnvState] = {}
    elapsed = 0.0
    for path in args.combine:
        data = json.loads(path.read_text())
        results.update(data["results"])
        for key, v in data["envs"].items():  # runs that share an environment: its instances are all of theirs
            known = states[key].instances if key in states else []
            states[key] = EnvState(**v)
            states[key].instances = sorted(set(known) | set(states[key].instances))
        elapsed += data.get("elapsed_s", 0.0)
    section = render(results, states, args, elapsed)
    print(section)
    if args.write_section:
        (ROOT / "benchmarks" / "sections" / "swebench_envs.md").write_text(section, encoding="utf-8")
    return 0


def _agrees(r: dict) -> bool:
    """With the official labels: gold resolved, no-op and empty not, F2P failing then passing in the shell (where
    the shell check ran: `--shell N` runs it for N instances per repository)."""
    shell = r.get("shell", {})
    return r.get("gold") == "resolved" and r.get("noop") != "resolved" and r.get("empty") != "resolved" and \
        (bool(shell.get("ok")) or bool(shell.get("skipped")))


def render(results: dict[str, dict], states: dict, args: argparse.Namespace, elapsed: float) -> str:
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for r in results.values():
        by_repo[r["repo"]].append(r)
    cmd = "python benchmarks/swebench_envs.py " + " ".join(a for a in sys.argv[1:] if a != "--write-section")
    lines = [f"## SWE-bench environments ({args.label}, local evaluator and agent shell)", "",
             f"`{cmd.strip()}`, {time.strftime('%Y-%m-%d')}, {platform.node()} ({os.cpu_count()} cores, "
             f"Python {platform.python_version()}), {elapsed / 60:.0f} min in all. Repositories: the fetched "
             "mirrors (django, scikit-learn and matplotlib are over the fetch tool's size limit). "
             "Agreement: gold resolved (the official label), no-op and empty patches not resolved, and in the "
             "agent's sandboxed shell FAIL_TO_PASS failing before the gold patch and passing after.", "",
             "| repository | instances | env ready | gold resolved | no-op/empty not resolved | shell F2P fail->pass "
             "| agreement (all of them) | CLI run + eval (tests ran, resolved) |", "|---|---|---|---|---|---|---|---|"]
    total = agree_total = ready_total = 0
    for repo, rows in sorted(by_repo.items()):
        ready = [r for r in rows if states[r["env"]].status == READY]
        gold = sum(r.get("gold") == "resolved" for r in rows)
        neg = sum(r.get("noop") != "resolved" and r.get("empty") != "resolved" for r in rows)
        shell = sum(bool(r.get("shell", {}).get("ok")) for r in rows)
        shell_run = sum(not r.get("shell", {}).get("skipped") for r in rows)
        waiting = sum("shell" not in r and states[r["env"]].status == READY and not r.get("not_here") for r in rows)
        agree = sum(_agrees(r) for r in rows)
        total, agree_total, ready_total = total + len(rows), agree_total + agree, ready_total + len(ready)
        cli = [r["cli"] for r in rows if "cli" in r]
        lines.append(f"| {repo} | {len(rows)} | {len(ready)} | {gold} | {neg}/{len(rows)} | {shell}/{shell_run}"
                     f"{f' ({waiting} not run)' if waiting else ''} | "
                     f"{agree}/{len(rows)} | {sum(bool(c.get('ok')) for c in cli)}/{len(cli)} |")
    negatives_ok = all(r.get("noop") != "resolved" and r.get("empty") != "resolved" for r in results.values())
    lines += ["", f"Agreement on {agree_total}/{total} instances of the available repositories "
                  f"({agree_total / max(total, 1):.0%}); {ready_total} had a ready environment. No no-op or empty "
                  f"patch resolved: {negatives_ok}."]
    waiting_total = sum("shell" not in r and states[r["env"]].status == READY and not r.get("not_here")
                        for r in results.values())
    if waiting_total:
        lines[-1] += (f" The shell check of {waiting_total} instances did not finish within this session (their "
                      f"gold, no-op and empty verdicts did); without them: "
                      f"{agree_total}/{total - waiting_total} ({agree_total / max(total - waiting_total, 1):.0%}).")
    here = [r for r in results.values() if not r.get("not_here")]
    if len(here) < len(results):
        agree = sum(_agrees(r) for r in here)
        lines[-1] += (f" {len(results) - len(here)} instances could not be evaluated on this machine (the "
                      "evaluator says so and prints the official harness command; reasons below); of the "
                      f"others: {agree}/{len(here)} ({agree / max(len(here), 1):.0%}).")
    timed = [r["timing"] for r in results.values() if (r.get("timing") or {}).get("run_s")]
    if timed:
        overhead = sorted(t["duration_s"] - t["run_s"] for t in timed)
        runs = sorted(t["run_s"] for t in timed)
        lines += ["", f"Per-instance overhead of the evaluator (workspace at the base commit, patches, test-file "
                      f"reset, layer, logs; the gold runs of {len(timed)} instances): median "
                      f"{overhead[len(overhead) // 2]:.1f} s, max {overhead[-1]:.1f} s, against a median sandboxed "
                      f"install and test run of {runs[len(runs) // 2]:.1f} s."]
    lines += ["", "Environments (build time and disk; not available: why):", "",
              "| environment | status | Python | build s | disk MB | instances | why not |",
              "|---|---|---|---|---|---|---|"]
    for key, st in sorted(states.items()):
        why = (st.error.strip().splitlines()[0][:100] if st.error.strip() else "").replace("|", "/")
        lines.append(f"| {key} | {st.status} | {st.python} | {st.built_s or ''} | {st.disk_mb or ''} | "
                     f"{len(st.instances)} | {why} |")
    bad = [(iid, r) for iid, r in sorted(results.items())
           if not _agrees(r) and not ("shell" not in r and states[r["env"]].status == READY and not r.get("not_here"))]
    if bad:
        lines += ["", "Instances not in agreement, and why:", ""]
        for iid, r in bad:
            why = r.get("gold_error") or r.get("shell", {}).get("error") or \
                f"gold {r.get('gold')}, shell {r.get('shell')}"
            lines.append(f"- {iid}: {str(why).splitlines()[0][:160]}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
