"""Startup time of `coder --version` and `coder --help` against a bare `python -c pass` (median of repeated runs).

Usage: python benchmarks/startup.py [--quick] [--runs N] [--coder PATH] [--json]

The installed console script is measured directly (not a pyenv/asdf shim in front of it), with the same Python
interpreter that runs it, so the difference is coder's own import cost. Goal: under 60 ms for `coder --version`.
"""

from __future__ import annotations

import argparse
import json
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


def median_ms(argv: list[str], runs: int) -> tuple[float, float]:
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # warm the page cache
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), min(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 runs each instead of 40")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--coder", type=Path, help="path of the coder script (default: the installed one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = args.runs or (10 if args.quick else 40)
    coder = args.coder or find_coder()
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "coder --version": [str(coder), "--version"],
        "coder --help": [str(coder), "--help"],
    }
    results = {name: median_ms(argv, runs) for name, argv in cases.items()}
    if args.json:
        print(json.dumps({k: {"median_ms": round(v[0], 1), "min_ms": round(v[1], 1)} for k, v in results.items()}))
    else:
        print(f"runs per case: {runs}; coder script: {coder}")
        print(f"{'command':<18} {'median ms':>10} {'min ms':>8}")
        for name, (med, low) in results.items():
            print(f"{name:<18} {med:>10.1f} {low:>8.1f}")
        overhead = results["coder --version"][0] - results["python -c pass"][0]
        print(f"coder --version over python -c pass: {overhead:+.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
