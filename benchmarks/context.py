#!/usr/bin/env python3
"""What long sessions cost: real agent trajectories replayed through coder, every request recorded and priced.

    python benchmarks/context.py [--quick] [--json] [--compare CHECKOUT] [--preset NAME] [--mcp] [--record]
                                 [PATH ...]

PATH: SWE-agent `.traj` / mini-swe-agent `.traj.json` files or folders (default: ../shared/data/trajectories next
to the repository). Each trajectory becomes a real coder session (benchmarks/context_session.py: the checkout's
own system prompt, tools, context manager and Anthropic provider, through the real SDK to the fake server, which
records every request) in which the model's turns are the trajectory's and each tool call returns the observation
the trajectory recorded (a real shell output of the original run). The recorded bodies are priced with Anthropic's
prompt caching emulated block by block (benchmarks/context_cost.py, claude-sonnet-4-5 list prices), summary
calls included (their output too: a stand-in handoff of 10% of the summarised text, at most summary_max_tokens;
what counts as summarised is `--stand-in`'s rule, benchmarks/context_session.py).

The yardstick, **raw**, is the trajectory as its own agent sent it: its own system prompt, a minimal bash and
editor definition, the whole history, a cache breakpoint at its end (ideal prefix caching). It is the same for
every version of coder, so `ours / raw` moves only when coder's requests do.

--quick      the three shortest trajectories with 40+ requests (the set the settings were tuned on), and the gate:
             exit 1 when their cost rises more than 3% over the figure recorded in benchmarks/context_gate.json
--compare C  also replay through the checkout C (e.g. a worktree of an older commit), in the same run
--preset P   also replay through this checkout with `[context] preset = P` (repeatable; issue 45's named settings)
--mcp        also replay with three real MCP servers configured (benchmarks/context_mcp.py)
--record     write this run's --quick figure to benchmarks/context_gate.json
--stand-in R what a stand-in handoff summarises: `narrative` (default since round 4: the text the model is asked
             to summarise, tool calls' inputs included, the verbatim copies and the instruction left out) or `all`
             (rounds 1-3: every text and tool result of the request, 40 characters for any other block)

Reported per trajectory and in total: cost, peak context, cached share, where the money went (tool definitions,
system prompt, history, new content), summaries, whether the task was in every request, and how each user turn
ended (a compaction deadlock or an overflow ends it in `error`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from context_cost import PARTS, Pricer  # noqa: E402 - the benchmarks folder
from context_recall import CREDITS, Trajectory, learnt_facts, merge, score  # noqa: E402 - the benchmarks folder

from coder.base.errors import CoderError  # noqa: E402
from coder.context.replay import Replay, find_trajectories, load_trajectory, session_job  # noqa: E402
from coder.models.types import ModelRequest, ToolSpec  # noqa: E402
from coder.models.wire import build_anthropic_body  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "trajectories"
#: the quick set's own copies, for a clone of the repository alone (no ../shared beside it)
QUICK_COPIES = ROOT / "benchmarks" / "data" / "context_quick"
GATE_FILE = ROOT / "benchmarks" / "context_gate.json"
GATE_SLACK = 0.03
#: recall may fall this much (absolute) below the recorded figure; the replay is deterministic, so any fall is real
RECALL_SLACK = 0.01
MODEL = "claude-sonnet-4-5"
#: raw's tool definitions: what a minimal agent sends for its shell and its editor
RAW_TOOLS = [
    ToolSpec("bash", "Run a shell command in the persistent sandboxed shell.",
             {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    ToolSpec("str_replace_based_edit_tool", "View, create and edit files.",
             {"type": "object", "properties": {"command": {"type": "string"}, "path": {"type": "string"},
                                               "old_str": {"type": "string"}, "new_str": {"type": "string"}},
              "required": ["command", "path"]}),
]


def quick_set(replays: list[Replay]) -> list[Replay]:
    """The three shortest sessions long enough to compact (40+ requests), else the four shortest."""
    long_enough = [r for r in replays if requests_of(r) >= 40]
    return sorted(long_enough or replays, key=lambda r: len(r.messages))[:3 if long_enough else 4]


def requests_of(replay: Replay) -> int:
    return sum(1 for m in replay.messages if m.role == "assistant") + 1  # + the answer after the last result


def raw_cost(replay: Replay, facts: Trajectory) -> dict[str, Any]:
    """Raw's requests priced, and its recall (1.0 by construction: the sanity check of the recall measure)."""
    pricer = Pricer()
    points = [i for i, m in enumerate(replay.messages) if m.role == "assistant"] + [len(replay.messages)]
    bodies = []
    for i in points:
        request = ModelRequest(replay.system, replay.messages[:i], RAW_TOOLS, cache_breakpoints=[i - 1])
        bodies.append(build_anthropic_body(request, MODEL))
        pricer.add(bodies[-1])
    return {**pricer.priced.result(), "recall": score(facts, ((b, False, 0) for b in bodies)).result()}


def replay_session(checkout: Path, replay: Replay, facts: Trajectory, folder: Path, mcp: dict[str, Any] | None,
                   context: dict[str, Any], stand_in: str) -> dict[str, Any]:
    """One trajectory through the coder at `checkout`: the recorded requests, priced, their recall of next-used
    facts, and the checks."""
    job = session_job(replay, folder / "workspace", folder / "requests.jsonl", MODEL)
    job["summary_rule"] = stand_in
    home = folder / "home"
    config = home / ".config" / "coder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(config_toml(checkout, context, mcp), encoding="utf-8")
    (folder / "job.json").write_text(json.dumps(job), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CODER_", "XDG_"))}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local/share"),
               XDG_STATE_HOME=str(home / ".local/state"), XDG_CACHE_HOME=str(home / ".cache"),
               PYTHONPATH=str(checkout))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "context_session.py"), str(folder / "job.json")],
                          capture_output=True, text=True, env=env, cwd=str(checkout), timeout=3600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"replay of {replay.name} in {checkout} failed:\n{proc.stderr[-3000:]}")
    run = json.loads(proc.stdout.strip().splitlines()[-1])
    bodies = [json.loads(line)["body"] for line in (folder / "requests.jsonl").read_text().splitlines()]
    bodies = [b for b in bodies if isinstance(b, dict) and "max_tokens" in b]  # generation requests only
    pricer = Pricer()
    task_everywhere = True
    task = job["user_messages"][0]
    sizes = iter(run["summary_tokens"])
    sent: list[tuple[dict[str, Any], bool, int]] = []
    for body in bodies:
        summary = job["summary_marker"] in json.dumps(body["messages"][-1])
        sent.append((body, summary, next(sizes) if summary else 0))
        pricer.add(*sent[-1])
        if not summary:
            task_everywhere &= task in first_text(body)
    stored = {p.stem: p.read_text(encoding="utf-8", errors="replace") for p in home.glob("**/outputs/*.txt")}
    result = pricer.priced.result()
    result.update(mismatched=len(run["mismatched"]), mismatched_examples=run["mismatched"][:3],
                  outcomes=run["outcomes"], task_in_every_request=task_everywhere,
                  tools=len(bodies[0].get("tools") or []) if bodies else 0,
                  summary_output_tokens=sum(run["summary_tokens"]),
                  recall=score(facts, sent, stored).result())
    return result


def first_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))


def config_toml(checkout: Path, context: dict[str, Any], mcp: dict[str, Any] | None) -> str:
    lines = []
    if (checkout / "coder" / "stuck").is_dir():
        lines += ["[stuck]", "enabled = false", ""]  # a replay repeats what the agent did; no note may change it
    if context:
        lines += ["[context]"] + [f"{k} = {json.dumps(v)}" for k, v in context.items()] + [""]
    for name, entry in (mcp or {}).items():
        lines += [f"[mcp.servers.{name}]"] + [f"{k} = {json.dumps(v)}" for k, v in entry.items()] + [""]
    return "\n".join(lines)


def run_set(checkout: Path, replays: list[Replay], mcp: dict[str, Any] | None, context: dict[str, Any],
            work: Path, label: str, stand_in: str) -> list[dict[str, Any]]:
    out = []
    for n, replay in enumerate(replays):
        folder = work / f"{label}-{n}"
        facts = learnt_facts(replay.system, replay.messages)
        result = {"name": replay.name, "requests": requests_of(replay), "raw": raw_cost(replay, facts),
                  "ours": replay_session(checkout, replay, facts, folder, mcp, context, stand_in)}
        result["cost_ratio"] = round(result["ours"]["cost_usd"] / result["raw"]["cost_usd"], 4)
        result["peak_ratio"] = round(result["ours"]["peak_tokens"] / result["raw"]["peak_tokens"], 4)
        out.append(result)
    return out


def totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    def total(side: str, key: str) -> float:
        return sum(r[side][key] for r in results)

    raw, ours = total("raw", "cost_usd"), total("ours", "cost_usd")
    parts = {p: round(sum(r["ours"]["parts"][p]["usd"] for r in results), 4) for p in PARTS}
    tokens = {p: sum(r["ours"]["parts"][p]["tokens"] for r in results) for p in PARTS}
    raw_parts = {p: sum(r["raw"]["parts"][p]["usd"] for r in results) for p in PARTS}
    return {"trajectories": len(results), "raw_cost_usd": round(raw, 4), "ours_cost_usd": round(ours, 4),
            "cost_ratio": round(ours / raw, 4) if raw else 1.0,
            "peak_ratio": round(total("ours", "peak_tokens") / total("raw", "peak_tokens"), 4),
            "summary_cost_usd": round(total("ours", "summary_cost_usd"), 4),
            "summaries": int(total("ours", "summary_requests")), "parts_usd": parts, "parts_tokens": tokens,
            "overheads": overheads(raw, parts, raw_parts, total("ours", "summary_cost_usd")),
            "requests": int(total("ours", "requests")),
            "task_in_every_request": all(r["ours"]["task_in_every_request"] for r in results),
            "all_turns_done": all(set(r["ours"]["outcomes"]) == {"done"} for r in results),
            "mismatched_calls": sum(r["ours"]["mismatched"] for r in results),
            "summary_output_tokens": int(total("ours", "summary_output_tokens")),
            "recall": merge(r["ours"]["recall"] for r in results),
            "raw_recall": merge(r["raw"]["recall"] for r in results)}


def overheads(raw: float, parts: dict[str, float], raw_parts: dict[str, float], summary_usd: float) -> dict[str, float]:
    """What compaction and coder's fixed part add over raw, as shares of raw's cost, and the ratio left without
    them: `without_compaction_overhead` is what this run's history would cost if its summaries and the cache
    rewrites they cause were free (a floor for any compaction design keeping this much history: decision 45,
    section 9); `history_only` also takes away the fixed part coder sends beyond raw's (tools, system prompt)."""
    if not raw:
        return {}
    ours = sum(parts.values()) + summary_usd
    rewrites = parts["new"] - raw_parts["new"]  # raw writes each step's new content once; the rest is rewriting
    fixed = parts["tools"] + parts["system"] - raw_parts["tools"] - raw_parts["system"]
    return {"summary_calls": round(summary_usd / raw, 4), "rewrites": round(rewrites / raw, 4),
            "fixed_over_raw": round(fixed / raw, 4), "history": round(parts["history"] / raw, 4),
            "without_compaction_overhead": round((ours - summary_usd - rewrites) / raw, 4),
            "history_only": round((ours - summary_usd - rewrites - fixed) / raw, 4)}


def table(label: str, results: list[dict[str, Any]], total: dict[str, Any]) -> str:
    rows = [f"**{label}**", "", "| trajectory | req | tools | raw $ | ours $ | ours/raw | raw peak | ours peak | "
            "peak ratio | cached | summaries | recall | + read_output | lost steps | task kept | turns |",
            "|" + "---|" * 16]
    for r in results:
        o, q = r["ours"], r["ours"]["recall"]
        rows.append(f"| {r['name'][:40]} | {r['requests']} | {o['tools']} | {r['raw']['cost_usd']:.4f} | "
                    f"{o['cost_usd']:.4f} | {r['cost_ratio']:.3f} | {r['raw']['peak_tokens']} | {o['peak_tokens']} | "
                    f"{r['peak_ratio']:.2f} | {o['cached_share']:.0%} | {o['summary_requests']} | "
                    f"{q['recall']['nothing']:.2f} | {q['recall_read']['nothing']:.2f} | "
                    f"{q['lost_step_share']['nothing']:.1%} | "
                    f"{'yes' if o['task_in_every_request'] else 'NO'} | {','.join(sorted(set(o['outcomes'])))} |")
    t, q = total, total["recall"]
    rows.append(f"| **total** | {t['requests']} | | {t['raw_cost_usd']:.4f} | {t['ours_cost_usd']:.4f} | "
                f"**{t['cost_ratio']:.3f}** | | | **{t['peak_ratio']:.3f}** | | {t['summaries']} | "
                f"**{q['recall']['nothing']:.3f}** | **{q['recall_read']['nothing']:.3f}** | "
                f"**{q['lost_step_share']['nothing']:.1%}** | "
                f"{'yes' if t['task_in_every_request'] else 'NO'} | {'done' if t['all_turns_done'] else 'NOT ALL'} |")
    credits = "; ".join(f"{c}: {q['recall'][c]:.3f} / {q['recall_read'][c]:.3f} / {q['lost_step_share'][c]:.1%}"
                        for c in CREDITS)
    rows.append(f"\nrecall of next-used facts ({q['facts']} facts in {q['steps']} steps; in the request / + one "
                f"read_output / steps acting on a lost fact), summaries credited with {credits}; raw's recall "
                f"{t['raw_recall']['recall']['nothing']:.3f}; {100 * t['summaries'] / max(1, q['steps']):.1f} "
                f"summaries per 100 steps, {t['summary_output_tokens']:,} output tokens")
    split = ", ".join(f"{p} ${t['parts_usd'][p]:.4f} ({t['parts_tokens'][p] / max(1, t['requests']):.0f} tok/req)"
                      for p in PARTS)
    rows.append(f"\nwhere ours' main requests' money went: {split}; summaries ${t['summary_cost_usd']:.4f}; "
                f"calls not answered with the recorded output: {t['mismatched_calls']}")
    if t.get("overheads"):
        o = t["overheads"]
        rows.append(f"\nshares of raw's cost: summary calls {o['summary_calls']:.3f}, cache rewrites "
                    f"{o['rewrites']:.3f}, fixed part beyond raw's {o['fixed_over_raw']:.3f}, history read "
                    f"{o['history']:.3f}; with summaries and rewrites free {o['without_compaction_overhead']:.3f}x, "
                    f"and without the extra fixed part {o['history_only']:.3f}x")
    return "\n".join(rows)


def knows(total: dict[str, Any]) -> dict[str, float]:
    """What the model still knows, summaries credited with nothing: the figures the gate holds."""
    return {key: total["recall"][key]["nothing"] for key in ("recall", "recall_read", "lost_step_share")}


def gate_figures(total: dict[str, Any], stand_in: str) -> dict[str, Any]:
    """What --record writes: cost and recall."""
    return {**{k: total[k] for k in ("ours_cost_usd", "cost_ratio", "peak_ratio", "raw_cost_usd")},
            **knows(total), "stand_in": stand_in}


def recall_gate(total: dict[str, Any], recorded: dict[str, Any]) -> tuple[bool, str]:
    """Recall in the request and one read_output away may not fall more than RECALL_SLACK below the record, nor
    the share of steps acting on a lost fact rise more than that above it."""
    if "recall" not in recorded:
        return False, "no recorded recall: run with --quick --record once"
    now = knows(total)
    ok = (now["recall"] >= recorded["recall"] - RECALL_SLACK
          and now["recall_read"] >= recorded["recall_read"] - RECALL_SLACK
          and now["lost_step_share"] <= recorded["lost_step_share"] + RECALL_SLACK)
    return ok, (f"recall {now['recall']:.3f} / {now['recall_read']:.3f} with read_output, steps on a lost fact "
                f"{now['lost_step_share']:.1%} (recorded {recorded['recall']:.3f} / {recorded['recall_read']:.3f} / "
                f"{recorded['lost_step_share']:.1%}, -{RECALL_SLACK} allowed)")


def gate(total: dict[str, Any], gate_file: Path, stand_in: str) -> tuple[bool, str]:
    """The --quick figure against the recorded one: more than GATE_SLACK above it fails, and so does recall below
    it (`recall_gate`), a request without the task or a turn that did not end `done` (a compaction that deadlocked
    or overflowed). A figure is only compared with one measured by the same stand-in rule."""
    if not gate_file.exists():
        return False, f"no recorded figure in {gate_file}: run with --quick --record once"
    recorded = json.loads(gate_file.read_text(encoding="utf-8"))
    if recorded.get("stand_in", "all") != stand_in:
        return False, (f"gate: the figure in {gate_file} was measured with --stand-in "
                       f"{recorded.get('stand_in', 'all')}, this run with {stand_in} -> FAIL")
    limit = recorded["ours_cost_usd"] * (1 + GATE_SLACK)
    knows, recall_line = recall_gate(total, recorded)
    ok = total["ours_cost_usd"] <= limit and knows and total["task_in_every_request"] and total["all_turns_done"]
    return ok, (f"gate: ${total['ours_cost_usd']:.4f} on the quick set, recorded ${recorded['ours_cost_usd']:.4f} "
                f"(+{GATE_SLACK:.0%} allows ${limit:.4f}); ratio {total['cost_ratio']:.3f} (recorded "
                f"{recorded['cost_ratio']:.3f}); {recall_line}; task kept: {total['task_in_every_request']}; every "
                f"turn done: {total['all_turns_done']} -> {'PASS' if ok else 'FAIL'}")


def toml_value(text: str) -> Any:
    """A --context value: a number, a boolean or a quoted string as JSON has them, else the text as a string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="trajectory files or folders")
    parser.add_argument("--quick", action="store_true", help="the tuning set, and the gate")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="replay through this checkout (default: this)")
    parser.add_argument("--compare", type=Path, help="also replay through this checkout (an older commit)")
    parser.add_argument("--preset", action="append", default=[], help="also replay with this [context] preset")
    parser.add_argument("--mcp", action="store_true", help="also replay with three real MCP servers")
    parser.add_argument("--record", action="store_true", help="record this --quick figure for the gate")
    parser.add_argument("--gate-file", type=Path, default=GATE_FILE, help=f"the recorded figure (default {GATE_FILE})")
    parser.add_argument("--context", action="append", default=[], metavar="KEY=VALUE",
                        help="[context] setting for the replayed sessions (repeatable)")
    parser.add_argument("--stand-in", choices=("narrative", "all"), default="narrative",
                        help="what a stand-in handoff summarises (default narrative; all: rounds 1-3)")
    args = parser.parse_args(argv)
    try:
        default = DEFAULT_DATA if DEFAULT_DATA.exists() or not args.quick else QUICK_COPIES
        replays = [load_trajectory(p) for p in find_trajectories(args.paths or [default])]
    except CoderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    replays = [r for r in replays if requests_of(r) >= 2]
    if args.quick:
        replays = quick_set(replays)
    if not replays:
        print("error: no trajectory with at least two model requests", file=sys.stderr)
        return 2
    context = {k: toml_value(v) for k, _, v in (item.partition("=") for item in args.context)}
    here = args.checkout.resolve()
    runs: dict[str, tuple[Path, dict[str, Any] | None, dict[str, Any]]] = {"this checkout": (here, None, context)}
    if args.compare:
        runs[f"checkout {args.compare}"] = (args.compare.resolve(), None, context)
    for preset in args.preset:
        runs[f"this checkout, preset {preset}"] = (here, None, {**context, "preset": preset})
    if args.mcp:
        from context_mcp import three_servers

        runs["this checkout, three MCP servers"] = (here, three_servers(DEFAULT_DATA), context)
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ctxbench-") as tmp:
        for n, (label, (checkout, mcp, settings)) in enumerate(runs.items()):
            results = run_set(checkout, replays, mcp, settings, Path(tmp), f"run{n}", args.stand_in)
            report[label] = {"trajectories": results, "total": totals(results)}
    ok, line = True, ""
    if args.quick:
        total = report["this checkout"]["total"]
        if args.record:
            args.gate_file.write_text(json.dumps(gate_figures(total, args.stand_in), indent=1) + "\n")
        ok, line = gate(total, args.gate_file, args.stand_in)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print("\n\n".join(table(label, r["trajectories"], r["total"]) for label, r in report.items()))
    if line:
        print(line, file=sys.stderr if args.json else sys.stdout)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
