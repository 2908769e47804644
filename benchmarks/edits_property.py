"""Issue 17's property, counted instead of asserted: random real-shaped files and edits with the mistakes models
make (tests/edit/edit_mistakes.py, drawn by the strategies of tests/edit/test_edit_property_mistakes.py), run
through `Editor.str_replace` on a real file; each draw is applied exactly, refused, or wrong (the goal is zero).

The test asserts on a bounded, derandomized set of draws in CI; this runs fresh random draws in bulk and keeps
going after a wrong one, printing the first few. `python benchmarks/edits_property.py --examples 2000 --runs 3`
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "edit")]

import test_edit_property_mistakes as prop  # noqa: E402
from edit_mistakes import KINDS  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def run(examples: int) -> dict:
    counts = {"applied": 0, "refused": 0, "skip": 0, "wrong": 0}
    wrong: list[str] = []

    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=prop.edit(), kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=4, unique=True),
           data=st.data(), crlf=st.booleans(), bom=st.booleans())
    def probe(case, kinds, data, crlf, bom) -> None:  # type: ignore[no-untyped-def]
        try:
            counts[prop.check(case, kinds, data.draw, crlf, bom)] += 1
        except AssertionError as exc:
            counts["wrong"] += 1
            if len(wrong) < 3:
                wrong.append(str(exc)[:2000])

    probe()
    return {"counts": counts, "wrong_examples": wrong}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3, help="independent random runs")
    args = ap.parse_args()
    total = 0
    for r in range(args.runs):
        started = time.time()
        out = run(args.examples)
        total += out["counts"]["wrong"]
        print(json.dumps({"run": r, "seconds": round(time.time() - started), **out}))
    return 1 if total else 0


if __name__ == "__main__":
    raise SystemExit(main())
