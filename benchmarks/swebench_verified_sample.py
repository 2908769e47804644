"""The SWE-bench Verified instances issue 31 measures on, picked once, before any tuning, and kept.

Candidates: Verified test instances that are not in Lite's test split (nobody tuned on them) whose repository
can be brought here as a mirror (every one of the 12 but django, scikit-learn and matplotlib, whose snapshots
are over the fetch tool's 500 MiB). Sorted by id, shuffled with `random.Random(SEED)`, then taken round-robin
over the repositories in that shuffled order, so that every repository is in the sample (flask has one
candidate, seaborn two) and none fills it alone. The list is written to benchmarks/data/ and never re-picked:
rerunning this script must reproduce it (`--check`).

    python benchmarks/swebench_verified_sample.py --dataset verified.jsonl --lite swebench_lite_test.jsonl --write
    python benchmarks/swebench_verified_sample.py --dataset verified.jsonl --lite swebench_lite_test.jsonl --check
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import OrderedDict
from pathlib import Path

SEED = 31  # the number
SIZE = 48
REPOS_HERE = ("astropy/astropy", "mwaskom/seaborn", "pallets/flask", "psf/requests", "pydata/xarray",
              "pylint-dev/pylint", "pytest-dev/pytest", "sphinx-doc/sphinx", "sympy/sympy")
OUT = Path(__file__).resolve().parent / "data" / "swebench_verified_sample.json"


def _ids(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def pick(verified: list[dict], lite_ids: set[str]) -> list[str]:
    candidates = sorted((r for r in verified if r["repo"] in REPOS_HERE and r["instance_id"] not in lite_ids),
                        key=lambda r: r["instance_id"])
    random.Random(SEED).shuffle(candidates)
    queues: OrderedDict[str, list[str]] = OrderedDict()
    for row in candidates:
        queues.setdefault(row["repo"], []).append(row["instance_id"])
    chosen: list[str] = []
    while len(chosen) < SIZE and any(queues.values()):
        for queue in queues.values():
            if queue and len(chosen) < SIZE:
                chosen.append(queue.pop(0))
    return sorted(chosen)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", type=Path, required=True, help="SWE-bench Verified's test split as JSONL")
    ap.add_argument("--lite", type=Path, required=True, help="SWE-bench Lite's test split as JSONL")
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(OUT.parents[2])}")
    ap.add_argument("--check", action="store_true", help="fail unless the kept list is what this picks")
    args = ap.parse_args()
    verified = _ids(args.dataset)
    chosen = pick(verified, {r["instance_id"] for r in _ids(args.lite)})
    if args.check:
        kept = json.loads(OUT.read_text(encoding="utf-8"))["instances"]
        print("the kept list is reproduced" if kept == chosen else "the kept list differs from this pick")
        return 0 if kept == chosen else 1
    record = {"_about": "SWE-bench Verified instances not in Lite, of the repositories fetchable here; picked by "
                        "benchmarks/swebench_verified_sample.py (seed 31, round-robin over repositories) before any "
                        "tuning on Verified, and kept.",
              "seed": SEED, "size": SIZE, "repositories": list(REPOS_HERE), "instances": chosen}
    if args.write:
        OUT.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print("\n".join(chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
