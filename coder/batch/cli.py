"""`coder batch ISSUES --repo .` and `coder swebench run|eval|report`.

Only argparse here; the batch machinery is imported when a command runs, so `coder --help` stays fast.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from coder.base.errors import UsageError
from coder.base.paths import cache_dir
from coder.batch.extra import needs_extra


def register(subparsers: Any) -> None:
    batch = subparsers.add_parser(
        "batch", help="fix a list of issues in your repository, one workspace (and patch or branch) per issue "
             "(the optional swebench extra)",
        description="Run the agent headless on each issue of ISSUES (JSON / JSONL records with id and title/body, "
                    "or a .md/.txt file of sections separated by ---) in a private clone of --repo at HEAD; your "
                    "working tree is never touched. Each issue ends as RUN_DIR/patches/<id>.patch, and with "
                    "--branches also as branch coder/<id> in --repo.")
    batch.add_argument("issues", type=Path, help="issue list file")
    batch.add_argument("--repo", type=Path, default=Path("."), help="the repository (default: .)")
    batch.add_argument("--branches", action="store_true", help="also create branch coder/<id> per fixed issue")
    batch.add_argument("--hide-future", metavar="REF",
                       help="replay past issues as a benchmark: each workspace starts at REF (not HEAD) and holds "
                            "REF's history only (no later commit, branch, tag or object); the run's report says "
                            "per issue what the agent could reach and flags commands that reached further")
    batch.add_argument("--env", type=Path, metavar="SPEC.json", dest="env_spec",
                       help="a test environment for the agent, built once from --repo at HEAD (keys as one version "
                            "of the SWE-bench spec table: python, pip_packages, packages, pre_install, install, "
                            "test_cmd); its steps run in the sandbox, with network")
    batch.add_argument("--cache-dir", type=Path, help="where --env environments are kept "
                                                      "(default: ~/.cache/coder/batch-envs)")
    _run_flags(batch)
    batch.set_defaults(func=needs_extra("batch", _cmd_batch))

    sw = subparsers.add_parser("swebench",
                               help="SWE-bench style runs: run, eval, envs, report (the optional swebench extra)")
    sub = sw.add_subparsers(dest="swebench_command", metavar="{run,eval,envs,report}")
    sw.set_defaults(func=needs_extra("swebench", lambda args: (sw.print_help(), 2)[1]))

    run = sub.add_parser("run", help="run the agent on SWE-bench instances; writes preds.json",
                         description="Each instance gets a workspace at its base commit (a shared clone of "
                                     "--repos-dir/owner__name), a headless session with the problem statement and "
                                     "limits, and ends as a prediction in RUN_DIR/preds.json(l) plus trajectories. "
                                     "Rerunning the same command resumes: finished instances are skipped.")
    _dataset_flag(run)
    run.add_argument("--repos-dir", type=Path, help="local mirrors, one git repository per upstream: DIR/owner__name")
    _filter_flags(run)
    _run_flags(run)
    run.add_argument("--allow-network", action="store_true", help="clone repositories missing from --repos-dir")
    _env_flags(run)
    run.add_argument("--no-env", action="store_true",
                     help="no environments: each agent gets a bare checkout (no dependencies installed)")
    run.set_defaults(func=needs_extra("swebench run", _cmd_run))

    envs = sub.add_parser("envs", help="which environments build here (per repository and version), and why not",
                          description="Lists, per repository and version of the dataset (after the filters), "
                                      "whether its environment is built here, buildable or not, the Python it "
                                      "uses (the harness's, found on this machine) and why not where not; with "
                                      "--build, builds the missing ones first (needs the network for pip).")
    _dataset_flag(envs)
    envs.add_argument("--repos-dir", type=Path, help="local mirrors: DIR/owner__name")
    _filter_flags(envs)
    _env_flags(envs)
    envs.add_argument("--build", action="store_true", help="build the environments that are not built yet")
    envs.add_argument("--allow-network", action="store_true", help="clone repositories missing from --repos-dir")
    envs.add_argument("--json", action="store_true", help="print the list as JSON")
    envs.add_argument("--gold", action="store_true",
                      help="also evaluate every instance's gold patch (builds what is missing): the list then says, "
                           "per environment, how many agree with the dataset's labels, and why each other does not")
    envs.add_argument("--output", "-o", type=Path, help="with --gold: where the evaluation goes (default: a folder "
                                                        "under the cache directory)")
    envs.add_argument("--workers", type=int, default=1, help="with --gold: instances evaluated at once")
    envs.set_defaults(func=needs_extra("swebench envs", _cmd_envs))

    ev = sub.add_parser("eval", help="evaluate predictions locally (venv per repo version, no Docker)")
    ev.add_argument("predictions", type=Path, help="preds.json / preds.jsonl (or a run directory)")
    _dataset_flag(ev)
    ev.add_argument("--repos-dir", type=Path)
    ev.add_argument("--output", "-o", type=Path, help="EVAL_DIR (default: RUN_DIR/eval next to the predictions)")
    _filter_flags(ev)
    ev.add_argument("--workers", type=int, default=1)
    ev.add_argument("--timeout", type=float, default=1800.0, help="seconds per instance test run")
    _env_flags(ev)
    ev.add_argument("--allow-network", action="store_true")
    ev.add_argument("--keep-workspaces", action="store_true")
    ev.add_argument("--official", action="store_true",
                    help="only print the official harness command for these predictions and exit")
    ev.set_defaults(func=needs_extra("swebench eval", _cmd_eval))

    rep = sub.add_parser("report", help="Markdown + JSON + PNG report of a run")
    rep.add_argument("run_dir", type=Path)
    rep.add_argument("--eval", type=Path, help="evaluation directory or report.json (default: RUN_DIR/eval)")
    rep.set_defaults(func=needs_extra("swebench report", _cmd_report))


def _dataset_flag(p: Any) -> None:
    p.add_argument("--dataset", required=True, metavar="DATASET",
                   help="SWE-bench records: a .json, .jsonl or .parquet file, a folder saved with datasets, or a "
                        "Hugging Face name (princeton-nlp/SWE-bench_Lite; lite, verified, full), read from its cache")
    p.add_argument("--split", help="split of a Hugging Face dataset (default: test)")


def _env_flags(p: Any) -> None:
    p.add_argument("--specs", type=Path, help="extra environment specs (JSON, same shape as the built-in table)")
    p.add_argument("--force-env", action="store_true",
                   help="build environments marked unsupported or missing system packages anyway")
    p.add_argument("--rebuild-envs", action="store_true", help="rebuild the environments (and retry failed builds)")
    p.add_argument("--cache-dir", type=Path, help="environments and mirrors (default: ~/.cache/coder/swebench)")


def _cache(args: Any) -> Path:
    return (args.cache_dir or cache_dir() / "swebench").expanduser().resolve()


def _prepare(args: Any, instances: list, build: bool, announce: bool = True) -> tuple[dict, dict]:
    """The environments of these instances (one line each on stderr as they come): (spec table, states)."""
    # start-up time: the harness loads when its command runs (`coder --help` imports this module)
    from coder.batch.envprep import describe, prepare_envs
    from coder.batch.envs import load_spec_table

    table = load_spec_table(args.specs)
    states = prepare_envs(instances, table, _cache(args), build=build,
                          repos_dir=args.repos_dir.resolve() if args.repos_dir else None,
                          allow_network=args.allow_network, force=args.force_env, rebuild=args.rebuild_envs,
                          progress=(lambda st: print(describe(st), file=sys.stderr)) if announce else None)
    return table, states


def _filter_flags(p: Any) -> None:
    p.add_argument("--instances", action="append", metavar="IDS", help="only these ids (comma-separated, repeatable)")
    p.add_argument("--filter", metavar="REGEX", help="only ids matching REGEX")
    p.add_argument("--slice", metavar="START:STOP", help="a slice of the (filtered, shuffled) list, e.g. 0:10")
    p.add_argument("--shuffle", action="store_true", help="shuffle before slicing (deterministic with --seed)")
    p.add_argument("--seed", type=int, default=42)


def _run_flags(p: Any) -> None:
    p.add_argument("--output", "-o", type=Path, help="RUN_DIR (default: a new folder under ~/.local/state/coder)")
    p.add_argument("--model", "-m", dest="batch_model", metavar="MODEL",
                   help="PROVIDER:NAME; scripted:DIR gives each instance DIR/<instance_id>.json")
    p.add_argument("--workers", "-w", type=int, default=1, help="instances at once (default 1)")
    p.add_argument("--backend", choices=("local", "ray"), default="local")
    p.add_argument("--address", help="Ray cluster address (with --backend ray; default: start a local Ray)")
    p.add_argument("--max-turns", type=int, default=50, help="per instance (default 50)")
    p.add_argument("--max-cost", type=float, help="USD per instance")
    p.add_argument("--wall-time", type=float, default=1800.0, help="seconds per instance (default 1800)")
    p.add_argument("--total-cost", type=float, help="USD for the whole run: no new instance starts after it")
    p.add_argument("--redo", action="store_true", help="run finished instances again")
    p.add_argument("--exclude-new-tests", action="store_true",
                   help="leave test files and reproduction scripts the agent added out of the patch")
    p.add_argument("--keep-workspaces", action="store_true", help="keep each workspace after its patch is taken")
    p.add_argument("--prompt-template", type=Path,
                   help="task template (Markdown) using any of {{problem_statement}} {{repo}} {{instance_id}} "
                        "{{base_commit}} {{hints}}; the default is prompts/swebench_instance.md")
    p.add_argument("--with-hints", action="store_true", help="add the instance's hints_text to the task")
    p.add_argument("--net-preset", action="append", metavar="NAME", default=[],
                   help="let the agent's sandbox reach this preset's package registries (python, node, rust, go) "
                        "through coder's proxy, e.g. to install a missing test dependency; off by default so "
                        "SWE-bench runs stay comparable (repeatable)")
    p.add_argument("--mcp", action="append", metavar="NAME", default=[],
                   help="let the agents use this MCP server of your config ([mcp.servers.NAME]); none by default, "
                        "whatever your config holds; recorded and flagged on every instance (repeatable)")
    p.add_argument("--web-search", action="store_true",
                   help="let the agents search the web (off by default: the web holds published fixes); recorded "
                        "and flagged on every instance")
    p.add_argument("--attempts", type=int, default=1, metavar="N",
                   help="run N independent attempts per instance (each in its own workspace, within --workers) and "
                        "submit the one with the strongest evidence: a patch, then verified over failed over "
                        "unverified, then the reviewer's verdict, then the smaller patch (attempts.json says why)")
    p.add_argument("--no-progress", action="store_true", help="no status lines or live progress")


def _model(args: Any) -> str:
    model = args.batch_model or getattr(args, "model", None) or os.environ.get("CODER_MODEL")
    if not model:
        raise UsageError("give --model (e.g. anthropic:claude-sonnet-4-6, or scripted:DIR for scripted runs)")
    if model.startswith("scripted:"):  # agents run inside each workspace: make the path the caller meant absolute
        return "scripted:" + str(Path(model.split(":", 1)[1]).expanduser().resolve())
    return model


def _config(args: Any, run_dir: Path, **extra: Any):
    # start-up time: the harness loads when its command runs (`coder --help` imports this module)
    from coder.batch.instance_run import RunConfig
    from coder.batch.reach import granted_servers

    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.attempts < 1:
        raise UsageError("--attempts must be at least 1")
    return RunConfig(run_dir=run_dir.resolve(), model=_model(args), workers=args.workers, max_turns=args.max_turns,
                     max_cost=args.max_cost, wall_time=args.wall_time, total_cost=args.total_cost, redo=args.redo,
                     exclude_new_tests=args.exclude_new_tests, keep_workspaces=args.keep_workspaces,
                     prompt_template=args.prompt_template, include_hints=args.with_hints, backend=args.backend,
                     address=args.address, network_presets=list(args.net_preset or []),
                     mcp_servers=granted_servers(args.mcp), web_search=args.web_search,
                     progress=not args.no_progress, attempts=args.attempts, **extra)


def _check_template(args: Any) -> None:
    """A bad --prompt-template stops the run before environments are built or any instance starts."""
    if args.prompt_template:
        # start-up time: the harness loads when its command runs (`coder --help` imports this module)
        from coder.batch.instance_run import instance_template

        instance_template(args.prompt_template)


def _select(args: Any, instances: list) -> list:
    # start-up time: the harness loads when its command runs (`coder --help` imports this module)
    from coder.batch.instances import filter_instances

    return filter_instances(instances, ids=args.instances, pattern=args.filter, slice_spec=args.slice,
                            shuffle=args.shuffle, seed=args.seed)


def _finish(summary: Any, run_dir: Path) -> int:
    print(f"predictions: {run_dir / 'preds.json'}  ({summary.finished} finished now, {summary.skipped} skipped as "
          f"done, {summary.crashed} crashed, {summary.not_started} not started; cost ${summary.cost_usd:.4f})",
          file=sys.stderr)
    if summary.stopped_by_cost:
        print("stopped: the --total-cost limit was reached; rerun with a higher limit to go on", file=sys.stderr)
    return summary.exit_code


def _cmd_run(args: Any) -> int:
    # start-up time: the harness loads when its command runs (`coder --help` imports this module)
    from coder.batch.batch import default_run_dir, run_batch
    from coder.batch.instances import load_instances
    from coder.batch.reach import dataset_paths
    from coder.batch.workspace import past_stores_dir

    _check_template(args)
    instances = _select(args, load_instances(args.dataset, args.split))
    run_dir = args.output or default_run_dir("swebench")
    testbeds: dict[str, Any] = {}
    if not args.no_env:
        # start-up time: the harness loads when its command runs (`coder --help` imports this module)
        from coder.batch.envprep import testbed_infos

        table, states = _prepare(args, instances, build=True)
        testbeds = testbed_infos(instances, table, states)
    hide = [str(Path(p).resolve()) for p in (args.repos_dir, _cache(args), run_dir, past_stores_dir(),
                                             *dataset_paths(args.dataset)) if p]
    cfg = _config(args, run_dir, repos_dir=args.repos_dir.resolve() if args.repos_dir else None,
                  allow_network=args.allow_network, testbeds=testbeds, hide=hide,
                  cache_dir=_cache(args) / "mirrors")  # the mirrors the environments were built from
    print(f"run directory: {run_dir}  ({len(instances)} instances, {args.workers} workers)", file=sys.stderr)
    return _finish(run_batch(instances, cfg), cfg.run_dir)


def _cmd_batch(args: Any) -> int:
    # start-up time: the harness loads when its command runs (`coder --help` imports this module)
    from coder.batch.batch import default_run_dir, run_batch
    from coder.batch.instances import load_issue_list
    from coder.batch.workspace import head_commit, past_stores_dir

    _check_template(args)
    repo = args.repo.resolve()
    base = head_commit(repo, args.hide_future or "HEAD")
    instances = load_issue_list(args.issues, base, repo.name)
    run_dir = args.output or default_run_dir("batch")
    testbeds = _batch_testbeds(args, repo, instances) if args.env_spec else {}
    cache = (args.cache_dir or cache_dir() / "batch-envs").expanduser().resolve()
    hide = [str(Path(p).resolve()) for p in (repo, args.issues, run_dir, cache, past_stores_dir())]
    cfg = _config(args, run_dir, source_repo=repo, branches=args.branches, testbeds=testbeds, hide=hide)
    print(f"run directory: {run_dir}  ({len(instances)} issues on {repo} at {base[:12]})", file=sys.stderr)
    summary = run_batch(instances, cfg)
    patches = cfg.run_dir / "patches"
    patches.mkdir(parents=True, exist_ok=True)
    for inst in instances:
        src = cfg.run_dir / "instances" / inst.instance_id / "patch.diff"
        if src.is_file() and src.stat().st_size:
            shutil.copyfile(src, patches / f"{inst.instance_id}.patch")
    print(f"patches: {patches}" + ("  branches: coder/<id>" if args.branches else ""), file=sys.stderr)
    return _finish(summary, cfg.run_dir)


def _batch_testbeds(args: Any, repo: Path, instances: list) -> dict[str, Any]:
    """`coder batch --env`: the user's own repository gets what a SWE-bench version gets, an environment built
    once (at HEAD, cached per repository path and rebuilt when the spec changes; its steps in the sandbox with
    network, like every environment build) and a layer per workspace."""
    # start-up time: the harness loads when its command runs (`coder --help` imports this module)
    import hashlib  # start-up time: hashlib loads OpenSSL (2.4 ms, 2 MiB), and `coder --help` imports this module

    from coder.batch.envprep import describe, prepare_envs, testbed_infos
    from coder.batch.specs import load_env_spec

    entry = load_env_spec(args.env_spec)
    for inst in instances:
        inst.version = "local"
    table = {"repos": {repo.name: {"log_parser": entry.pop("log_parser", "pytest"), "versions": {"local": entry}}}}
    where = hashlib.sha256(str(repo).encode()).hexdigest()[:12]
    cache = (args.cache_dir or cache_dir() / "batch-envs").expanduser().resolve() / where
    states = prepare_envs(instances, table, cache, build=True, repos_dir=repo.parent,
                          progress=lambda st: print(describe(st), file=sys.stderr))
    return testbed_infos(instances, table, states)


def _hub_split(args: Any) -> str:
    """The split to name to the official harness: only for a Hub dataset (a local file has none)."""
    return "" if Path(args.dataset).expanduser().exists() else (args.split or "")


def _cmd_eval(args: Any) -> int:
    # start-up time: the harness loads when its command runs (`coder --help` imports this module)
    from coder.batch.envprep import describe
    from coder.batch.envs import load_spec_table
    from coder.batch.evaluate import EvalConfig, evaluate, official_command
    from coder.batch.instances import dataset_label, load_instances
    from coder.batch.outputs import load_predictions

    preds = load_predictions(args.predictions)
    preds_path = args.predictions / "preds.json" if args.predictions.is_dir() else args.predictions
    if args.official:
        print(official_command(dataset_label(args.dataset), preds_path, sorted(preds), split=_hub_split(args)))
        return 0
    dataset = load_instances(args.dataset, args.split)
    instances = [i for i in _select(args, dataset) if i.instance_id in preds]
    unknown = sorted(set(preds) - {i.instance_id for i in dataset})
    if unknown:
        print(f"warning: {len(unknown)} predictions are not in the dataset: {', '.join(unknown[:5])}",
              file=sys.stderr)
    if not instances:
        raise UsageError("no prediction matches an instance of the dataset (and the filters)")
    output = (args.output or preds_path.parent / "eval").resolve()
    cfg = EvalConfig(output=output, repos_dir=args.repos_dir.resolve() if args.repos_dir else None,
                     cache_dir=_cache(args), allow_network=args.allow_network, specs=load_spec_table(args.specs),
                     workers=args.workers, timeout=args.timeout, force_env=args.force_env,
                     rebuild_envs=args.rebuild_envs, keep_workspaces=args.keep_workspaces,
                     dataset_path=dataset_label(args.dataset), split=_hub_split(args))
    report = evaluate(instances, preds, cfg, progress=lambda st: print(describe(st), file=sys.stderr))
    for iid, r in report["instances"].items():
        if r.get("needs_official_harness"):  # its environment's reason was printed once above
            extra = f"  (could not evaluate: no environment {r['env']} here)"
        else:
            extra = f"  ({r['error'][:160]})" if r.get("error") else ""
        print(f"{r['status']:<9} {iid}{extra}")
    print(f"resolved {report['resolved_instances']}/{report['total_instances']}, partially "
          f"{report['partially_resolved_instances']}, not {report['unresolved_instances']}, error "
          f"{report['error_instances'] - report['could_not_evaluate_instances']}, could not evaluate "
          f"{report['could_not_evaluate_instances']} (empty patches {report['empty_patch_instances']}); report: "
          f"{output / 'report.json'}", file=sys.stderr)
    if report.get("official_command"):
        print(f"{len(report['needs_official_harness'])} instances need the official harness (no local environment):"
              f"\n  {report['official_command']}", file=sys.stderr)
    json.dumps(report)  # fail loudly here rather than leave a half-written report behind
    return 0


def _cmd_envs(args: Any) -> int:
    # start-up time: the harness loads when its command runs (`coder --help` imports this module)
    from coder.batch.envprep import coverage_table
    from coder.batch.instances import load_instances

    instances = _select(args, load_instances(args.dataset, args.split))
    table, states = _prepare(args, instances, build=args.build or args.gold, announce=args.build or args.gold)
    gold = _gold_check(args, instances, table) if args.gold else None
    if args.json:
        print(json.dumps({k: s.to_dict() for k, s in states.items()} | ({"gold": gold} if gold else {}), indent=1))
    else:
        print(coverage_table(list(states.values()), gold))
    return 0


def _gold_check(args: Any, instances: list, table: dict) -> dict[str, Any]:
    """The gold patches through the evaluator: per instance, its evaluation record."""
    # start-up time: the harness loads when its command runs (`coder --help` imports this module)
    from coder.batch.evaluate import EvalConfig, evaluate
    from coder.batch.instances import dataset_label

    out = args.output or _cache(args) / "gold-checks" / time.strftime("%Y%m%d-%H%M%S")
    preds = {i.instance_id: {"instance_id": i.instance_id, "model_name_or_path": "gold", "model_patch": i.patch}
             for i in instances}
    cfg = EvalConfig(output=out.resolve(), repos_dir=args.repos_dir.resolve() if args.repos_dir else None,
                     cache_dir=_cache(args), allow_network=args.allow_network, specs=table, workers=args.workers,
                     force_env=args.force_env, dataset_path=dataset_label(args.dataset), split=_hub_split(args))
    report = evaluate(instances, preds, cfg)
    print(f"gold evaluation: {out / 'report.json'}", file=sys.stderr)
    return report["instances"]


def _cmd_report(args: Any) -> int:
    # start-up time: the harness loads when its command runs (`coder --help` imports this module)
    from coder.batch.report import write_report

    paths = write_report(args.run_dir.resolve(), args.eval.resolve() if args.eval else None)
    print("\n".join(f"{k}: {v}" for k, v in paths.items()))
    print(paths["md"].read_text(encoding="utf-8").split("\n\n![", 1)[0])
    return 0
