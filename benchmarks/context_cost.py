"""Prices recorded Anthropic request bodies with emulated prompt caching, and says where each dollar went.

Used by benchmarks/context.py. Every body goes through one `PrefixCache` in the order it was sent (the session's
requests and its summary calls alike, as the real cache sees them). Each segment (one tool definition, one system
block, one message block) is put in one of four parts: the tool definitions, the system prompt, the history (the
messages the previous main request also carried, at the same place) and the new content (everything else: the
latest results, a handoff after a compaction). The cache accounting says how many leading tokens were read, how
many after them were written and how many were plain input; each segment's tokens are split along those lines, so
the parts add up to the request's cost exactly.

What the API bills without showing it in the body is counted by coder.models.wire.segments at its documented size
(coder.models.hidden_tokens): the tool-use system prompt on every request with tools (raw's too: its yardstick sends
a plain shell and editor schema) and a server-defined tool's own definition (245 tokens for `bash_20250124`, 700 for
the text editor) in place of its short declaration. Both are in the tools part and cached with the prefix they lead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coder.models.hidden_tokens import tool_prompt_tokens
from coder.models.pricing import Price
from coder.models.wire import PrefixCache, segments

PRICE = Price.anthropic(3.0, 15.0)  # claude-sonnet-4-5 list prices per million tokens
PARTS = ("tools", "system", "history", "new")


@dataclass
class PartCost:
    tokens: int = 0
    usd: float = 0.0


@dataclass
class Priced:
    """One strategy's requests, priced: totals, the peak, and the split by part (main requests only)."""

    requests: int = 0
    summary_requests: int = 0
    input_tokens: int = 0
    read_tokens: int = 0
    write_tokens: int = 0
    usd: float = 0.0
    summary_usd: float = 0.0  # the summary calls' input and output
    peak: int = 0
    parts: dict[str, PartCost] = field(default_factory=lambda: {p: PartCost() for p in PARTS})

    def result(self) -> dict[str, Any]:
        total = self.input_tokens
        return {"requests": self.requests, "summary_requests": self.summary_requests, "peak_tokens": self.peak,
                "input_tokens": total, "cached_share": round(self.read_tokens / total, 4) if total else 0.0,
                "cost_usd": round(self.usd, 5), "summary_cost_usd": round(self.summary_usd, 5),
                "parts": {k: {"tokens": v.tokens, "usd": round(v.usd, 5)} for k, v in self.parts.items()}}


def _kinds(body: dict[str, Any], previous: list[str]) -> tuple[list[str], list[str]]:
    """The part of each segment of `body`, and the texts of its message segments (for the next request)."""
    segs = segments(body)
    n_tools = sum(1 for t in body.get("tools") or [] if not t.get("defer_loading"))  # deferred: not in the prompt
    n_tools += 1 if tool_prompt_tokens(body) else 0  # the tool-use system prompt the API adds, a tools cost
    system = body.get("system")
    n_system = 1 if isinstance(system, str) else len(system or [])
    messages = [s.text for s in segs[n_tools + n_system:]]
    same = 0
    while same < min(len(messages), len(previous)) and messages[same] == previous[same]:
        same += 1
    kinds = ["tools"] * n_tools + ["system"] * n_system + ["history"] * same + ["new"] * (len(messages) - same)
    return kinds, messages


class Pricer:
    """Feeds bodies through one cache; `summary=True` marks a compaction's summary call."""

    def __init__(self) -> None:
        self.cache = PrefixCache()
        self.priced = Priced()
        self._previous: list[str] = []

    def add(self, body: dict[str, Any], summary: bool = False, output_tokens: int = 0) -> int:
        segs = segments(body)
        acc = self.cache.account(segs)
        read_end, write_end = acc.cache_read_tokens, acc.cache_read_tokens + acc.cache_write_tokens
        usd = (acc.cache_read_tokens * PRICE.cache_read + acc.cache_write_tokens * PRICE.cache_write
               + acc.input_tokens * PRICE.input) / 1e6
        p = self.priced
        total = sum(s.tokens for s in segs)
        p.input_tokens += total
        p.read_tokens += acc.cache_read_tokens
        p.write_tokens += acc.cache_write_tokens
        if summary:
            p.summary_requests += 1
            out = output_tokens * PRICE.output / 1e6
            p.summary_usd += usd + out
            p.usd += usd + out
            return total
        p.requests += 1
        p.usd += usd
        p.peak = max(p.peak, total)
        kinds, self._previous = _kinds(body, self._previous)
        start = 0
        for seg, kind in zip(segs, kinds, strict=True):
            end = start + seg.tokens
            read = max(0, min(end, read_end) - start)
            written = max(0, min(end, write_end) - max(start, read_end))
            plain = seg.tokens - read - written
            part = p.parts[kind]
            part.tokens += seg.tokens
            part.usd += (read * PRICE.cache_read + written * PRICE.cache_write + plain * PRICE.input) / 1e6
            start = end
        return total
