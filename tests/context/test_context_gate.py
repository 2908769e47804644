"""The context gate (issues 33 and 45), in the suite: the quick set (the three trajectories committed under
benchmarks/data/context_quick, so it runs in a clone of the repository alone) replayed through real sessions of
this checkout must not cost more than 3% over the figure recorded in benchmarks/context_gate.json, nor keep less
of the facts the model goes on to use (recall in the request, one read_output away, steps acting on a lost fact).
The replay is deterministic (no model, no network), so a fall is a change of coder's, not noise."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "benchmarks" / "data" / "context_quick"
GATE = ROOT / "benchmarks" / "context_gate.json"


def test_the_gate_file_records_cost_and_recall() -> None:
    recorded = json.loads(GATE.read_text(encoding="utf-8"))
    missing = {"ours_cost_usd", "cost_ratio", "recall", "recall_read", "lost_step_share", "stand_in"} - set(recorded)
    assert not missing, f"{GATE} lacks {sorted(missing)}: run python3 benchmarks/context.py --quick --record"
    assert len(list(QUICK.glob("*.traj.json"))) == 3, "the quick set is committed beside the gate"


@pytest.mark.slow  # three sessions of 40-100 requests each, replayed through real coder processes
def test_the_quick_set_holds_the_recorded_cost_and_recall() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "context.py"), "--quick", str(QUICK)],
                          capture_output=True, text=True, cwd=ROOT, timeout=840, check=False)
    line = (done.stdout.strip().splitlines() or [""])[-1]
    assert done.returncode == 0 and line.startswith("gate: ") and line.endswith("PASS"), \
        f"{line}\n{done.stderr[-3000:]}"
