"""Stuck detector on real agent runs (issue 22): where would it nudge, where would it stop, what would a stop
save, and would it have stopped a run that ended resolved?

Every trajectory under the shared data's `trajectories/` (mini-swe-agent deepseek runs with known outcomes,
SWE-agent demonstrations and test runs, two SWE-agent request logs) is converted by coder.stuck.replay into our
events and fed, step by step, to the same StuckGuard a headless session uses (mode "stop"). Reported per run
and in total, for the runs thresholds.json was tuned on and for the held-out rest separately:
- the highest count each pattern reached (the margin to the thresholds);
- nudges and the stop (step, pattern); the steps and tokens after the stop (what it would have saved);
- resolved runs stopped (the number that must be 0) and nudged.
`--tune` also prints the thresholds the tuning rule gives on the tuning runs (docs/decisions/22-knowing-when-stuck.md).

Usage: python benchmarks/stuck.py [--quick] [--data DIR] [--out FILE] [--tune]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from coder.stuck.detector import DEFAULT_THRESHOLDS, PATTERNS, Detector, load_thresholds  # noqa: E402
from coder.stuck.guard import StuckGuard  # noqa: E402
from coder.stuck.replay import Run, load_runs  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "trajectories"
#: the prior thresholds (before looking at data): OpenHands stops after 3-4 identical action/observation pairs
PRIOR = {"repeat": (3, 2), "same_error": (3, 2), "ping_pong": (2, 1), "no_progress": (30, 10), "same_text": (3, 2)}


@dataclass
class Result:
    run: Run
    tuned: bool
    peaks: dict[str, int]
    nudges: list[tuple[int, str]] = field(default_factory=list)
    stop: tuple[int, str] | None = None

    @property
    def outcome(self) -> str:
        return {True: "resolved", False: "unresolved", None: "unknown"}[self.run.resolved]

    @property
    def steps_saved(self) -> int:
        return len(self.run.steps) - self.stop[0] if self.stop else 0

    @property
    def tokens_saved(self) -> int:
        return sum(s.tokens for s in self.run.steps[self.stop[0]:]) if self.stop else 0


def peaks(run: Run) -> dict[str, int]:
    """The highest count each pattern reached over the run (every threshold at 1, nothing escalated)."""
    t = load_thresholds()
    for p in PATTERNS:
        t.patterns[p]["nudge_at"] = 1
    detector, top = Detector(t), dict.fromkeys(PATTERNS, 0)
    for step in run.steps:
        for event in step.events:
            detector.observe(event)
        for d in detector.end_step():
            top[d.pattern] = max(top[d.pattern], d.strength)
    return top


def replay(run: Run, tuned: bool) -> Result:
    guard = StuckGuard(load_thresholds(), mode="stop")
    result = Result(run, tuned, peaks(run))
    for number, step in enumerate(run.steps, 1):
        for event in step.events:
            guard.observe(event)
        verdict = guard.after_step()
        for e in verdict.events:
            result.nudges.append((number, e.pattern)) if e.action == "nudge" else None
        if verdict.stop:
            result.stop = (number, next(e.pattern for e in verdict.events if e.action == "stop"))
            break
    return result


def tune(results: list[Result], nudges: int) -> dict[str, tuple[int, int, int]]:
    """The rule: nudge_at above the highest count of any resolved tuning run (never below the prior), and the
    stop level (nudge_at + nudges x again_after) at least twice that count. -> pattern: (max, nudge_at, again)"""
    out = {}
    for p in PATTERNS:
        top = max([r.peaks[p] for r in results if r.tuned and r.run.resolved] + [0])
        nudge_at = max(PRIOR[p][0], top + 1)
        again = max(PRIOR[p][1], math.ceil((2 * top - nudge_at) / max(nudges, 1)))
        out[p] = (top, nudge_at, again)
    return out


def markdown(results: list[Result], command: str, seconds: float, data: Path) -> str:
    t = load_thresholds()
    lines = ["## Stuck detection on real runs (issue 22)", "",
             f"Command: `{command}`  ", f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  ",
             f"Data: {len(results)} runs from `{data.name}/` of the shared data "
             f"({sum(r.run.resolved is True for r in results)} resolved, "
             f"{sum(r.run.resolved is False for r in results)} unresolved, "
             f"{sum(r.run.resolved is None for r in results)} with no known outcome); replayed in {seconds:.1f} s  ",
             f"Thresholds: `coder/stuck/thresholds.json`, tuned on the {sum(r.tuned for r in results)} runs marked "
             f"T only; a headless run stops after {t.nudges_before_stop} nudges that did not help.", ""]
    lines += ["| split | runs | resolved stopped | resolved nudged | unresolved stopped | unknown-outcome stopped "
              "| nudges | steps saved | tokens saved |", "|---|---|---|---|---|---|---|---|---|"]
    for name, rows in (("tuned on", [r for r in results if r.tuned]),
                       ("held out", [r for r in results if not r.tuned]), ("all", results)):
        def count(outcome: str, what: str, rows: list[Result] = rows) -> int:
            return sum(1 for r in rows if r.outcome == outcome and (r.stop if what == "stop" else r.nudges))
        lines.append(f"| {name} | {len(rows)} | **{count('resolved', 'stop')}** | {count('resolved', 'nudge')} "
                     f"| {count('unresolved', 'stop')} | {count('unknown', 'stop')} | "
                     f"{sum(len(r.nudges) for r in rows)} | {sum(r.steps_saved for r in rows)} | "
                     f"{sum(r.tokens_saved for r in rows):,} |")
    lines += ["", "Per run (peak: the highest count each pattern reached; nudge and stop: step and pattern):", "",
              "| run | T | outcome | steps | tokens | peak repeat / error / ping-pong / idle / text | nudges | stop "
              "| steps saved | tokens saved |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        peak = " / ".join(str(r.peaks[p]) for p in PATTERNS)
        nudged = ", ".join(f"{s}:{p}" for s, p in r.nudges) or "-"
        stop = f"{r.stop[0]}:{r.stop[1]}" if r.stop else "-"
        lines.append(f"| {short(r.run.name)} | {'T' if r.tuned else ''} | {r.outcome} | {len(r.run.steps)} | "
                     f"{r.run.tokens:,} | {peak} | {nudged} | {stop} | {r.steps_saved} | {r.tokens_saved:,} |")
    lines += ["", "Thresholds against the data (stop level = nudge_at + nudges_before_stop x again_after):", "",
              "| pattern | highest in a resolved run (tuned / held out) | nudge_at | again_after | stop level |",
              "|---|---|---|---|---|"]
    for p in PATTERNS:
        tuned = max([r.peaks[p] for r in results if r.tuned and r.run.resolved] + [0])
        held = max([r.peaks[p] for r in results if not r.tuned and r.run.resolved] + [0])
        nudge_at, again = int(t.of(p, "nudge_at")), int(t.of(p, "again_after"))
        lines.append(f"| {p} | {tuned} / {held} | {nudge_at} | {again} | {nudge_at + t.nudges_before_stop * again} |")
    lines += ["", "Tokens are the runs' own usage records (prompt + completion per model call; SWE-agent `.traj` "
              "files only have totals, spread evenly over their steps; mini-swe-agent's test run has none). "
              "A stop's savings are the steps and tokens after the step where it stops.", ""]
    return "\n".join(lines)


def short(name: str) -> str:
    base = name.split("/")[-1].replace(".traj.json", "").replace(".traj", "")
    parent = name.split("/")[-2] if "/" in name else ""
    if base.startswith("marshmallow-code__marshmallow-1867") and parent:
        base += " (" + parent.replace("replay__marshmallow-code__marshmallow-1867__", "")[:24] + "…)"
    return base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Stuck detector on real trajectories (see module docstring)")
    parser.add_argument("--quick", action="store_true", help="the mini-swe-agent runs only (the known outcomes)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="trajectories folder (default %(default)s)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "sections" / "stuck.md")
    parser.add_argument("--tune", action="store_true", help="print the thresholds the tuning rule gives")
    args = parser.parse_args(argv)
    if not (args.data / "index.jsonl").is_file():
        print(f"no trajectories at {args.data} (index.jsonl missing): give --data", file=sys.stderr)
        return 2
    started = time.monotonic()
    tuned_on = set(json.loads(DEFAULT_THRESHOLDS.read_text(encoding="utf-8"))["tuned_on"])
    runs = load_runs(args.data)
    if args.quick:
        runs = [r for r in runs if r.name.startswith("mini-swe-agent")]
    results = [replay(r, r.name in tuned_on) for r in runs]
    seconds = time.monotonic() - started
    command = "python benchmarks/stuck.py" + (" --quick" if args.quick else "")
    text = markdown(results, command, seconds, args.data)
    print(text)
    if args.tune:
        shipped = load_thresholds()
        for p, (top, nudge_at, again) in tune(results, shipped.nudges_before_stop).items():
            same = (nudge_at, again) == (int(shipped.of(p, "nudge_at")), int(shipped.of(p, "again_after")))
            print(f"tune {p}: highest in a resolved tuning run {top} -> nudge_at {nudge_at}, again_after {again}"
                  f" ({'as shipped' if same else 'differs from thresholds.json'})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    false_stops = sum(1 for r in results if r.stop and r.run.resolved)
    return 1 if false_stops else 0


if __name__ == "__main__":
    raise SystemExit(main())
