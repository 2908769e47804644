"""Interleaved A/B of the batch run phase: this coder, another coder (`--before SRC`, e.g. an earlier commit's
export) and mini-swe-agent, in turn, for some rounds, 1 worker, on the instance sets of benchmarks/batch.py.

    python benchmarks/batch_ab.py --before /tmp/base --instances 20 --rounds 3

benchmarks/batch.py runs its rows one after another, minutes apart; on a machine shared with other work the load
moves in between. Taking turns round by round puts every tool under the same load, and the medians compare them.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import batch as bench  # noqa: E402 - benchmarks/batch.py, next to this file


def run_set(name: str, args: argparse.Namespace) -> dict[str, list[int]]:
    rates: dict[str, list[int]] = {"after": [], "before": [], "mini": []}
    with tempfile.TemporaryDirectory(prefix=f"coder-bench-ab-{name}-") as tmp:
        root = Path(tmp)
        fx = bench.make_instances(root, args.instances, ballast=name == "mid")
        envs = {"after": bench.coder_env(bench.ROOT), "before": bench.coder_env(args.before.resolve())}
        bench.warm_up(fx, root, envs["after"])
        for turn in range(args.rounds):
            for tool in rates:
                if tool == "mini":
                    shutil.rmtree(root / "mini-run-w1", ignore_errors=True)  # it skips instances it has done
                    row = bench.bench_mini(fx, root, 1, args.peer_venv)
                else:
                    shutil.rmtree(root / "coder-run-w1", ignore_errors=True)  # so does coder (resume)
                    row = bench.bench_coder(fx, root, 1, envs[tool], with_env=False,
                                            no_env_flag=bench.has_flag(envs[tool], "--no-env", root),
                                            evaluate=False)
                rates[tool].append(row["run_per_hour"])
                print(f"{name} round {turn + 1} {tool}: {row['run_s']} s, {row['run_per_hour']:,}/h", flush=True)
    return rates


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the other coder's source tree")
    ap.add_argument("--instances", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sets", default="tiny,mid")
    ap.add_argument("--peer-venv", type=Path, default=Path("/work/peers/mini-swe-agent"))
    args = ap.parse_args()
    lines = ["| set | before | after | mini-swe-agent |", "|---|---:|---:|---:|"]
    for name in args.sets.split(","):
        rates = run_set(name.strip(), args)
        cells = [f"{statistics.median(v):,.0f} ({' '.join(f'{x:,}' for x in v)})" for v in rates.values()]
        lines.append(f"| {name} | {cells[1]} | {cells[0]} | {cells[2]} |")
    print("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
