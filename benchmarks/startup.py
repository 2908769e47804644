"""Startup time and peak memory of `coder --version` and `coder --help` against a bare `python -c pass` (median of
repeated runs).

Usage: python benchmarks/startup.py [--quick] [--runs N] [--coder PATH] [--against PATH] [--json]

`--against PATH` measures a second coder script in the same runs, interleaved with the first, so a loaded machine
weighs on both alike (a change against its base: a script that puts the other checkout first on sys.path).

The installed console script is measured directly (not a pyenv/asdf shim in front of it), with the same Python
interpreter that runs it, so the difference is coder's own import cost. Goal: under 60 ms for `coder --version`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 runs each instead of 40")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--coder", type=Path, help="path of the coder script (default: the installed one)")
    parser.add_argument("--against", type=Path, help="a second coder script, measured in the same runs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = args.runs or (10 if args.quick else 40)
    coder = args.coder or find_coder()
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "coder --version": [str(coder), "--version"],
        "coder --help": [str(coder), "--help"],
    }
    if args.against:
        cases["against --version"] = [str(args.against), "--version"]
        cases["against --help"] = [str(args.against), "--help"]
    results = measure(cases, runs)
    if args.json:
        print(json.dumps({k: {"median_ms": round(v[0], 1), "min_ms": round(v[1], 1), "peak_rss_mib": round(v[2], 1)}
                          for k, v in results.items()}))
    else:
        print(f"runs per case: {runs}; coder script: {coder}" + (f"; against: {args.against}" if args.against else ""))
        print(f"{'command':<18} {'median ms':>10} {'min ms':>8} {'peak RSS MiB':>13}")
        for name, (med, low, rss) in results.items():
            print(f"{name:<18} {med:>10.1f} {low:>8.1f} {rss:>13.1f}")
        overhead = results["coder --version"][0] - results["python -c pass"][0]
        print(f"coder --version over python -c pass: {overhead:+.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
