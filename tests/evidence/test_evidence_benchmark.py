"""benchmarks/evidence.py in a clone alone (no shared data, no mirror): it replays the committed runs of
tests/evidence/data and writes its section, with the probe measured beside its peers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_benchmark_on_the_committed_runs(tmp_path: Path) -> None:
    out = tmp_path / "evidence.md"
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "evidence.py"), "--quick", "--data",
                           str(tmp_path / "no-data"), "--mirror", str(tmp_path / "no-mirror"), "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "3 labelled deepseek-chat runs on SWE-bench Lite (the committed fixture: no shared data here)" in text
    assert "Command: `python benchmarks/evidence.py --quick`" in text and "machine: " in text
    # the fixture: one verified run (resolved), one unverified with a claim, one failed
    assert "| all | as shipped | 3 |" in text and "`git status --porcelain`" in text
