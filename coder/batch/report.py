"""`coder swebench report RUN_DIR`: what a run achieved and what it cost, as Markdown, JSON and a PNG chart.

The outcome of an instance is the evaluator's verdict when an evaluation report is found (RUN_DIR/eval/report.json
or `--eval`), otherwise what the agent did (submitted a patch, ended without one, crashed): a report is useful
before the (slow) evaluation too, and says which kind of outcome it shows.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.base.errors import UsageError
from coder.batch.outputs import InstanceStatus, RunDir, atomic_write
from coder.batch.png import Canvas
from coder.batch.reach import future_in_reach

EVAL_OUTCOMES = ("resolved", "partially", "not", "error")
AGENT_OUTCOMES = ("submitted", "no patch", "limit", "crashed")
COLORS = {"resolved": (46, 160, 67), "partially": (240, 170, 30), "not": (200, 60, 50), "error": (120, 120, 120),
          "submitted": (46, 120, 200), "no patch": (200, 60, 50), "limit": (240, 170, 30),
          "crashed": (120, 120, 120)}


@dataclass
class Row:
    status: InstanceStatus
    outcome: str


def _agent_outcome(st: InstanceStatus) -> str:
    if st.state != "done":
        return "crashed"
    if st.exit_reason in ("max_turns", "max_cost", "wall_time", "stuck"):  # stuck: issue 22's stop
        return "limit"
    return "submitted" if st.patch_files else "no patch"


def find_eval_report(run_dir: Path, explicit: Path | None) -> dict[str, Any] | None:
    for cand in ([explicit] if explicit else []) + [run_dir / "eval" / "report.json"]:
        if cand is None:
            continue
        path = cand / "report.json" if cand.is_dir() else cand
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
        if explicit is not None and cand == explicit:
            raise UsageError(f"--eval {explicit}: no report.json there")
    return None


def _stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {"total": 0.0, "mean": 0.0, "median": 0.0, "max": 0.0}
    return {"total": round(sum(values), 6), "mean": round(statistics.fmean(values), 6),
            "median": round(statistics.median(values), 6), "max": round(max(values), 6)}


def build(run_dir: Path, eval_path: Path | None = None) -> dict[str, Any]:
    run = RunDir(run_dir)
    statuses = run.all_statuses()
    if not statuses:
        raise UsageError(f"{run_dir}: no finished instances (is it a run directory of `coder swebench run`?)")
    ev = find_eval_report(run_dir, eval_path)
    ev_inst = (ev or {}).get("instances", {})
    rows = []
    for st in statuses:
        verdict = ev_inst.get(st.instance_id, {}).get("status") if ev else None
        rows.append(Row(st, verdict if verdict in EVAL_OUTCOMES else ("not" if ev else _agent_outcome(st))))
    outcomes = EVAL_OUTCOMES if ev else AGENT_OUTCOMES
    counts = Counter(r.outcome for r in rows)
    n = len(rows)
    resolved = counts.get("resolved", 0)
    total_cost = sum(r.status.cost_usd for r in rows)
    return {
        "run_dir": str(run_dir),
        "outcome_source": "evaluation" if ev else "agent (not evaluated)",
        "instances": n,
        "outcomes": {o: counts.get(o, 0) for o in outcomes},
        "resolve_rate": round(resolved / n, 4) if ev else None,
        "cost_usd": _stats([r.status.cost_usd for r in rows]),
        "cost_per_resolved_usd": round(total_cost / resolved, 6) if ev and resolved else None,
        "tokens": {k: sum(getattr(r.status, k) for r in rows)
                   for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")},
        "turns": _stats([float(r.status.turns) for r in rows]),
        "time_s": _stats([r.status.duration_s for r in rows]),
        "exit_reasons": dict(Counter(r.status.exit_reason for r in rows)),
        "clean": _clean(rows),
        "evidence": _evidence(rows, bool(ev)),
        "per_instance": [{"instance_id": r.status.instance_id, "outcome": r.outcome,
                          "exit_reason": r.status.exit_reason, "turns": r.status.turns,
                          "tokens": r.status.tokens, "cost_usd": r.status.cost_usd,
                          "time_s": round(r.status.duration_s, 2), "patch_files": len(r.status.patch_files),
                          "flags": sorted({f.get("flag", "") for f in r.status.flags}), "evidence": _state(r.status)}
                         for r in rows],
    }


def _clean(rows: list[Row]) -> dict[str, Any]:
    """Issue 44: how many runs were clean (nothing past the base in reach, no command reaching for more), which
    were not, and how many of those resolved; instances of runs older than the record count as unrecorded."""
    recorded = [r for r in rows if r.status.reach]
    flagged = [r for r in recorded if r.status.flags]
    return {"recorded": len(recorded), "clean": len(recorded) - len(flagged),
            "flagged": [r.status.instance_id for r in flagged],
            "flagged_resolved": [r.status.instance_id for r in flagged if r.outcome == "resolved"],
            "future_in_reach": [r.status.instance_id for r in recorded
                                if future_in_reach((r.status.reach or {}).get("git") or {})]}


def _state(st: InstanceStatus) -> str:
    return str((st.evidence or {}).get("state") or "none")


def _evidence(rows: list[Row], evaluated: bool) -> dict[str, dict[str, int | None]]:
    """Per evidence state (issue 49; "none": no code changed): instances, and resolved ones when evaluated (how
    far `verified` predicts a resolved instance), and final messages with a claim the evidence did not support."""
    out: dict[str, dict[str, int | None]] = {}
    for r in rows:
        row = out.setdefault(_state(r.status), {"instances": 0, "resolved": 0 if evaluated else None,
                                                 "unsupported_claims": 0})
        row["instances"] = int(row["instances"] or 0) + 1
        if evaluated:
            row["resolved"] = int(row["resolved"] or 0) + (r.outcome == "resolved")
        row["unsupported_claims"] = int(row["unsupported_claims"] or 0) + \
            bool((r.status.evidence or {}).get("unsupported_claim"))
    return out


def markdown(rep: dict[str, Any]) -> str:
    c, t, tm = rep["cost_usd"], rep["turns"], rep["time_s"]
    lines = [f"# Run report: {rep['run_dir']}", "",
             f"Outcomes from: {rep['outcome_source']}. Instances: {rep['instances']}.", ""]
    lines += ["| outcome | instances |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rep["outcomes"].items()]
    lines += [""]
    if rep["resolve_rate"] is not None:
        lines.append(f"- Resolve rate: {rep['resolve_rate'] * 100:.1f}%")
    clean = rep["clean"]
    if clean["recorded"]:
        flagged = ", ".join(clean["flagged"][:10]) + (" ..." if len(clean["flagged"]) > 10 else "")
        lines.append(f"- Clean runs: {clean['clean']}/{clean['recorded']} (nothing after the base in reach, no "
                     f"command reaching past the instance)" + (f"; flagged: {flagged}, of which resolved "
                                                               f"{len(clean['flagged_resolved'])}" if flagged else "")
                     + (f"; FUTURE COMMITS IN REACH: {', '.join(clean['future_in_reach'])}"
                        if clean["future_in_reach"] else ""))
    else:
        lines.append("- Clean runs: not recorded (a run from before the reach record)")
    per_res = rep["cost_per_resolved_usd"]
    per_res_text = f"${per_res:.4f}" if per_res is not None else "n/a"
    lines += [(f"- Cost: ${c['total']:.4f} total, ${c['mean']:.4f} mean, ${c['median']:.4f} median, "
               f"${c['max']:.4f} max per instance"),
              f"- Cost per resolved instance: {per_res_text}",
              "- Tokens: " + ", ".join(f"{k.replace('_tokens', '')} {v:,}" for k, v in rep["tokens"].items()),
              f"- Turns: {t['mean']:.1f} mean, {t['median']:.0f} median, {t['max']:.0f} max",
              f"- Time: {tm['total']:.1f}s total, {tm['mean']:.1f}s mean per instance",
              "- Exit reasons: " + ", ".join(f"{k} {v}" for k, v in sorted(rep["exit_reasons"].items())),
              "", "| evidence | instances | resolved | unsupported claims |", "|---|---|---|---|"]
    for state, row in rep.get("evidence", {}).items():
        resolved = "n/a" if row["resolved"] is None else row["resolved"]
        lines.append(f"| {state} | {row['instances']} | {resolved} | {row['unsupported_claims']} |")
    lines += ["", "![cost against outcome](report.png)", "",
              "| instance | outcome | exit | evidence | turns | tokens | cost | time | files | flags |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rep["per_instance"]:
        lines.append(f"| {r['instance_id']} | {r['outcome']} | {r['exit_reason']} | {r.get('evidence', 'none')} "
                     f"| {r['turns']} | {r['tokens']:,} | ${r['cost_usd']:.4f} | {r['time_s']:.1f}s "
                     f"| {r['patch_files']} | {'; '.join(r['flags']) or '-'} |")
    return "\n".join(lines) + "\n"


def chart(rep: dict[str, Any]) -> bytes:
    """Cost (x) against outcome (one row per outcome), a disc per instance, coloured by outcome."""
    outcomes = list(rep["outcomes"])
    width, height = 720, 120 + 60 * len(outcomes)
    left, right, top, bottom = 150, width - 30, 50, height - 60
    cv = Canvas(width, height)
    cv.text(left, 14, "COST PER INSTANCE (USD) BY OUTCOME", scale=2)
    costs = [r["cost_usd"] for r in rep["per_instance"]]
    hi = max(costs) if costs and max(costs) > 0 else 1.0
    cv.line(left, bottom, right, bottom, (0, 0, 0))
    cv.line(left, top, left, bottom, (0, 0, 0))
    for i in range(5):
        x = left + (right - left) * i // 4
        cv.line(x, bottom, x, bottom + 5, (0, 0, 0))
        label = f"{hi * i / 4:.3g}"
        cv.text(x - Canvas.text_width(label) // 2, bottom + 12, label)
    cv.text((left + right) // 2 - Canvas.text_width("$") // 2, bottom + 34, "$")
    row_h = (bottom - top) // max(1, len(outcomes))
    seen: Counter[tuple[str, int]] = Counter()
    for i, outcome in enumerate(outcomes):
        cy = top + row_h * i + row_h // 2
        cv.text(10, cy - 5, f"{outcome} ({rep['outcomes'][outcome]})", COLORS.get(outcome, (0, 0, 0)))
        cv.line(left + 1, cy, right, cy, (225, 225, 225))
    for r in rep["per_instance"]:
        i = outcomes.index(r["outcome"]) if r["outcome"] in outcomes else len(outcomes) - 1
        cy = top + row_h * i + row_h // 2
        x = left + int((right - left) * (r["cost_usd"] / hi))
        stack = seen[(r["outcome"], x // 6)]
        seen[(r["outcome"], x // 6)] += 1
        offset = (0, -10, 10)[stack % 3]  # instances of equal cost side by side, not on top of each other
        cv.disc(x, cy + offset, 5, COLORS.get(r["outcome"], (0, 0, 0)))
    return cv.png()


def write_report(run_dir: Path, eval_path: Path | None = None) -> dict[str, Path]:
    rep = build(run_dir, eval_path)
    paths = {"json": run_dir / "report.json", "md": run_dir / "report.md", "png": run_dir / "report.png"}
    atomic_write(paths["json"], json.dumps(rep, indent=2))
    atomic_write(paths["md"], markdown(rep))
    tmp = paths["png"].with_suffix(".png.tmp")
    tmp.write_bytes(chart(rep))
    tmp.replace(paths["png"])
    return paths
