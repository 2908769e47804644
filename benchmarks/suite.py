"""The test suite's own figures: its time, and that it stays green on a loaded machine (issue 30, item 2).

Usage: python benchmarks/suite.py [--quick] [--runs N] [--burners K] [--best-of N] [-- PYTEST ARGS]

Runs the whole suite as `.ci/run` does (`python3 -m pytest -n 4`, the README's command, once) N times in a row,
with K CPU burners (a `while True: pass` each, at the suite's own priority) beside it, and writes what it saw: the
wall time of each run, the CPU the run's whole process tree used (user + sys, the figure load cannot inflate
much), the machine's load while it ran, and every failure by name. The proof the issue asks for is

    nice python benchmarks/suite.py --runs 5 --burners 2      # writes benchmarks/sections/suite_under_load.md

and the time is `python benchmarks/suite.py --quick` (one run, no burners; `--best-of 3` repeats it and keeps the
fastest, the nearest a shared machine gets to a quiet one), which writes benchmarks/sections/suite.md. Then
`python benchmarks/assemble_results.py`. Exit status: 0 when every run passed.

A selection after `--` (pytest's own arguments: paths, -k, -m) tries the script on part of the suite; its
figures are printed, never written to a section, which is for the whole suite only:

    python benchmarks/suite.py --runs 2 --burners 1 -- tests/test_suite_tiers.py -k tier
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ROOT / "benchmarks" / "sections"
BURNER = "while True: pass"


@dataclass
class Run:
    number: int
    wall: float
    cpu: float
    exit_code: int
    summary: str
    #: the suite's own line: each tier's tests and test time, summed over the workers (tests/suite_tiers.py)
    tiers: str = ""
    load: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def green(self) -> bool:
        return self.exit_code == 0

    @property
    def mean_load(self) -> float:
        return sum(self.load) / len(self.load) if self.load else 0.0


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sample_load(stop: threading.Event, into: list[float]) -> None:
    """The 1-minute load average every 15 s while a run goes on (other users of the machine included)."""
    while True:
        into.append(os.getloadavg()[0])
        if stop.wait(15):
            return


#: what .ci/run runs after install.sh: the README's test command, once (the context gate is one of its tests)
CI_STEPS: list[list[str]] = [[]]


def run_suite(number: int, pytest_args: list[str], log_dir: Path, report: list[str]) -> Run:
    log = log_dir / f"run-{number}.log"
    load: list[float] = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample_load, args=(stop, load), daemon=True)
    cpu_before = children_cpu()
    started = time.monotonic()
    sampler.start()
    returncode = 0
    with log.open("w") as out:
        for step in CI_STEPS if not pytest_args else [[]]:
            out.flush()
            proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "4", "-p", "no:cacheprovider", "-q", *step,
                                   *pytest_args, *report], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL)
            if proc.returncode:  # .ci/run stops there too (set -e)
                returncode = proc.returncode
                break
    wall = time.monotonic() - started
    stop.set()
    sampler.join()
    text = log.read_text(errors="replace")
    finals = [line.strip("= ") for line in text.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    failures = re.findall(r"^(?:FAILED|ERROR) (\S+)", text, re.M)
    tiers = re.findall(r"^tiers: (.*?) \(test time", text, re.M)
    return Run(number, wall, children_cpu() - cpu_before, returncode, " + ".join(finals) or "(no summary)",
               "; ".join(tiers), load, failures)


def start_burners(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(count)]


def git_head() -> str:
    out = subprocess.run(["git", "log", "-1", "--format=%h %s"], cwd=ROOT, capture_output=True, text=True).stdout
    return out.strip()[:90]


def section(runs: list[Run], burners: int, command: str, best_of: int) -> str:
    title = "Test suite: green under load" if burners else "Test suite: time"
    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    green = sum(r.green for r in runs)
    lines = [f"## {title}", "",
             f"Command: `{command}` (from the repository root; each run is `.ci/run`'s test command, "
             "the whole suite in one pytest run).",
             f"Date {date}; commit {git_head()}; {os.cpu_count()} cores, Python {platform.python_version()}; "
             f"{burners} CPU burner(s) beside the suite. Load is the machine's 1-minute load average sampled "
             "every 15 s during the run (other engineers' work included); CPU is user + sys of the run's whole "
             "process tree.", ""]
    if burners:
        lines += [f"**{green} of {len(runs)} runs green in a row.**" if green == len(runs)
                  else f"**{green} of {len(runs)} runs green.**", ""]
    else:
        best = min(runs, key=lambda r: r.wall)
        lines += [f"**{best.wall / 60:.1f} min** wall (best of {best_of}), {best.cpu / 60:.1f} CPU-min; "
                  f"on 2 cores with nothing else running the floor is CPU / 2 = {best.cpu / 120:.1f} min.", ""]
    lines += ["| run | result | wall | CPU | load (mean, max) | summary |", "|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r.number} | {'green' if r.green else 'FAILED'} | {r.wall / 60:.1f} min | "
                     f"{r.cpu / 60:.1f} min | {r.mean_load:.1f}, {max(r.load, default=0):.1f} | {r.summary} |")
    if runs[-1].tiers:
        lines += ["", f"Tiers (run {runs[-1].number}; test time summed over the two workers): {runs[-1].tiers}."]
    failed = [(r.number, f) for r in runs for f in r.failures]
    if failed:
        lines += ["", "Failures:"] + [f"- run {n}: `{f}`" for n, f in failed]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one run, no burners (the default)")
    parser.add_argument("--runs", type=int, default=1, help="runs in a row (default 1)")
    parser.add_argument("--burners", type=int, default=0, help="CPU burners beside the suite (default 0)")
    parser.add_argument("--best-of", type=int, default=1, help="without burners: repeat, keep the fastest")
    parser.add_argument("--no-section", action="store_true",
                        help="print only; do not write the section (a selection never does)")
    parser.add_argument("--junitxml", metavar="FILE",
                        help="also write each test's time and tier (pytest's JUnit XML; run N writes FILE.N)")
    parser.add_argument("pytest_args", nargs="*", help="pytest arguments after --: a selection (paths, -k, -m)")
    args = parser.parse_args()
    runs_wanted = args.runs if args.burners else max(args.runs, args.best_of)
    command = ("nice " if os.nice(0) > 0 else "") + "python benchmarks/suite.py " + " ".join(
        [*(["--runs", str(args.runs)] if args.runs != 1 else []),
         *(["--burners", str(args.burners)] if args.burners else []),
         *(["--best-of", str(args.best_of)] if args.best_of != 1 else []),
         *(["--", *args.pytest_args] if args.pytest_args else [])]).strip()
    log_dir = Path(tempfile.mkdtemp(prefix="coder-suite-bench-"))
    burners = start_burners(args.burners)
    runs: list[Run] = []
    try:
        for number in range(1, runs_wanted + 1):
            report = [f"--junitxml={args.junitxml}.{number}"] if args.junitxml else []
            run = run_suite(number, args.pytest_args, log_dir, report)
            runs.append(run)
            print(f"run {number}: {'green' if run.green else 'FAILED'} in {run.wall / 60:.1f} min "
                  f"(CPU {run.cpu / 60:.1f} min, load {run.mean_load:.1f}): {run.summary}", flush=True)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    text = section(runs, args.burners, command, runs_wanted)
    print(text)
    print(f"logs: {log_dir}")
    if not args.no_section and not args.pytest_args:
        name = "suite_under_load" if args.burners else "suite"
        (SECTIONS / f"{name}.md").write_text(text, encoding="utf-8")
    return 0 if all(r.green for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
