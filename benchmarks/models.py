"""Model layer: per-request overhead of each provider against the fake server, and what prompt caching saves.

Usage: python benchmarks/models.py [--quick] [--requests N] [--turns N] [--json]

1. Overhead: median wall time of one streamed request (short text + one tool call) through
   - the scripted provider (in-process, no HTTP),
   - AnthropicProvider (official anthropic SDK, SSE) against coder_testkit.fake_server on 127.0.0.1,
   - OpenAIProvider (official openai SDK, SSE) against the same server's chat-completions route,
   - the bare anthropic SDK (`messages.create`, JSON, no streaming) as the floor of any SDK-based provider.
2. Caching: a session of N tool-use turns (each tool result ~2 KB) through AnthropicProvider, once with the
   breakpoints coder places (system + tools + the latest message) and once with caching off; input tokens as the
   fake server counts them (chars / 4, caching emulated as documented in fake_server.py), priced as
   claude-sonnet-4-5. The ratio is what caching saves on this shape of session, not a measurement of the real API.
3. Recovery: time until success for a request that first meets a 429 (retry-after=0), a cut stream, and a 529.

There is no peer tool to compare with here: every agent uses the same SDKs; the figures show that coder's layer
adds little on top of them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
warnings.filterwarnings("ignore", category=DeprecationWarning)  # the SDK flags claude-sonnet-4-5's end of life

from coder.models.anthropic_provider import AnthropicProvider  # noqa: E402
from coder.models.openai_provider import OpenAIProvider  # noqa: E402
from coder.models.pricing import PriceTable  # noqa: E402
from coder.models.retry import RetryPolicy  # noqa: E402
from coder.models.scripted import ScriptedProvider  # noqa: E402
from coder.models.types import Message, ModelRequest, ToolResultBlock, ToolSpec  # noqa: E402
from coder_testkit.fake_server import FakeServer  # noqa: E402

MODEL = "claude-sonnet-4-5"
TOOLS = [ToolSpec("bash", "Run a shell command in the repository.",
                  {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
                  "bash_20250124")]
SYSTEM = "You are coder, a careful coding agent working in a git repository. " * 40
TURN = {"text": "Let me check the tests.", "tool_calls": [{"name": "bash", "input": {"command": "pytest -q"}}]}


def script(turns: int) -> dict[str, Any]:
    return {"turns": [TURN] * turns + [{"text": "Done."}]}


def request() -> ModelRequest:
    return ModelRequest(SYSTEM, [Message.user_text("Fix the failing test.")], TOOLS, max_tokens=1024)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm up (imports, connection)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def overhead(runs: int) -> dict[str, float]:
    import anthropic

    policy = RetryPolicy(max_retries=0)
    cancel = threading.Event()  # the engine always passes one: the stream is then read in a helper thread
    out: dict[str, float] = {}
    big = {"turns": [{**TURN, "repeat": True, "when": "."}]}  # every request gets the same answer
    out["scripted (in-process)"] = median_ms(lambda: ScriptedProvider(big).complete(request()), runs)
    with FakeServer(big) as server:
        p = AnthropicProvider(MODEL, api_key="x", base_url=server.base_url, policy=policy)
        out["AnthropicProvider, SSE via fake server"] = median_ms(lambda: p.complete(request(), cancel=cancel), runs)
        o = OpenAIProvider("local", api_key="x", base_url=server.base_url + "/v1", policy=policy)
        out["OpenAIProvider, SSE via fake server"] = median_ms(lambda: o.complete(request(), cancel=cancel), runs)
        client = anthropic.Anthropic(base_url=server.base_url, api_key="x", max_retries=0)
        out["bare anthropic SDK, JSON via fake server"] = median_ms(
            lambda: client.messages.create(model=MODEL, max_tokens=1024, system=SYSTEM,
                                           messages=[{"role": "user", "content": "Fix the failing test."}]), runs)
    return out


def session_cost(turns: int, cached: bool) -> dict[str, float]:
    prices = PriceTable()
    with FakeServer(script(turns)) as server:
        p = AnthropicProvider(MODEL, api_key="x", base_url=server.base_url, policy=RetryPolicy(max_retries=0))
        messages = [Message.user_text("Fix the failing test.")]
        totals = {"input": 0, "read": 0, "write": 0, "cost": 0.0}
        for _ in range(turns + 1):
            req = ModelRequest(SYSTEM, list(messages), TOOLS, max_tokens=1024, cache_system=cached,
                               cache_breakpoints=[len(messages) - 1] if cached else [])
            r = p.complete(req)
            totals["input"] += r.usage.input_tokens
            totals["read"] += r.usage.cache_read_tokens
            totals["write"] += r.usage.cache_write_tokens
            totals["cost"] += prices.cost(MODEL, r.usage).usd
            if not r.message.tool_uses():
                break
            messages += [r.message, Message("user", [ToolResultBlock(r.message.tool_uses()[0].id,
                                                                     "test output line\n" * 120)])]
    return totals


def recovery() -> dict[str, float]:
    out = {}
    for fault in ("429@1:retry-after=0", "cut@1", "529@1"):
        with FakeServer(script(1), faults=[fault]) as server:
            p = AnthropicProvider(MODEL, api_key="x", base_url=server.base_url,
                                  policy=RetryPolicy(max_retries=3, base_delay=0.05))
            start = time.perf_counter()
            p.complete(request())
            out[fault] = (time.perf_counter() - start) * 1000
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (about 10 s)")
    parser.add_argument("--requests", type=int, default=None, help="requests per overhead figure")
    parser.add_argument("--turns", type=int, default=None, help="tool-use turns of the caching session")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = args.requests or (15 if args.quick else 60)
    turns = args.turns or (10 if args.quick else 30)
    with tempfile.TemporaryDirectory():
        results = {"overhead_ms": overhead(runs),
                   "caching": {"on": session_cost(turns, True), "off": session_cost(turns, False)},
                   "recovery_ms": recovery(), "runs": runs, "turns": turns}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"Per-request wall time, median of {runs} (ms)")
    for name, ms in results["overhead_ms"].items():
        print(f"  {name:45s} {ms:8.2f}")
    on, off = results["caching"]["on"], results["caching"]["off"]
    print(f"\nSession of {turns} tool turns, priced as {MODEL}")
    print(f"  caching on : uncached {on['input']:>8,.0f}  read {on['read']:>9,.0f}  write {on['write']:>8,.0f}  "
          f"${on['cost']:.4f}")
    print(f"  caching off: uncached {off['input']:>8,.0f}  read {off['read']:>9,.0f}  write {off['write']:>8,.0f}  "
          f"${off['cost']:.4f}")
    print(f"  saving: {100 * (1 - on['cost'] / off['cost']):.0f}% of the cost")
    print("\nTime to success after one fault (ms)")
    for fault, ms in results["recovery_ms"].items():
        print(f"  {fault:25s} {ms:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
