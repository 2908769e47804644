"""What a request cost: USD per million tokens, cache reads and writes priced separately.

Built-in prices are list prices (standard tier) from the model table (coder/models/model_table.json, each with
its source); the user's config overrides or extends them:

    [pricing."my-local-model"]
    input = 0.0
    output = 0.0
    cache_write = 0.0   # optional, default 1.25 x input
    cache_read = 0.0    # optional, default 0.1 x input

A table entry may price long prompts apart (`long_prompt`: the rates of a request whose prompt, input plus cache
reads and writes, is above `above` tokens; Claude Haiku 5.5 bills every token of such a request, output included,
at its higher rates). Costs are counted per request, so each request is priced by its own prompt.

A model name matches a table entry exactly or as a dated / aliased variant of it (`claude-sonnet-4-5-20250929`,
`claude-3-5-haiku-latest`, `anthropic/claude-opus-4-1`); `claude-opus-4-9` does NOT match `claude-opus-4`,
because guessing a price is worse than saying "cost unknown". Unknown models cost 0 with `known=False`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from coder.models.model_table import bare_name, load_table, match_family
from coder.models.providers import PROVIDERS
from coder.models.settings import UserPrice
from coder.models.types import Usage


@dataclass(frozen=True)
class Price:
    """USD per million tokens; `long` prices a request whose prompt is above `long_above` tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    long: Price | None = None
    long_above: int = 0

    @classmethod
    def anthropic(cls, input: float, output: float) -> Price:
        return cls(input, output, round(input * 1.25, 6), round(input * 0.1, 6))

    def cost(self, usage: Usage) -> float:
        prompt = usage.input_tokens + usage.cache_write_tokens + usage.cache_read_tokens
        if self.long is not None and prompt > self.long_above:
            return self.long.cost(usage)
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_write_tokens * self.cache_write + usage.cache_read_tokens * self.cache_read) / 1e6


@dataclass(frozen=True)
class Cost:
    usd: float
    known: bool


def _builtin_prices() -> dict[str, Price]:
    """The prices of coder/models/model_table.json (one source of truth with the request builder)."""
    out: dict[str, Price] = {}
    for info in load_table():
        p = info.price
        if not p:
            continue  # documented as unknown: "cost unknown" beats a guess
        provider = PROVIDERS.get(info.provider)
        price = _table_price(p, provider.cache_write_factor if provider else None,
                             provider.cache_read_factor if provider else None)
        if "long_prompt" in p:
            long = p["long_prompt"]
            price = replace(price, long=_table_price(long, None, None), long_above=int(long["above"]))
        out[info.family] = price
    return out


def _table_price(p: dict[str, Any], write: float | None, read: float | None) -> Price:
    """A price of the table: cache prices as given, else as factors of the input price when the provider prices them
    so (Anthropic: 1.25 and 0.1), else as input."""
    if write is not None and "cache_write" not in p:
        return Price(p["input"], p["output"], round(p["input"] * write, 6), round(p["input"] * (read or 0.0), 6))
    return Price(p["input"], p["output"], p.get("cache_write", p["input"]), p.get("cache_read", p["input"]))


BUILTIN_PRICES: dict[str, Price] = _builtin_prices()
# Free by construction.
_FREE = Price(0, 0, 0, 0)


class PriceTable:
    """The built-in table with the user's `[pricing."MODEL"]` entries on top."""

    def __init__(self, user: Mapping[str, UserPrice] | None = None) -> None:
        """`user`: the config's `[pricing]` (checked at load)."""
        self.prices = dict(BUILTIN_PRICES)
        for model, entry in (user or {}).items():
            self.prices[model.lower()] = Price(
                entry.input, entry.output, entry.input * 1.25 if entry.cache_write is None else entry.cache_write,
                entry.input * 0.1 if entry.cache_read is None else entry.cache_read)

    def lookup(self, model: str) -> Price | None:
        """The price of `model` (without provider prefix), or None when it is unknown."""
        if model.startswith("scripted:"):
            return self.prices.get(model.split(":", 1)[1].lower(), _FREE)
        best = match_family(bare_name(model), list(self.prices))
        return self.prices[best] if best else None

    def cost(self, model: str, usage: Usage) -> Cost:
        price = self.lookup(model)
        if price is None:
            return Cost(0.0, False)
        return Cost(price.cost(usage), True)

