"""The model table as data (every record valid, lookups by dated and aliased ids, unknown ids), the prices read
from it, and the tool name / schema normalisation round trip."""

from __future__ import annotations

import pytest

from coder.models.model_table import UNKNOWN, load_table, model_info
from coder.models.pricing import PriceTable
from coder.models.tool_names import NAME_OK, ToolMap, api_tool_name
from coder.models.types import ToolSpec, Usage


def test_every_record_is_complete_and_sourced() -> None:
    table = load_table()
    assert len({i.family for i in table}) == len(table), "one record per id"
    for info in table:
        assert info.context_window >= info.max_output > 0
        assert info.source.get("limits", "").startswith("http") or "not documented" in info.source["limits"]
        assert "price" in info.source
        if info.thinking == "always":
            assert info.thinks_by_default and info.disable is None
        if info.disable:
            assert info.thinks_by_default and info.thinking == "adaptive"


@pytest.mark.parametrize(("model", "family", "output", "thinking", "preserved"), [
    ("claude-haiku-4-5-20251001", "claude-haiku-4-5", 64_000, "budget", False),
    ("anthropic:claude-opus-4-7", "claude-opus-4-7", 128_000, "adaptive", False),
    ("claude-opus-4-8", "claude-opus-4-8", 128_000, "adaptive", False),
    ("claude-sonnet-5", "claude-sonnet-5", 128_000, "adaptive", False),
    ("claude-opus-5-5", "claude-opus-5-5", 128_000, "always", True),
    ("us.anthropic.claude-sonnet-5-5-v1:0", "claude-sonnet-5-5", 128_000, "adaptive", True),
    ("claude-3-5-haiku-latest", "claude-3-5-haiku", 8192, "none", False),
])
def test_lookup(model: str, family: str, output: int, thinking: str, preserved: bool) -> None:
    info = model_info(model)
    assert (info.family, info.max_output, info.thinking, info.preserved_thinking) == \
        (family, output, thinking, preserved)


@pytest.mark.parametrize("model", ["claude-opus-4-9", "claude-sonnet-7", "my-local-llama", "gpt-9"])
def test_unknown_ids_get_the_safest_shape(model: str) -> None:
    info = model_info(model)
    assert info is UNKNOWN and not info.thinks and not info.server_tools and not info.sampling
    assert info.max_output == 8192 and "not in coder's model table" in info.describe()


def test_prices_come_from_the_table() -> None:
    table = PriceTable()
    for info in load_table():
        price = table.lookup(info.family)
        if info.price is None:
            assert price is None, f"{info.family}: documented as unknown, so no price"
        else:
            assert price is not None and price.input == info.price["input"]
    opus = table.cost("claude-opus-5-5", Usage(1_000_000, 1_000_000))
    assert opus.known and opus.usd == pytest.approx(24.0)
    assert not table.cost("claude-mythos-5-2", Usage(10, 10)).known  # undocumented price: unknown, not guessed


@pytest.mark.parametrize("name", ["bash", "mcp__server__tool", "a" * 64, "a" * 65, "srv.tool/with spaces",
                                  "mcp__" + "x" * 100, "ünïcode"])
def test_tool_names_are_valid_stable_and_distinct(name: str) -> None:
    api = api_tool_name(name)
    assert NAME_OK.match(api) and api == api_tool_name(name)
    assert (api == name) == bool(NAME_OK.match(name))
    assert api_tool_name(name + "2") != api


@pytest.mark.parametrize("schema", [
    {"anyOf": [{"type": "object"}, {"type": "object"}]},
    {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"allOf": [{"type": "object"}]},
    {"type": "string"},
])
def test_union_schemas_are_wrapped_and_calls_unwrapped(schema: dict) -> None:
    spec = ToolSpec("mcp.tool:" + "n" * 70, "d", schema)
    names = ToolMap.of([spec])
    sent = names.api_schema(spec)
    assert sent["type"] == "object" and not {"anyOf", "oneOf", "allOf"} & set(sent)
    api = names.api_name(spec.name)
    real, data = names.original(api, {"input": {"a": 1}})
    assert (real, data) == (spec.name, {"a": 1})
    assert names.api_input(real, data) == {"input": {"a": 1}}  # the history goes out as the model sent it


def test_plain_tools_pass_unchanged() -> None:
    spec = ToolSpec("bash", "d", {"type": "object", "properties": {}})
    names = ToolMap.of([spec])
    assert names.api_schema(spec) is spec.input_schema and names.api_name("bash") == "bash"
    assert names.original("bash", {"command": "ls"}) == ("bash", {"command": "ls"})


def test_doctor_shows_the_models_limits_and_thinking(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from coder.engine.doctor import _model_check

    monkeypatch.setenv("CODER_MODEL", "anthropic:claude-haiku-4-5")
    check = _model_check(tmp_path)
    assert check.ok and "window 200,000" in check.detail and "output up to 64,000" in check.detail
    assert "thinking with a token budget" in check.detail
    monkeypatch.setenv("CODER_MODEL", "anthropic:claude-opus-5-5")
    assert "always on, preserved thinking" in _model_check(tmp_path).detail
    monkeypatch.setenv("CODER_MODEL", "anthropic:claude-next-1")
    assert "not in coder's model table" in _model_check(tmp_path).detail
