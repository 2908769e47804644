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

from coder.base import events as ev  # noqa: E402
from coder.stuck.detector import DEFAULT_THRESHOLDS, PATTERNS, Detector, load_thresholds  # noqa: E402
from coder.stuck.guard import StuckGuard  # noqa: E402
from coder.stuck.replay import ReplayStep, Run, load_runs  # noqa: E402
from coder.tools.registry import builtin_by_protocol  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "trajectories"
SHELL = builtin_by_protocol("bash_")
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


def _call(n: int, command: str, output: str, text: str, code: int = 0) -> ReplayStep:
    """One synthetic step of a bash-only agent: a sentence and one shell command with its output."""
    return ReplayStep([ev.AssistantMessage({"role": "assistant", "content": [{"type": "text", "text": text}]},
                                           "tool_use"),
                       ev.ToolCallFinished(f"s{n}", SHELL, {"command": command}, output, False, [], 0.0,
                                           {"exit_code": code})])


def issue_cases() -> list[tuple[Run, bool]]:
    """The issue's cases, as synthetic runs (labelled so in the report): (run, should it stop?)."""
    lines = [f"def f{i}(x):" if i % 3 == 0 else f"    return x + {i}" if i % 3 == 1 else "" for i in range(2100)]
    reading, read_again, cycle = [], [], []
    for k in range(70):  # `sed -n` ranges of 30 lines and a grep for a name, the same sentence each time
        start = 30 * k
        reading.append(_call(2 * k, f"sed -n '{start + 1},{start + 30}p' big.py", "\n".join(lines[start:start + 30]),
                             "Let me keep reading the file."))
        reading.append(_call(2 * k + 1, f"grep -n 'def f{start}(' big.py", f"{start + 1}:def f{start}(x):",
                             "Let me keep reading the file."))
    echoes = [_call(n, f"echo step {n}", f"step {n}", "Next step.") for n in range(2000)]
    tests = []  # the same test after each edit, its result changing: progress
    for n in range(40):
        tests.append(_call(2 * n, "python -m pytest -q tests/test_calc.py", f"{40 - n} failed, {n} passed in 0.2s",
                           "Running the tests.", 1))
        tests.append(_call(2 * n + 1, f"sed -i 's/a - b/a + b/' calc{n}.py", "", "Fixing the next one."))
    for n in range(60):  # controls: the same range read again and again; ten commands in a loop
        read_again.append(_call(n, "sed -n '1,30p' big.py", "\n".join(lines[:30]), f"Looking again, round {n}."))
        cycle.append(_call(n, f"cat notes{n % 10}.txt", f"note {n % 10}", f"Thinking, round {n}."))
    return [(Run("synthetic: reading a 2,100-line file by `sed -n` ranges and `grep`, 140 steps", reading), False),
            (Run("synthetic: 2,000 distinct `echo` calls", echoes), False),
            (Run("synthetic: the same test after each fix, its result changing, 80 steps", tests), False),
            (Run("synthetic control: the same 30 lines read 60 times", read_again), True),
            (Run("synthetic control: ten commands in a loop, their outputs all seen, 60 steps", cycle), True)]


def issue_table(cases: list[tuple[Run, bool]]) -> list[str]:
    lines = ["", "The issue's cases (synthetic runs built by `issue_cases`, not real trajectories; the same guard, "
             "mode stop):", "", "| run | steps | should stop | nudges | stop |", "|---|---|---|---|---|"]
    for run, should in cases:
        result = replay(run, False)
        nudged = ", ".join(f"{s}:{p}" for s, p in result.nudges) or "-"
        stop = f"{result.stop[0]}:{result.stop[1]}" if result.stop else "-"
        verdict = "" if bool(result.stop) == should else " **(wrong)**"
        lines.append(f"| {run.name} | {len(run.steps)} | {'yes' if should else 'no'} | {nudged} | {stop}{verdict} |")
    return lines


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
    cases = issue_cases()
    text = markdown(results, command, seconds, args.data) + "\n".join(issue_table(cases)) + "\n"
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
    wrong = sum(1 for run, should in cases if bool(replay(run, False).stop) != should)
    return 1 if false_stops or wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
