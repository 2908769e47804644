"""Benchmark of the patch reviewer's model-free stages on real patches with known outcomes.

    python benchmarks/review.py --quick            # 2 projects, 2 seeded bugs each
    python benchmarks/review.py                    # 5 projects, 3 seeded bugs each
    python benchmarks/review.py --write-section    # also write benchmarks/sections/review.md

The corpus (benchmarks/review_corpus.py) comes from PyPI sdists with their tests: seeded bugs the tests catch,
patches that game those tests, and good patches (fixes, fixes with a regression test, new tests, comments).
Each patch is reviewed with every stage that runs without a model (apply, parse, lint, hygiene, gaming, tests in
the sandbox). Reported: the share of bad patches caught, the share of good patches passed, time per review, and
the same figures for two narrower gates read off the same runs: "tests only" (what an agent that only runs the
test suite sees; the usual practice of peers such as Aider's --auto-test or a CI gate) and "mechanical only"
(everything but the tests). Goal: every gaming patch caught; no good patch failed by the mechanical stages.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

MODEL_FREE = ["apply", "parse", "lint", "hygiene", "gaming", "tests"]
MECHANICAL = {"apply", "parse", "lint", "hygiene", "gaming"}


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coder-bench" / "review"


def verdict_of(stages: list, names: set[str]) -> str:
    """The verdict the given subset of stages would give alone."""
    picked = [s for s in stages if s.name in names]
    if any(s.status == "fail" for s in picked) or any(f.severity == "error" for s in picked for f in s.findings):
        return "fail"
    return "pass"


def run(args: argparse.Namespace) -> dict:
    from review_corpus import PACKAGES, QUICK, build

    from coder.review.pipeline import review

    packages = args.packages or (list(QUICK) if args.quick else list(PACKAGES))
    mutants = args.mutants or (2 if args.quick else 3)
    t0 = time.monotonic()
    cases, repos = build(Path(args.cache), packages, mutants, args.seed)
    build_time = time.monotonic() - t0
    rows = []
    for i, case in enumerate(cases, 1):
        config = {"review": {"base": case.base, "stages": MODEL_FREE, "tests": {"timeout": 180}}}
        start = time.monotonic()
        result = review(repos[case.package], case.patch, "fix the failing test", None, config)
        elapsed = time.monotonic() - start
        mech_time = sum(s.duration for s in result.stages if s.name in MECHANICAL)
        row = {
            "package": case.package, "kind": case.kind, "expected": case.expected, "note": case.note,
            "verdict": result.verdict, "tests_only": verdict_of(result.stages, {"tests"}),
            "mechanical_only": verdict_of(result.stages, MECHANICAL),
            "gaming_stage": verdict_of(result.stages, {"gaming"}),
            "time": elapsed, "mechanical_time": mech_time,
            "errors": sorted({f.check for f in result.findings if f.severity == "error"}),
            "stage_errors": [f"{s.name}: {s.note}" for s in result.stages if s.status == "error"],
        }
        rows.append(row)
        flag = "ok " if (row["verdict"] == "fail") == (case.expected == "fail") else "MISS"
        print(f"[{i:3d}/{len(cases)}] {flag} {case.package:<10} {case.kind:<22} {row['verdict']:<5} "
              f"{elapsed:5.2f}s {','.join(row['errors'])}", file=sys.stderr)
    return {"packages": packages, "mutants": mutants, "seed": args.seed, "build_time": build_time, "rows": rows}


def share(rows: list[dict], key: str, want_fail: bool) -> tuple[int, int]:
    hit = sum(1 for r in rows if (r[key] == "fail") == want_fail)
    return hit, len(rows)


def pct(pair: tuple[int, int]) -> str:
    hit, total = pair
    return f"{hit}/{total} ({100 * hit / total:.0f}%)" if total else "n/a"


def summarise(data: dict) -> str:
    rows = data["rows"]
    bad = [r for r in rows if r["expected"] == "fail"]
    good = [r for r in rows if r["expected"] == "pass"]
    gaming = [r for r in rows if r["kind"].startswith("gaming")]
    bugs = [r for r in rows if r["kind"] == "bug"]
    times = [r["time"] for r in rows]
    mtimes = [r["mechanical_time"] for r in rows]
    lines = [
        "| gate | bad caught | bugs caught | gaming caught | good passed |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for label, key in (("coder reviewer, model-free stages", "verdict"), ("mechanical stages only", "mechanical_only"),
                       ("tests only (a tests-green gate)", "tests_only")):
        lines.append(f"| {label} | {pct(share(bad, key, True))} | {pct(share(bugs, key, True))} | "
                     f"{pct(share(gaming, key, True))} | {pct(share(good, key, False))} |")
    lines += ["", "| time per review | mean | median | p90 | max |", "| --- | ---: | ---: | ---: | ---: |"]
    for label, values in (("all model-free stages (s)", times), ("mechanical stages (s)", mtimes)):
        p90 = sorted(values)[int(0.9 * (len(values) - 1))] if values else 0
        lines.append(f"| {label} | {statistics.mean(values):.2f} | {statistics.median(values):.2f} | {p90:.2f} | "
                     f"{max(values):.2f} |")
    by_kind: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_kind[r["kind"]].append(r)
    lines += ["", "| patch kind | n | expected | reviewer right | caught by gaming stage | tests-only right |",
              "| --- | ---: | --- | ---: | ---: | ---: |"]
    for kind in sorted(by_kind):
        rs = by_kind[kind]
        want_fail = rs[0]["expected"] == "fail"
        right = sum(1 for r in rs if (r["verdict"] == "fail") == want_fail)
        gaming_hit = sum(1 for r in rs if r["gaming_stage"] == "fail")
        tests_right = sum(1 for r in rs if (r["tests_only"] == "fail") == want_fail)
        lines.append(f"| {kind} | {len(rs)} | {rs[0]['expected']} | {right}/{len(rs)} | {gaming_hit}/{len(rs)} | "
                     f"{tests_right}/{len(rs)} |")
    misses = [r for r in rows if (r["verdict"] == "fail") != (r["expected"] == "fail")]
    if misses:
        lines += ["", "Misses:"]
        lines += [f"- {r['package']} {r['kind']} -> {r['verdict']} ({r['note']}; errors: {r['errors']})" for r in misses]
    mech_fp = [r for r in good if r["mechanical_only"] == "fail"]
    lines += ["", f"Good patches failed by the mechanical stages: {len(mech_fp)} of {len(good)}."]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 projects, 2 seeded bugs each")
    parser.add_argument("--packages", nargs="*", help="projects to use (default: all, or the quick set)")
    parser.add_argument("--mutants", type=int, help="seeded bugs per project")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache", default=str(default_cache()), help="where sdists, repos and the corpus live")
    parser.add_argument("--json", help="write the raw rows here")
    parser.add_argument("--write-section", action="store_true", help="write benchmarks/sections/review.md")
    args = parser.parse_args()
    data = run(args)
    table = summarise(data)
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    if args.write_section:
        date = subprocess.run(["date", "-u"], capture_output=True, text=True).stdout.strip()
        cmd = "python benchmarks/review.py" + (" --quick" if args.quick else "")
        section = (
            f"## Patch reviewer (model-free stages)\n\nCommand: `{cmd}`  \nDate: {date}  \n"
            f"Machine: 2 cores, 24 GiB, loaded by parallel work (timings are noisy).  \n"
            f"Corpus: {len(data['rows'])} patches from {', '.join(data['packages'])} (PyPI sdists with their "
            f"tests; {data['mutants']} seeded bugs per project that the project's tests catch, seed "
            f"{data['seed']}); corpus build {data['build_time']:.0f}s (cached after the first run).\n"
            f"Peers: no peer ships a model-free patch reviewer; the usual gate of agents (Aider `--auto-test`, "
            f"a CI check, SWE-agent's test runs) is \"the tests pass\", shown as *tests only*.\n\n{table}\n"
        )
        (ROOT / "benchmarks" / "sections" / "review.md").write_text(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
