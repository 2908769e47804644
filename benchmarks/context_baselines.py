#!/usr/bin/env python3
"""Replay real agent trajectories through the context manager alone (in process) and compare it with masking.

The trajectories' own system prompts and a two-tool stand-in, not coder's: this isolates the context manager's
policy from what coder's requests carry (benchmarks/context.py measures the whole session) and keeps the
plain-masking baselines. It writes no section; benchmarks/sections/context.md quotes it where it says so.

    python benchmarks/context_baselines.py [--json] [--quick] [PATH ...]

PATH: SWE-agent `.traj` / mini-swe-agent `.traj.json` files or folders (default: ../shared/data/trajectories
next to the repository). Every model request of a trajectory is rebuilt three ways and priced with Anthropic's
prompt caching emulated block by block (coder.models.wire.PrefixCache: reads at 0.1x, writes at 1.25x input):

  raw       the whole history, one breakpoint at its end (ideal prefix caching)
  mask      plain last-N observation masking (older outputs become a one-line stub), redone on every request,
            and `mask/10`, redone every ten requests
  ours      coder.context.TieredContext with its default config; the LLM summary is replaced by a stub writing
            `--summary-ratio` of the summarised text (capped at summary_max_tokens); the summary calls are priced
            too (their input through the same cache, their output at the output price)

Reported per trajectory and in total: peak context tokens, total input tokens, cached share of input, and the
dollar cost of the input side (main requests' own outputs are the same for every strategy and left out). A
retention check looks at the last context of each strategy: every edited path, every user message, and the last
error line must be in it (for ours: in the context or the pinned handoff).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from coder.base.errors import CoderError, ModelError
from coder.config.sections import ContextSettings
from coder.context.base import Pinned
from coder.context.history import observations, replace_results, user_texts
from coder.context.manager import TieredContext
from coder.context.masking import ERROR_HINT, is_failure, keys_of
from coder.context.replay import EDITOR, Replay, find_trajectories, load_trajectory
from coder.models.pricing import Price
from coder.models.types import Message, ModelRequest, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock, Usage
from coder.models.wire import PrefixCache, build_anthropic_body, input_tokens, segments
from coder.store.outputs import load_output

MODEL = "claude-sonnet-4-5"
PRICE = Price.anthropic(3.0, 15.0)
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "trajectories"
TOOLS = [
    ToolSpec("bash", "Run a shell command in the persistent sandboxed shell.",
             {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    ToolSpec(EDITOR, "View, create and edit files.",
             {"type": "object", "properties": {"command": {"type": "string"}, "path": {"type": "string"},
                                               "old_str": {"type": "string"}, "new_str": {"type": "string"}},
              "required": ["command", "path"]}),
]


@dataclass
class Meter:
    """Prices the requests of one strategy, with its own emulated prompt cache."""

    cache: PrefixCache = field(default_factory=PrefixCache)
    usage: Usage = field(default_factory=Usage)
    peak: int = 0
    requests: int = 0

    def request(self, request: ModelRequest) -> Usage:
        body = build_anthropic_body(request, MODEL)
        acc = self.cache.account(segments(body))
        usage = Usage(acc.input_tokens, 0, acc.cache_read_tokens, acc.cache_write_tokens)
        self.usage = self.usage + usage
        self.peak = max(self.peak, usage.total_input)
        self.requests += 1
        return usage

    def result(self) -> dict[str, Any]:
        total = self.usage.total_input
        return {"requests": self.requests, "peak_tokens": self.peak, "input_tokens": total,
                "cached_share": round(self.usage.cache_read_tokens / total, 4) if total else 0.0,
                "cost_usd": round(PRICE.cost(self.usage), 5),
                "cost_split_usd": {"read": round(self.usage.cache_read_tokens * PRICE.cache_read / 1e6, 5),
                                   "write": round(self.usage.cache_write_tokens * PRICE.cache_write / 1e6, 5),
                                   "plain": round(self.usage.input_tokens * PRICE.input / 1e6, 5),
                                   "output": round(self.usage.output_tokens * PRICE.output / 1e6, 5)}}


class ReplayProvider:
    """Stands in for the model during a replay: counts tokens like the Anthropic provider, never answers."""

    spec = f"anthropic:{MODEL}"

    def __init__(self, context_window: int) -> None:
        self.context_window = context_window

    def complete(self, request: ModelRequest, on_text: Any = None, cancel: Any = None) -> Any:
        raise ModelError("the benchmark never calls the model")

    def count_tokens(self, request: ModelRequest) -> int:
        return input_tokens(build_anthropic_body(request, MODEL))


class StubSummarizer:
    """The benchmark's stand-in for the LLM summary: `ratio` of the request's text, at most `max_tokens`."""

    FILLER = "summary-stub "

    def __init__(self, meter: Meter, ratio: float, max_tokens: int) -> None:
        self.meter, self.ratio, self.max_tokens, self.calls = meter, ratio, max_tokens, 0

    def __call__(self, request: ModelRequest) -> tuple[str, Usage | None]:
        usage = self.meter.request(request)  # the summary call reads the same cached prefix
        chars = sum(len(b.text) if isinstance(b, TextBlock) else len(getattr(b, "content", "")) or 40
                    for m in request.messages for b in m.content)
        size = min(int(chars * self.ratio), self.max_tokens * 4)
        text = (self.FILLER * (size // len(self.FILLER) + 1))[:size]
        out = Usage(0, size // 4)
        self.meter.usage = self.meter.usage + out
        self.calls += 1
        return text, Usage(usage.input_tokens, size // 4, usage.cache_read_tokens, usage.cache_write_tokens)


STUB = "[Old environment output omitted]"


def masked_view(history: list[Message], boundary: int) -> list[Message]:
    """Plain observation masking: results of the first `boundary` tool calls become a stub."""
    ids = [o.tool_use_id for o in observations(history)][:boundary]
    return replace_results(history, {i: STUB for i in ids})


def request_points(messages: list[Message]) -> list[int]:
    """Each model request of the trajectory sees messages[:i] with messages[i] its answer."""
    return [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]


def context_text(request: ModelRequest) -> str:
    parts = [request.system]
    for message in request.messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                parts.append(block.text)
            elif isinstance(block, ToolResultBlock):
                parts.append(block.content)
            elif isinstance(block, ToolUseBlock):
                parts.extend(str(v) for v in block.input.values())
    return "\n".join(parts)


def retention_facts(messages: list[Message]) -> dict[str, list[str]]:
    edited: list[str] = []
    obs_list = [o for o in observations(messages) if o.result_index is not None]
    for obs in obs_list:
        for key in sorted(keys_of(obs).writes):
            path = key.removeprefix("file:")
            if key.startswith("file:") and not path.startswith("/dev/") and path not in edited:
                edited.append(path)
    failures = [o for o in obs_list if is_failure(o)]
    error: list[str] = []
    if failures:
        lines = [ln.strip() for ln in failures[-1].content.splitlines() if ln.strip()]
        hits = [ln for ln in lines if ERROR_HINT.search(ln)]
        if hits or lines:
            error.append((hits or lines)[-1])
    return {"edited_paths": edited, "user_messages": user_texts(messages), "last_error": error}


def retention(request: ModelRequest, facts: dict[str, list[str]], state_dir: Path | None) -> dict[str, Any]:
    text = context_text(request)
    found: dict[str, list[bool]] = {}
    for kind, items in facts.items():
        found[kind] = []
        for item in items:
            ok = item in text
            if not ok and kind == "user_messages" and state_dir is not None:
                # a very long message kept as head + tail with its full text behind a handle named in context
                ok = any(_stored(state_dir, h) == item for h in re.findall(r"output://[0-9a-f]+", text))
            found[kind].append(ok)
    checks = [ok for oks in found.values() for ok in oks]
    return {"passed": sum(checks), "checks": len(checks),
            "missing": {k: [i[:80] for i, ok in zip(facts[k], v, strict=True) if not ok]
                        for k, v in found.items() if not all(v)}}


def _stored(state_dir: Path, handle: str) -> str | None:
    try:
        return load_output(state_dir, handle)
    except OSError:
        return None


def run_one(replay: Replay, args: argparse.Namespace) -> dict[str, Any]:
    messages, system = replay.messages, replay.system
    points = request_points(messages)
    facts = retention_facts(messages)
    result: dict[str, Any] = {"name": replay.name, "format": replay.fmt, "requests": len(points)}

    raw = Meter()
    for i in points:
        raw.request(ModelRequest(system, messages[:i], TOOLS, cache_breakpoints=[i - 1]))
    result["raw"] = raw.result()
    result["raw"]["retention"] = retention(ModelRequest(system, messages, TOOLS), facts, None)

    for label, every in (("mask", 1), ("mask/10", 10)):
        meter, boundary, last = Meter(), 0, None
        for n, i in enumerate(points):
            count = len([o for o in observations(messages[:i])])
            if n % every == 0:
                boundary = max(0, count - args.keep_last)
            last = masked_view(messages[:i], boundary)
            meter.request(ModelRequest(system, last, TOOLS, cache_breakpoints=[len(last) - 1]))
        result[label] = meter.result()
        final = masked_view(messages, boundary)
        result[label]["retention"] = retention(ModelRequest(system, final, TOOLS), facts, None)

    with tempfile.TemporaryDirectory(prefix="ctxbench-") as tmp:
        meter = Meter()
        config = {k: v for k, v in (("compact_at", args.compact_at), ("target", args.target),
                                    ("recent_turns", args.recent_turns)) if v is not None}
        stub = StubSummarizer(meter, args.summary_ratio, 0)
        manager = TieredContext(ReplayProvider(args.window), ContextSettings(**config), Path(tmp), summarizer=stub)
        stub.max_tokens = manager.config.summary_max_tokens
        kinds: dict[str, int] = {}
        started = time.perf_counter()
        for i in points:
            pinned = _pinned(messages[:i])
            prepared = manager.prepare(system, messages[:i], TOOLS, pinned)
            for comp in prepared.compactions:
                kinds[comp.kind] = kinds.get(comp.kind, 0) + 1
            manager.record_usage(meter.request(prepared.request))
        elapsed = time.perf_counter() - started
        final = manager.prepare(system, messages, TOOLS, _pinned(messages)).request
        result["ours"] = meter.result()
        result["ours"].update({"compactions": kinds, "summary_calls": stub.calls,
                               "prepare_ms": round(1000 * elapsed / max(1, len(points)), 2),
                               "retention": retention(final, facts, Path(tmp))})
    for key in ("cost_usd", "peak_tokens"):
        base = result["raw"][key]
        result[f"{key}_ratio_vs_raw"] = round(result["ours"][key] / base, 4) if base else 1.0
    return result


def _pinned(messages: list[Message]) -> Pinned:
    texts = user_texts(messages)
    files: list[str] = []
    for obs in observations(messages):
        for key in sorted(keys_of(obs).writes):
            if key.startswith("file:") and key[5:] not in files and not key.startswith("file:/dev/"):
                files.append(key[5:])
    return Pinned(task=texts[0] if texts else "", files_touched=files)


def totals(results: list[dict[str, Any]]) -> dict[str, Any]:
    def total(label: str, key: str) -> float:
        return sum(r[label][key] for r in results)

    out: dict[str, Any] = {"trajectories": len(results)}
    for label in ("raw", "mask", "mask/10", "ours"):
        tokens = total(label, "input_tokens")
        cached = sum(r[label]["input_tokens"] * r[label]["cached_share"] for r in results)
        out[label] = {"cost_usd": round(total(label, "cost_usd"), 4),
                      "peak_tokens_sum": int(total(label, "peak_tokens")),
                      "input_tokens": int(tokens), "cached_share": round(cached / tokens, 4) if tokens else 0.0}
        checks = sum(r[label]["retention"]["checks"] for r in results)
        out[label]["retention"] = round(sum(r[label]["retention"]["passed"] for r in results) / checks, 4) \
            if checks else 1.0
    out["cost_ratio_vs_raw"] = round(out["ours"]["cost_usd"] / out["raw"]["cost_usd"], 4)
    out["cost_ratio_vs_masking"] = round(out["ours"]["cost_usd"] / out["mask"]["cost_usd"], 4)
    out["cost_ratio_vs_masking_every10"] = round(out["ours"]["cost_usd"] / out["mask/10"]["cost_usd"], 4)
    out["peak_ratio_vs_raw"] = round(out["ours"]["peak_tokens_sum"] / out["raw"]["peak_tokens_sum"], 4)
    out["peak_ratio_vs_raw_worst"] = max(r["peak_tokens_ratio_vs_raw"] for r in results)
    out["retention"] = out["ours"]["retention"]
    return out


def table(results: list[dict[str, Any]], total: dict[str, Any]) -> str:
    header = ("| trajectory | req | raw peak | ours peak | raw $ | mask $ | mask/10 $ | ours $ | ours cached | "
              "ours/raw $ | retention |")
    rows = [header, "|" + "---|" * 11]
    for r in results:
        ret = r["ours"]["retention"]
        rows.append(f"| {r['name'][:42]} | {r['requests']} | {r['raw']['peak_tokens']} | {r['ours']['peak_tokens']} "
                    f"| {r['raw']['cost_usd']:.4f} | {r['mask']['cost_usd']:.4f} | {r['mask/10']['cost_usd']:.4f} "
                    f"| {r['ours']['cost_usd']:.4f} | {r['ours']['cached_share']:.0%} "
                    f"| {r['cost_usd_ratio_vs_raw']:.2f} "
                    f"| {ret['passed']}/{ret['checks']} |")
    t = total
    rows.append(f"| **total** | | {t['raw']['peak_tokens_sum']} | {t['ours']['peak_tokens_sum']} | "
                f"{t['raw']['cost_usd']:.4f} | {t['mask']['cost_usd']:.4f} | {t['mask/10']['cost_usd']:.4f} | "
                f"{t['ours']['cost_usd']:.4f} | {t['ours']['cached_share']:.0%} | {t['cost_ratio_vs_raw']:.2f} | "
                f"{t['retention']:.0%} |")
    summary = (f"\ncost vs raw {t['cost_ratio_vs_raw']:.2f}x, vs masking {t['cost_ratio_vs_masking']:.2f}x, "
               f"vs masking every 10 {t['cost_ratio_vs_masking_every10']:.2f}x; peak vs raw "
               f"{t['peak_ratio_vs_raw']:.2f}x (worst trajectory {t['peak_ratio_vs_raw_worst']:.2f}x); retention "
               f"ours {t['retention']:.0%}, mask {t['mask']['retention']:.0%}, mask/10 {t['mask/10']['retention']:.0%}"
               f"; cached share raw {t['raw']['cached_share']:.0%}, mask {t['mask']['cached_share']:.0%}, "
               f"mask/10 {t['mask/10']['cached_share']:.0%}, ours {t['ours']['cached_share']:.0%}")
    return "\n".join(rows) + summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="trajectory files or folders")
    parser.add_argument("--json", action="store_true", help="print one JSON object (per trajectory + total)")
    parser.add_argument("--quick", action="store_true",
                        help="only the three shortest trajectories with 40+ requests (the four shortest if none)")
    parser.add_argument("--window", type=int, default=200_000, help="model context window (default 200000)")
    parser.add_argument("--compact-at", type=float, default=None, help="[context] compact_at override")
    parser.add_argument("--target", type=float, default=None, help="[context] target override")
    parser.add_argument("--recent-turns", type=int, default=None, help="[context] recent_turns override")
    parser.add_argument("--summary-ratio", type=float, default=0.1, help="stub summary size / summarised text")
    parser.add_argument("--keep-last", type=int, default=5, help="N of the last-N masking baselines")
    args = parser.parse_args(argv)
    try:
        files = find_trajectories(args.paths or [DEFAULT_DATA])
        replays = [load_trajectory(p) for p in files]
    except CoderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    replays = [r for r in replays if len(request_points(r.messages)) >= 2]
    if args.quick:  # the three shortest sessions that are long enough to compact (else the four shortest)
        long_enough = [r for r in replays if len(request_points(r.messages)) >= 40]
        replays = sorted(long_enough or replays, key=lambda r: len(r.messages))[:3 if long_enough else 4]
    if not replays:
        print("error: no trajectory with at least two model requests", file=sys.stderr)
        return 2
    results = [run_one(r, args) for r in replays]
    total = totals(results)
    if args.json:
        print(json.dumps({"trajectories": results, "total": total}, indent=1))
    else:
        print(table(results, total))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
