"""The model table (`model_table.json`): context window, output limit, thinking kind, preserved thinking, server
tool versions and prices of each model family, each fact with the documentation page it comes from.

One table, three readers: the request builder (coder.models.request_rules) shapes every request by it, the price
table (coder.models.pricing) takes its built-in prices from it, and `coder doctor` shows the chosen model's
record. Keeping the facts as data with their sources makes a wrong fact a one-line fix that names its evidence.

A model id matches a record exactly or as a dated / aliased variant (`claude-haiku-4-5-20251001`,
`claude-3-5-haiku-latest`, `anthropic/claude-opus-4-1`, `us.anthropic.claude-sonnet-4-5-v1:0`); a different
version (`claude-opus-4-9`) does NOT match `claude-opus-4`, because guessing is worse than not knowing. An unknown
id gets UNKNOWN: the safest shape (no thinking, no server tools, no sampling settings, 8,192 output tokens).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from coder.models.providers import split_provider

THINKING_KINDS = ("none", "budget", "adaptive", "always")
_SUFFIX = re.compile(r"^(?:[-@](?:\d{8}|latest)(?:[-:@].*)?|-v\d.*|:.*)?$")
_VENDOR = re.compile(r"^(?:anthropic[/.]|openai/|(?:us|eu|apac|global)\.anthropic\.)")
#: OpenAI reasoning models refuse `max_tokens` and take `max_completion_tokens`
#: (https://platform.openai.com/docs/guides/reasoning); used for ids the table does not list
OPENAI_REASONING = re.compile(r"^(?:o\d|gpt-5|gpt-[6-9])")
#: ... and, from GPT-5.6 on, take function tools on Chat Completions only with reasoning_effort "none" (the table's
#: `effort_with_tools`; this pattern for ids it does not list yet)
OPENAI_TOOLS_WITHOUT_REASONING = re.compile(r"^gpt-(?:5\.(?:[6-9]|\d\d)|[6-9])")


@dataclass(frozen=True)
class ModelInfo:
    """What coder knows about one model family."""

    family: str  # the id the record was matched by (thinking blocks are bound to it)
    provider: str
    context_window: int
    max_output: int
    thinking: str = "none"  # one of THINKING_KINDS
    thinks_by_default: bool = False  # a request without `thinking` runs with adaptive thinking
    disable: str | None = None  # the thinking type that turns default thinking off ("disabled", "between_tools")
    effort: bool = False  # takes output_config.effort
    sampling: bool = True  # takes a non-default temperature
    preserved_thinking: bool = False  # thinking blocks are bound to their model and conversation prefix
    server_tools: frozenset[str] = frozenset()
    price: dict[str, Any] | None = None  # USD per million tokens (and an optional "long_prompt" tier)
    token_param: str = "max_tokens"  # OpenAI route: the name of the output limit field
    source: dict[str, str] = field(default_factory=dict)
    known: bool = True
    vision: bool = True  # takes images (issue 35); a record says `"vision": false` for a model that does not
    #: takes `defer_loading` and `tool_reference` (the tool-search page's "Model compatibility"): loads on demand
    #: without changing the tool list (coder.models.tool_loading)
    defers_tools: bool = False
    #: OpenAI route: the `reasoning_effort` a request with function tools must carry (GPT-5.6: "none"), else None
    effort_with_tools: str | None = None

    @property
    def thinks(self) -> bool:
        """Whether this model can think at all."""
        return self.thinking != "none"

    def describe(self) -> str:
        """One line for `coder doctor` and notes."""
        thinking = {"none": "no thinking", "budget": "thinking with a token budget",
                    "adaptive": "adaptive thinking" + (" (on by default)" if self.thinks_by_default else ""),
                    "always": "adaptive thinking, always on"}[self.thinking]
        extra = ", preserved thinking" if self.preserved_thinking else ""
        return (f"window {self.context_window:,} tokens, output up to {self.max_output:,}, {thinking}{extra}"
                + ("" if self.known else " (not in coder's model table: the safest request shape)"))


#: the shape for an id the table does not know: nothing model-specific is sent
UNKNOWN_OUTPUT = 8192
UNKNOWN = ModelInfo("unknown", "unknown", 200_000, UNKNOWN_OUTPUT, sampling=False, known=False,
                    source={"all": "not in the table: the safest shape (no thinking, no server tools, "
                                   f"{UNKNOWN_OUTPUT} output tokens)"})


def _table_path() -> Path:
    return Path(__file__).with_name("model_table.json")


@lru_cache(maxsize=1)
def load_table() -> tuple[ModelInfo, ...]:
    """Every record of the table (validated: a bad edit fails loudly here, in tests, not in a user's session)."""
    data = json.loads(_table_path().read_text(encoding="utf-8"))
    sources: dict[str, str] = data["sources"]
    tool_sets: dict[str, list[str]] = data["tool_sets"]
    out: list[ModelInfo] = []
    for record in data["families"]:
        if record["thinking"] not in THINKING_KINDS:
            raise ValueError(f"model table: unknown thinking kind in {record['ids']}")
        for fact, where in record.get("source", {}).items():
            if not any(w in sources for w in where.split()) and "not" not in where.split():
                raise ValueError(f"model table: {record['ids']} {fact} names no source: {where!r}")
        tools = frozenset(tool_sets[record["server_tools"]]) if record.get("server_tools") else frozenset()
        src = {k: " ".join(sources.get(w) or w for w in v.split(" ")) for k, v in record.get("source", {}).items()}
        for family in record["ids"]:
            out.append(ModelInfo(
                family, record["provider"], int(record["context_window"]), int(record["max_output"]),
                record["thinking"], bool(record.get("thinks_by_default", False)), record.get("disable"),
                bool(record.get("effort", record["thinking"] in ("adaptive", "always"))),
                bool(record.get("sampling", True)), bool(record.get("preserved_thinking", False)), tools,
                record.get("price"), record.get("token_param", "max_tokens"), src,
                vision=bool(record.get("vision", True)), defers_tools=bool(record.get("defers_tools", False)),
                effort_with_tools=record.get("effort_with_tools")))
    return tuple(out)


@lru_cache(maxsize=1)
def server_tool_names() -> dict[str, str]:
    """Server-defined tool type -> the name it must be declared with (`bash_20250124` -> its fixed name): the API's
    vocabulary, kept once, in the table's data."""
    names = json.loads(_table_path().read_text(encoding="utf-8"))["server_tool_names"]
    return {kind: name for kind, name in names.items() if kind != "about"}


def bare_name(model: str) -> str:
    """`anthropic:us.anthropic.Claude-Opus-4-1-v1:0` -> `claude-opus-4-1-v1:0` (provider and vendor prefixes off)."""
    return _VENDOR.sub("", split_provider(model.strip())[1].lower())


def match_family(name: str, families: list[str]) -> str | None:
    """The longest of `families` that `name` (already bare) is, up to a date / alias / version suffix."""
    if name in families:
        return name
    best = None
    for key in families:
        if name.startswith(key) and _SUFFIX.match(name[len(key):]) and (best is None or len(key) > len(best)):
            best = key
    return best


@lru_cache(maxsize=256)
def model_info(model: str) -> ModelInfo:
    """The record of `model` (with or without provider prefix), or UNKNOWN."""
    table = {info.family: info for info in load_table()}
    family = match_family(bare_name(model), list(table))
    return table[family] if family else UNKNOWN


def unknown_model_note(model: str) -> str:
    """What a session shows once when its model is not in the table."""
    return (f"note: {model} is not in coder's model table, so requests use the safest shape: no thinking, no "
            f"server tool versions, at most {UNKNOWN_OUTPUT:,} output tokens. Add it to "
            "coder/models/model_table.json (with its documentation) to use its limits.")
