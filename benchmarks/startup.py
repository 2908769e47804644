"""Start-up of coder against a bare `python -c pass`, measured in the same run (median of repeated runs):

- `coder --version` and `coder --help`: wall time and peak memory of the process (goal: `--version` under 60 ms);
- the app and `--plain`, launched in a real terminal (tmux), to their first screen and to "ready to type": a word
  typed the moment the first screen is up shows in the input, drawn by the frontend itself (goal, issue 47: under
  0.5 s on a quiet machine), then to the session open; the process's CPU seconds at "ready to type" (what a loaded
  machine does not stretch). The main case is a repository whose `.claude/settings.json` defines a hook and that
  is trusted (the trust check reads and fingerprints it at every start); beside it, the same repository untrusted,
  to the trust question on screen. Beside them, the same terminal running `python -c` that prints a line and
  waits (the floor of the terminal and the interpreter), and a bare Textual app with one input (the floor of the
  app's toolkit);
- what costs what: the stages before each frontend's first screen timed in one process (the flags, the
  configuration check, the frontend's imports), and `python -X importtime` of them, the modules' own times summed
  by package, median over the runs.

Usage: python benchmarks/startup.py [--quick] [--runs N] [--base CHECKOUT] [--json] [--out FILE]

Every launch runs a source tree's coder as `python -m coder` with the tree on PYTHONPATH and without the working
directory on sys.path (PYTHONSAFEPATH, as an installed `coder` script runs: the import guard of coder/host/imports.py
would otherwise see the repository as an import root and check every import). `--base CHECKOUT` measures another
tree (a checkout of main) in the same runs, interleaved with this one, so a loaded machine weighs on both alike.
`--quick` writes the section benchmarks/sections/startup.md.
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
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from tui import KEY_PROBE, ROOT, Pane, bench_env, cpu_seconds, make_repo

#: the stages of a frontend's launch, as `coder` runs them on a terminal (coder/cli/main.py): the flags and the
#: frontend's imports come before its first screen; the configuration check after it, as the session opens (issue 47)
_STAGES = """
import sys, time
marks = [time.perf_counter()]
from coder.cli.main import build_parser, check_config
from coder.host.audit import install
install()
args = build_parser().parse_args(['--model', 'scripted:x.json'])
marks.append(time.perf_counter())
FRONTEND
marks.append(time.perf_counter())
sys.stderr.write('-- after the first screen --\\n')
check_config(args)
marks.append(time.perf_counter())
print(*[round((b - a) * 1000, 1) for a, b in zip(marks, marks[1:])])
"""
STAGE_NAMES = ("flags", "frontend's imports", "configuration check")
FRONTENDS = {"app": "import coder.tui.app", "--plain": "import coder.repl.repl; import prompt_toolkit.shortcuts"}
#: a Textual app with one input and nothing else: the floor of the app's toolkit
TEXTUAL_FLOOR = """
from textual.app import App
from textual.widgets import Static, TextArea
class Floor(App):
    def compose(self):
        yield Static('floor ready')
        yield TextArea(id='input')
Floor().run()
"""


def tree_env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree), "PYTHONSAFEPATH": "1"}


def run_once(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int]:
    """Wall time in ms and peak resident memory in KiB of one run (the child's own rusage)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            cwd=tempfile.gettempdir())
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = (time.perf_counter() - start) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), argv)
    return elapsed, usage.ru_maxrss


Case = tuple[list[str], dict[str, str] | None]  # argv, environment


def measure(cases: dict[str, Case], runs: int) -> dict[str, tuple[float, float, float]]:
    """name -> (median ms, min ms, median peak RSS MiB); the cases take turns, run after run."""
    for argv, env in cases.values():
        run_once(argv, env)  # warm the page cache
    samples: dict[str, list[tuple[float, int]]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, (argv, env) in cases.items():
            samples[name].append(run_once(argv, env))
    return {name: (statistics.median(ms for ms, _ in got), min(ms for ms, _ in got),
                   statistics.median(rss for _, rss in got) / 1024) for name, got in samples.items()}


# ---- the interactive frontends in a real terminal -----------------------------------------------------------------
#: one launch: (first screen, ready to type, session open or question up, CPU seconds at ready to type)
Launch = tuple[float, float, float, float]
NAN = float("nan")


def launch(command: str, cwd: Path, env: dict[str, str], first, ready, then=None) -> Launch:
    """KEY_PROBE is typed the moment `first` holds of the screen; "ready to type" is when `ready` holds (the probe
    drawn by the program, not the terminal's own echo); then, if given, when `then` holds."""
    pane = Pane(command + "; sleep 60", cwd, env)
    try:
        t_first = pane.wait(first)
        pane.keys(KEY_PROBE, literal=True)
        t_ready = pane.wait(ready)
        try:
            cpu = cpu_seconds(pane.coder_pid())
        except RuntimeError:
            cpu = NAN  # the floors are not coder
        t_then = pane.wait(then) if then is not None else NAN
        return t_first, t_ready, t_then, cpu
    finally:
        pane.close()


def in_prompt(screen: str) -> bool:
    """--plain's prompt (`ask> `) holds the probe: prompt-toolkit read and drew it (the terminal's own echo, before
    the prompt is up, puts it on a line of its own)."""
    return any(re.search(rf"\w> {KEY_PROBE}", line) for line in screen.splitlines())


def floor_once(repo: Path, env: dict[str, str]) -> Launch:
    """`python -c` printing a line and waiting for one, in the same terminal."""
    code = "print('ready', flush=True); input()"
    return launch(f"{sys.executable} -c \"{code}\"", repo, env, lambda s: "ready" in s, lambda s: KEY_PROBE in s)


def textual_once(repo: Path, env: dict[str, str], script: Path) -> Launch:
    return launch(f"{sys.executable} {script}", repo, env, lambda s: "floor ready" in s, lambda s: KEY_PROBE in s)


def frontend_once(repo: Path, env: dict[str, str], script: Path, plain: bool, tree: Path, asks: bool) -> Launch:
    """One launch of the coder in `tree`: the trusted repository to the session open, or the untrusted one to the
    trust question (which takes the keys: "ready to type" is then the question on screen)."""
    cmd = (f"env PYTHONSAFEPATH=1 PYTHONPATH={tree} {sys.executable} -m coder --model scripted:{script} "
           "--permission-mode ask" + (" --plain" if plain else ""))
    first = (lambda s: "/help lists commands" in s) if plain else (lambda s: "Ask coder" in s or "trusted" in s)
    if asks:
        return launch(cmd, repo, env, first, lambda s: "This repository is not trusted" in s)
    if plain:
        return launch(cmd, repo, env, first, in_prompt, lambda s: "ask>" in s and "…>" not in s)
    return launch(cmd, repo, env, first, lambda s: KEY_PROBE in s, lambda s: "idle │" in s)


def repos(base: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """Two repositories whose `.claude/settings.json` defines a hook: the first trusted (`coder trust`), the other
    not (coder asks)."""
    made = []
    for name in ("trusted", "untrusted"):
        repo = make_repo(base / name)
        settings = repo / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "echo hook-ran >> hook.log"}]}]}}))
        made.append(repo)
    subprocess.run([sys.executable, "-m", "coder", "trust"], cwd=made[0], env={**env, **tree_env(ROOT)},
                   check=True, capture_output=True)
    return made[0], made[1]


def interactive(runs: int, base_tree: Path | None) -> dict[str, list[Launch]]:
    base = Path(tempfile.mkdtemp(prefix="startupbench-"))
    try:
        env = bench_env(base)
        trusted, untrusted = repos(base, env)
        script = base / "hello.json"
        script.write_text(json.dumps({"turns": [{"text": "hello"}]}))
        floor = base / "floor.py"
        floor.write_text(TEXTUAL_FLOOR)
        trees = {"": ROOT, **({" (base)": base_tree} if base_tree is not None else {})}
        for tree in trees.values():  # warm the page cache and the byte-code
            frontend_once(trusted, env, script, False, tree, False)
        rows: dict[str, list[Launch]] = defaultdict(list)
        for i in range(runs):
            rows["python -c (prints, waits)"].append(floor_once(trusted, env))
            rows["Textual, one input"].append(textual_once(trusted, env, floor))
            for suffix, tree in trees.items():
                for plain in (False, True):
                    name = ("--plain" if plain else "app") + suffix
                    rows[name].append(frontend_once(trusted, env, script, plain, tree, False))
                    rows[name + ", asks trust"].append(frontend_once(untrusted, env, script, plain, tree, True))
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


def stages(frontend: str, runs: int, tree: Path) -> tuple[dict[str, float], dict[str, float]]:
    """(stage -> median ms, package -> median ms of its modules' own import time, with "total"), over `runs` runs
    of the stages before the frontend's first screen (the import times from a run of its own under -X importtime)."""
    code = _STAGES.replace("FRONTEND", FRONTENDS[frontend])
    timed: dict[str, list[float]] = defaultdict(list)
    totals: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=tree_env(tree),
                             cwd=tempfile.gettempdir(), check=True).stdout
        for name, ms in zip(STAGE_NAMES, out.split(), strict=True):
            timed[name].append(float(ms))
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                             env=tree_env(tree), cwd=tempfile.gettempdir(), check=True).stderr
        groups: dict[str, float] = defaultdict(float)
        for line in err.split("-- after the first screen --")[0].splitlines():
            m = _ROW.match(line)
            if m:
                groups[group_of(m.group(4))] += int(m.group(1)) / 1000
                groups["total"] += int(m.group(1)) / 1000
        for name, ms in groups.items():
            totals[name].append(ms)
    return ({name: statistics.median(v) for name, v in timed.items()},
            {name: statistics.median(v + [0.0] * (runs - len(v))) for name, v in totals.items()})


# ---- the report -------------------------------------------------------------------------------------------------
def med(values: list[float]) -> float:
    values = [v for v in values if v == v]
    return statistics.median(values) if values else NAN


def cell(value: float, best: float | None = None) -> str:
    if value != value:
        return ""
    return f"{value:.2f}" + (f" ({best:.2f})" if best is not None and best == best else "")


def report(runs: int, results: dict[str, tuple[float, float, float]], frontends: dict[str, list[Launch]],
           costs: dict[str, tuple[dict[str, float], dict[str, float]]], load: tuple[float, float]) -> str:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = ["## Startup (issues 2 and 47)", "",
             f"Command: `python benchmarks/startup.py --quick` ({runs} runs each, interleaved) · {now} · 2 cores, "
             f"load average {load[0]:.1f} before, {load[1]:.1f} after · Python {sys.version.split()[0]}; each "
             "tree's coder as `python -m coder`, the working directory off sys.path (as the installed script).", "",
             "| command | median ms | min ms | peak RSS MiB |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| `{name}` | {m:.1f} | {low:.1f} | {rss:.1f} |" for name, (m, low, rss) in results.items()]
    if frontends:
        floor = med([r[1] for r in frontends["python -c (prints, waits)"]])
        lines += ["", "Launched in tmux (120x40), median (best) of the runs, in seconds. \"Ready to type\": a word "
                  "typed the moment the first screen is up shows in the input, drawn by the program (for a "
                  "repository that asks, the trust question is on screen); \"session open\": the status says idle "
                  "(the app) or the prompt shows the session's mode (`--plain`); CPU: the process's user and system "
                  "seconds at ready to type. The repository defines a hook in `.claude/settings.json` and is "
                  "trusted, or not (asks trust):", "",
                  "| launched | first screen | ready to type | over python -c | session open | CPU by then |",
                  "| --- | ---: | ---: | ---: | ---: | ---: |"]
        for name, rows in frontends.items():
            firsts, keys, opens, cpus = ([r[i] for r in rows] for i in range(4))
            lines.append(f"| {name} | {cell(med(firsts), min(firsts))} | {cell(med(keys), min(keys))} | "
                         f"{med(keys) - floor:+.2f} | {cell(med(opens))} | {cell(med(cpus))} |")
    for name, (timed, groups) in costs.items():
        total = groups.pop("total")
        shown = sorted(groups.items(), key=lambda kv: -kv[1])
        lines += ["", f"The {name}'s launch, timed in one process (median of {runs} runs): before its first screen, "
                  f"the flags {timed['flags']:.0f} ms and the frontend's imports {timed[STAGE_NAMES[1]]:.0f} ms; "
                  f"behind it, as the session opens, the configuration check {timed[STAGE_NAMES[2]]:.0f} ms (before "
                  "the first screen until issue 47). What comes before the first screen imports (`python -X "
                  f"importtime`, the modules' own time summed by package): {total:.0f} ms in all; "
                  + ", ".join(f"{k} {v:.0f}" for k, v in shown if v >= 1) + " ms."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 runs each (5 launches) and write the section")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--no-interactive", action="store_true", help="only --version and --help")
    parser.add_argument("--base", type=Path, help="another source tree (a checkout of main), measured in the same runs")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", type=Path, help="write the section here (--quick: benchmarks/sections/startup.md)")
    args = parser.parse_args()
    runs = args.runs or (10 if args.quick else 40)
    launches = max(runs // 2, 3)
    trees = {"": ROOT, **({" (base)": args.base.resolve()} if args.base else {})}
    cases: dict[str, Case] = {"python -c pass": ([sys.executable, "-c", "pass"], None)}
    for suffix, tree in trees.items():
        for flag in ("--version", "--help"):
            cases[f"coder {flag}{suffix}"] = ([sys.executable, "-m", "coder", flag], tree_env(tree))
    load_before = os.getloadavg()[0]
    results = measure(cases, runs)
    frontends: dict[str, list[Launch]] = {}
    if not args.no_interactive:
        if shutil.which("tmux") is None:
            sys.exit("startup.py: tmux is required for the launches (apt-get install tmux), or --no-interactive")
        frontends = dict(interactive(launches, args.base))
    costs = {name + suffix: stages(name, launches, tree) for name in FRONTENDS for suffix, tree in trees.items()}
    if args.json:
        print(json.dumps({"commands": {k: {"median_ms": round(v[0], 1), "min_ms": round(v[1], 1),
                                           "peak_rss_mib": round(v[2], 1)} for k, v in results.items()},
                          "launches": frontends, "stages": {k: v[0] for k, v in costs.items()},
                          "imports_ms": {k: v[1] for k, v in costs.items()}}))
        return 0
    text = report(runs, results, frontends, costs, (load_before, os.getloadavg()[0]))
    print(text)
    out = args.out or (ROOT / "benchmarks" / "sections" / "startup.md" if args.quick else None)
    if out is not None:
        out.write_text(text)
    overhead = results["coder --version"][0] - results["python -c pass"][0]
    print(f"coder --version over python -c pass: {overhead:+.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
