"""Start-up of coder against a bare `python -c pass`, measured in the same run (median of repeated runs):

- `coder --version` and `coder --help`: wall time and peak memory of the process (goal: `--version` under 60 ms);
- the app and `--plain`, launched in a real terminal (tmux), to their first screen and to "ready to type": a word
  typed the moment the first screen is up shows in the input (goal, issue 47: under 0.5 s on a quiet machine), with
  the process's CPU seconds at that moment (what a loaded machine does not stretch); beside them, the same
  terminal running `python -c` that prints a line and waits (the floor of the terminal and the interpreter);
- what costs what: `python -X importtime` of each frontend's imports (`coder.cli.main` and the frontend's module,
  prompt-toolkit for `--plain`), the modules' own times summed by package, median over the runs.

Usage: python benchmarks/startup.py [--quick] [--runs N] [--coder PATH] [--against PATH] [--json] [--out FILE]

`--against PATH` measures a second coder script in the same runs, interleaved with the first, so a loaded machine
weighs on both alike (a change against its base: a script that puts the other checkout first on sys.path).
The installed console script is measured directly (not a pyenv/asdf shim in front of it), with the same Python
interpreter that runs it, so the difference is coder's own import cost. `--quick` writes the section
benchmarks/sections/startup.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from tui import ROOT, bench_env, make_repo, startup

#: what `coder` does before each frontend's first screen: the flags, the configuration check, the frontend's module
_BEFORE = ("from coder.cli.main import build_parser, check_config; "
           "check_config(build_parser().parse_args(['--model', 'scripted:x.json'])); ")
FRONTENDS = {"app": _BEFORE + "import coder.tui.app",
             "--plain": _BEFORE + "import coder.repl.repl; import prompt_toolkit.shortcuts"}


def find_coder() -> Path:
    script = Path(sysconfig.get_path("scripts")) / "coder"
    if script.exists():
        return script
    found = shutil.which("coder")
    if found:
        return Path(found)
    sys.exit("startup.py: no `coder` script found; run `bash install.sh` first")


def run_once(argv: list[str]) -> tuple[float, int]:
    """Wall time in ms and peak resident memory in KiB of one run (the child's own rusage)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), argv)
    return elapsed, usage.ru_maxrss


def measure(cases: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float, float]]:
    """name -> (median ms, min ms, median peak RSS MiB); the cases take turns, run after run."""
    for argv in cases.values():
        run_once(argv)  # warm the page cache
    samples: dict[str, list[tuple[float, int]]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, argv in cases.items():
            samples[name].append(run_once(argv))
    return {name: (statistics.median(ms for ms, _ in got), min(ms for ms, _ in got),
                   statistics.median(rss for _, rss in got) / 1024) for name, got in samples.items()}


# ---- the interactive frontends in a real terminal -----------------------------------------------------------------
def floor_once(repo: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """`python -c` printing a line and waiting for one, in the same terminal: (first screen, keys shown, CPU)."""
    code = "print('ready', flush=True); input()"
    first, keys, _, _ = startup(f"{sys.executable} -c \"{code}\"", repo, env, lambda s: "ready" in s,
                                lambda s: "ready" in s, probe=True)
    return first, keys, float("nan")


def frontend_once(repo: Path, env: dict[str, str], script: Path, plain: bool,
                  tree: Path = ROOT) -> tuple[float, float, float]:
    """(first screen, input accepts keys, the process's CPU seconds by then) of one launch of the coder in `tree`."""
    cpu: list[float] = []
    cmd = f"env PYTHONPATH={tree} {sys.executable} -m coder --model scripted:{script} --permission-mode ask"
    if plain:
        first, keys, _, _ = startup(cmd + " --plain", repo, env, lambda s: "/help lists commands" in s,
                                    lambda s: "ask>" in s, probe=True, cpu_at_keys=cpu)
    else:
        first, keys, _, _ = startup(cmd, repo, env, lambda s: "Ask coder" in s, lambda s: "idle │" in s,
                                    probe=True, cpu_at_keys=cpu)
    return first, keys, cpu[0] if cpu else float("nan")


def interactive(runs: int, base_tree: Path | None) -> dict[str, list[tuple[float, float, float]]]:
    base = Path(tempfile.mkdtemp(prefix="startupbench-"))
    try:
        repo = make_repo(base)
        env = bench_env(base)
        script = base / "hello.json"
        script.write_text(json.dumps({"turns": [{"text": "hello"}]}))
        rows: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
        trees = {"": ROOT, **({" (base)": base_tree} if base_tree is not None else {})}
        for tree in trees.values():
            frontend_once(repo, env, script, plain=False, tree=tree)  # warm the page cache and the byte-code
        for i in range(runs):
            rows["python -c (prints, waits)"].append(floor_once(repo, env))
            for suffix, tree in trees.items():
                rows["app" + suffix].append(frontend_once(repo, env, script, plain=False, tree=tree))
                rows["--plain" + suffix].append(frontend_once(repo, env, script, plain=True, tree=tree))
            print(f"interactive {i + 1}/{runs}: " + ", ".join(f"{k} {v[-1][1]:.2f}s" for k, v in rows.items()),
                  file=sys.stderr)
        return rows
    finally:
        shutil.rmtree(base, ignore_errors=True)


# ---- what costs what --------------------------------------------------------------------------------------------
_ROW = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def group_of(module: str) -> str:
    """coder's modules by package (`coder.tui`), the others by distribution, the standard library as one."""
    if module.startswith("coder."):
        return ".".join(module.split(".")[:2])
    top = module.split(".")[0]
    return "stdlib" if top in sys.stdlib_module_names or top.startswith("_") else top


def import_breakdown(code: str, runs: int, tree: Path = ROOT) -> dict[str, float]:
    """Package -> median over `runs` of its modules' own import time (ms), and "total" (the whole import)."""
    totals: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree, check=True).stderr
        groups: dict[str, float] = defaultdict(float)
        total = 0.0
        for line in out.splitlines():
            m = _ROW.match(line)
            if not m:
                continue
            groups[group_of(m.group(4))] += int(m.group(1)) / 1000
            total += int(m.group(1)) / 1000
        groups["total"] = total
        for name, ms in groups.items():
            totals[name].append(ms)
    return {name: statistics.median(values + [0.0] * (runs - len(values))) for name, values in totals.items()}


# ---- the report -------------------------------------------------------------------------------------------------
def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(runs: int, results: dict[str, tuple[float, float, float]], frontends: dict[str, list[tuple[float, ...]]],
           breakdown: dict[str, dict[str, float]], load: tuple[float, float]) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["## Startup (issues 2 and 47)", "",
             f"Command: `python benchmarks/startup.py --quick` ({runs} runs each, interleaved) · {now} · 2 cores, "
             f"load average {load[0]:.1f} before, {load[1]:.1f} after · Python {sys.version.split()[0]}, the "
             "installed console script measured directly.", "",
             "| command | median ms | min ms | peak RSS MiB |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| `{name}` | {m:.1f} | {low:.1f} | {rss:.1f} |" for name, (m, low, rss) in results.items()]
    if frontends:
        floor = med([r[1] for r in frontends["python -c (prints, waits)"]])
        lines += ["", "Launched in tmux (120x40), median (best) of the runs; \"ready to type\" is when a word typed "
                  "the moment the first screen is up shows in the input; CPU is the process's user and system "
                  "seconds at that moment:", "",
                  "| launched | first screen (s) | ready to type (s) | over python -c (s) | CPU by then (s) |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for name, rows in frontends.items():
            firsts, keys, cpus = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
            cpu = med([c for c in cpus if c == c])
            lines.append(f"| {name} | {med(firsts):.2f} ({min(firsts):.2f}) | {med(keys):.2f} ({min(keys):.2f}) | "
                         f"{med(keys) - floor:+.2f} | {'' if cpu != cpu else f'{cpu:.2f}'} |")
    for name, groups in breakdown.items():
        total = groups.pop("total")
        shown = sorted(groups.items(), key=lambda kv: -kv[1])
        code = FRONTENDS[name.split(" ")[0]].replace("check_config(build_parser().parse_args(['--model', "
                                                     "'scripted:x.json'])); ", "check_config(...); ")
        lines += ["", f"What the {name}'s first screen imports (`python -X importtime -c \"{code}\"`, the modules' "
                  f"own time summed by package, median of {runs} runs): {total:.0f} ms in all; "
                  + ", ".join(f"{k} {v:.0f}" for k, v in shown if v >= 1) + " ms."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 runs each (5 launches) and write the section")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--coder", type=Path, help="path of the coder script (default: the installed one)")
    parser.add_argument("--against", type=Path, help="a second coder script, measured in the same runs")
    parser.add_argument("--no-interactive", action="store_true", help="only --version and --help")
    parser.add_argument("--base", type=Path, help="another source tree whose app and --plain launch in the same runs")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, help="write the section here (--quick: benchmarks/sections/startup.md)")
    args = parser.parse_args()
    runs = args.runs or (10 if args.quick else 40)
    launches = max(runs // 2, 3)
    coder = args.coder or find_coder()
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "coder --version": [str(coder), "--version"],
        "coder --help": [str(coder), "--help"],
    }
    if args.against:
        cases["against --version"] = [str(args.against), "--version"]
        cases["against --help"] = [str(args.against), "--help"]
    load_before = os.getloadavg()[0]
    results = measure(cases, runs)
    frontends: dict[str, list[tuple[float, ...]]] = {}
    if not args.no_interactive:
        if shutil.which("tmux") is None:
            sys.exit("startup.py: tmux is required for the launches (apt-get install tmux), or --no-interactive")
        frontends = dict(interactive(launches, args.base))
    trees = {"": ROOT, **({" (base)": args.base} if args.base else {})}
    breakdown = {name + suffix: import_breakdown(code, launches, tree) for name, code in FRONTENDS.items()
                 for suffix, tree in trees.items()}
    if args.json:
        print(json.dumps({"commands": {k: {"median_ms": round(v[0], 1), "min_ms": round(v[1], 1),
                                           "peak_rss_mib": round(v[2], 1)} for k, v in results.items()},
                          "launches": frontends, "imports_ms": breakdown}))
        return 0
    text = report(runs, results, frontends, breakdown, (load_before, os.getloadavg()[0]))
    print(text)
    out = args.out or (ROOT / "benchmarks" / "sections" / "startup.md" if args.quick else None)
    if out is not None:
        out.write_text(text)
    overhead = results["coder --version"][0] - results["python -c pass"][0]
    print(f"coder --version over python -c pass: {overhead:+.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
