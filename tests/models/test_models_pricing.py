"""Pricing: built-in table, aliases and dated names, user overrides, unknown models."""

from __future__ import annotations

import pytest

from coder.base.errors import ConfigError
from coder.config.layers import settings
from coder.models.pricing import PriceTable
from coder.models.types import Usage

MILLION = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000,
                cache_write_tokens=1_000_000)


@pytest.mark.parametrize(("model", "input_price", "output_price"), [
    ("claude-sonnet-4-5", 3, 15),
    ("claude-sonnet-4-5-20250929", 3, 15),
    ("anthropic:claude-opus-4-1", 15, 75),
    ("claude-opus-4-20250514", 15, 75),
    ("claude-haiku-4-5", 1, 5),
    ("claude-3-5-haiku-latest", 0.8, 4),
    ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", 3, 15),
])
def test_builtin_prices_and_aliases(model: str, input_price: float, output_price: float) -> None:
    price = PriceTable().lookup(model)
    assert price is not None
    assert (price.input, price.output) == (input_price, output_price)
    assert price.cache_write == pytest.approx(input_price * 1.25)
    assert price.cache_read == pytest.approx(input_price * 0.1)


def test_cost_prices_cache_reads_and_writes_separately() -> None:
    table = PriceTable()
    usage = Usage(input_tokens=1000, output_tokens=500, cache_read_tokens=10_000, cache_write_tokens=2000)
    cost = table.cost("claude-sonnet-4-5", usage)
    expected = (1000 * 3 + 500 * 15 + 10_000 * 0.3 + 2000 * 3.75) / 1e6
    assert cost.known and cost.usd == pytest.approx(expected)


@pytest.mark.parametrize(("model", "price"), [
    # https://platform.claude.com/docs/en/about-claude/pricing: input, output, 5-minute writes, cache hits
    ("claude-fable-5", (10, 50, 12.5, 1)),
    ("claude-mythos-5", (10, 50, 12.5, 1)),
    ("claude-fable-5-1", (10, 50, 12.5, 0.25)),  # cache reads at 0.025x input
    ("claude-mythos-5-1", (10, 50, 12.5, 0.25)),
    ("claude-fable-5-2", (8, 40, 10, 0.2)),
    ("claude-opus-5-5", (4, 20, 5, 0.2)),  # cache reads at 0.05x input
    ("claude-opus-4-7", (5, 25, 6.25, 0.5)),
])
def test_the_5x_models_have_their_documented_prices(model: str, price: tuple[float, ...]) -> None:
    found = PriceTable().lookup(model)
    assert found is not None
    assert (found.input, found.output, found.cache_write, found.cache_read) == pytest.approx(price)


def test_a_long_prompt_is_priced_at_its_tier() -> None:
    """Claude Haiku 5.5 bills a request whose prompt (input + cache reads + writes) is above 100,000 tokens at its
    higher rates, every token of it, output included."""
    table = PriceTable()
    short = Usage(input_tokens=40_000, output_tokens=1000, cache_read_tokens=60_000)
    long = Usage(input_tokens=40_001, output_tokens=1000, cache_read_tokens=60_000)
    assert table.cost("claude-haiku-5-5", short).usd == pytest.approx((40_000 * 0.1 + 1000 * 0.5 + 60_000 * 0.01) / 1e6)
    assert table.cost("claude-haiku-5-5", long).usd == pytest.approx((40_001 * 0.5 + 1000 * 2.5 + 60_000 * 0.05) / 1e6)


def test_a_new_version_does_not_inherit_an_older_price() -> None:
    table = PriceTable()
    assert table.lookup("claude-opus-4-9") is None
    cost = table.cost("qwen2.5-coder", MILLION)
    assert cost.usd == 0 and not cost.known


def test_user_table_overrides_and_extends() -> None:
    table = PriceTable(settings({"pricing": {
        "claude-sonnet-4-5": {"input": 2, "output": 10},
        "qwen2.5-coder": {"input": 0.1, "output": 0.2, "cache_write": 0.1, "cache_read": 0.01},
    }}).pricing)
    assert table.cost("claude-sonnet-4-5-20250929", Usage(input_tokens=1_000_000)).usd == pytest.approx(2)
    assert table.cost("openai:qwen2.5-coder", MILLION).usd == pytest.approx(0.1 + 0.2 + 0.1 + 0.01)


def test_scripted_models_are_free() -> None:
    cost = PriceTable().cost("scripted:/tmp/s.json", MILLION)
    assert cost.known and cost.usd == 0


@pytest.mark.parametrize(("entry", "needle"), [
    ({"input": 1}, r"\[pricing\] my-model: needs `output`"),
    ({"input": -1, "output": 1}, r"\[pricing.my-model\] input = -1: must be at least 0"),
    ({"input": 1, "output": 2, "cached": 1}, r"\[pricing.my-model\] cached: unknown key"),
    (3, r"\[pricing\] my-model = 3: expected a table \(\[pricing.my-model\]\)"),
])
def test_bad_user_prices_name_the_entry(entry: object, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        settings({"pricing": {"my-model": entry}})
    with pytest.raises(ConfigError, match=r'\[pricing."my.model"\]'):  # a key that needs quotes has them
        settings({"pricing": {"my.model": {"input": "free", "output": 0}}})
