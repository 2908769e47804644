"""What the fake server believes about each Claude model, written from Anthropic's documentation.

Deliberately independent of the client's model table: the fake server is the judge of the requests coder builds,
so a fact the client gets wrong must not be copied into the judge. Every record names where its facts come from.

Sources (platform.claude.com/docs unless a full URL is given):
  [overview]  en/about-claude/models/overview and each model's page en/models/<model>/overview ("Context window ·
              Max output", and the "How it compares to the current lineup" table with its Thinking column).
  [trouble]   en/build-with-claude/thinking-troubleshooting, "Thinking support, defaults, and rejected
              configurations by model": extended thinking (type "enabled") is deprecated on the 4.6 models and
              rejected with a 400 on Claude Opus 4.7, Opus 4.8, Sonnet 5, Fable 5, Mythos 5 and later; on Sonnet 4.5,
              Opus 4.5, Haiku 4.5 and earlier it is the only thinking mode; Mythos Preview takes both.
  [opus55]    en/models/opus-5-5/whats-new-opus-5-5, "Thinking can't be disabled": Opus 5 thinks by default and
              accepts "disabled"; Opus 5.5 (and Fable 5.1) always think and refuse both "disabled" and "enabled".
  [sonnet55]  en/models/sonnet-5-5/whats-new-sonnet-5-5, "Turn off up-front thinking with between_tools": Sonnet 5.5
              thinks by default and refuses "disabled"; its lowest setting is {"type": "between_tools"}.
  [fable5]    en/models/fable-5/migration-guide: claude-fable-5 and claude-mythos-5 refuse "disabled" and "enabled";
              adaptive thinking is always on.
  [sonnet5]   en/models/sonnet-5/overview: adaptive thinking on by default, "enabled" and non-default sampling
              parameters (temperature, top_p, top_k) return 400.
  [opus5]     en/models/opus-5/migration-guide: thinking on by default; 1M context, 128k output.
  [preserved] en/build-with-claude/preserved-thinking/prefix-checks (featureMetadata.supportedModels): the models
              with preserved thinking, whose thinking blocks are bound to the exact earlier conversation and model.
  [editor]    en/agents-and-tools/tool-use/text-editor-tool, "Model compatibility": Claude 4.x models take
              text_editor_20250728 (name str_replace_based_edit_tool); Claude Sonnet 3.7 text_editor_20250124 (name
              str_replace_editor); "older tool versions are not guaranteed to be backwards-compatible with newer
              models"; the 2025-04-29 version was the first Claude 4 one (release notes).
  [bash]      en/agents-and-tools/tool-use/bash-tool: bash_20250124 for Claude 4 models and Sonnet 3.7; bash_20241022
              with Sonnet 3.5 (computer-use beta). The name is always "bash".
  [haiku55]   en/models/haiku-5-5/whats-new-haiku-5-5 and en/build-with-claude/prompt-engineering/
              prompting-claude-haiku-5-5: adaptive thinking on by default, "enabled", non-default sampling parameters
              and assistant prefill return 400; "disabled" works only at effort low, medium and high.
  [sampling]  Sampling parameters are refused by Opus 4.7 and later, Sonnet 5 and later, Haiku 5.5 and the Fable /
              Mythos 5 models ([sonnet5]; Opus 4.7 migration guide "Sampling parameters removed").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from coder.models.model_table import server_tool_names

# Thinking kinds. "none": no thinking at all. "budget": only {"type": "enabled", "budget_tokens": N}.
# "both": budget (deprecated) and adaptive. "adaptive": adaptive only, "enabled" refused.
# "always": adaptive only and always on, "enabled" and "disabled" refused.
THINKING_KINDS = ("none", "budget", "both", "adaptive", "always")

MODERN_TOOLS = frozenset({"bash_20250124", "text_editor_20250728"})  # [bash], [editor]: Claude 4.x and later
CLAUDE4_TOOLS = MODERN_TOOLS | {"text_editor_20250429"}  # [editor]: the first Claude 4 editor version
SONNET37_TOOLS = frozenset({"bash_20250124", "bash_20241022", "text_editor_20250124"})  # [bash], [editor]
SONNET35_TOOLS = frozenset({"bash_20241022", "text_editor_20241022"})  # [bash], [editor] (deprecated models)

# The name each server-defined tool type must be declared with ([bash], [editor]): the API's vocabulary, kept once
# in the model table's data (coder/models/model_table.json, "server_tool_names").
SERVER_TOOL_NAME = server_tool_names()


@dataclass(frozen=True)
class ModelFacts:
    """One model family as the documentation describes it."""

    family: str  # the id prefix it was matched by (also what thinking signatures are bound to)
    context_window: int
    max_output: int
    thinking: str  # one of THINKING_KINDS
    thinks_by_default: bool = False  # a request without `thinking` runs with adaptive thinking
    between_tools: bool = False  # takes {"type": "between_tools"} instead of "disabled" ([sonnet55])
    preserved_thinking: bool = False  # thinking blocks bound to the conversation prefix ([preserved])
    sampling: bool = True  # accepts non-default temperature / top_p / top_k ([sampling])
    disabled_only_up_to_high: bool = False  # "disabled" refused at effort xhigh / max ([opus55], [haiku55])
    prefill: bool = True  # accepts a final assistant message to continue ([haiku55]: prefill returns 400)
    server_tools: frozenset[str] = MODERN_TOOLS
    known: bool = True


K, M = 1_000, 1_000_000
# Longest prefix wins; ids may carry a date suffix (claude-haiku-4-5-20251001) or an alias suffix (-latest).
_TABLE: tuple[ModelFacts, ...] = (
    # [overview] legacy models; [bash]/[editor] tool versions
    ModelFacts("claude-3-haiku", 200 * K, 4096, "none", server_tools=frozenset()),
    ModelFacts("claude-3-5-haiku", 200 * K, 8192, "none", server_tools=frozenset()),
    ModelFacts("claude-3-5-sonnet", 200 * K, 8192, "none", server_tools=SONNET35_TOOLS),
    ModelFacts("claude-3-7-sonnet", 200 * K, 64 * K, "budget", server_tools=SONNET37_TOOLS),
    ModelFacts("claude-sonnet-4", 200 * K, 64 * K, "budget", server_tools=CLAUDE4_TOOLS),
    ModelFacts("claude-opus-4", 200 * K, 32 * K, "budget", server_tools=CLAUDE4_TOOLS),
    ModelFacts("claude-opus-4-1", 200 * K, 32 * K, "budget", server_tools=CLAUDE4_TOOLS),
    # [overview] Haiku 4.5: 200K / 64K, "Extended"; [trouble] budget only
    ModelFacts("claude-haiku-4-5", 200 * K, 64 * K, "budget", server_tools=CLAUDE4_TOOLS),
    ModelFacts("claude-sonnet-4-5", 200 * K, 64 * K, "budget", server_tools=CLAUDE4_TOOLS),
    ModelFacts("claude-opus-4-5", 200 * K, 64 * K, "budget", server_tools=CLAUDE4_TOOLS),
    # [overview] Opus 4.6: 1M / 128K; [trouble] both modes (budget deprecated)
    ModelFacts("claude-opus-4-6", 1 * M, 128 * K, "both", server_tools=CLAUDE4_TOOLS),
    ModelFacts("claude-sonnet-4-6", 1 * M, 128 * K, "both", server_tools=CLAUDE4_TOOLS),
    # [trouble] adaptive only, off by default; [sampling]
    ModelFacts("claude-opus-4-7", 1 * M, 128 * K, "adaptive", sampling=False),
    ModelFacts("claude-opus-4-8", 1 * M, 128 * K, "adaptive", sampling=False),  # [opus5]: same limits as 4.8
    ModelFacts("claude-mythos-preview", 1 * M, 128 * K, "both", sampling=False),  # [trouble]
    # [sonnet5], [opus5]: adaptive, on by default, "disabled" accepted
    ModelFacts("claude-sonnet-5", 1 * M, 128 * K, "adaptive", thinks_by_default=True, sampling=False),
    ModelFacts("claude-opus-5", 1 * M, 128 * K, "adaptive", thinks_by_default=True, sampling=False,
               disabled_only_up_to_high=True),
    # [fable5]: always on
    ModelFacts("claude-fable-5", 1 * M, 128 * K, "always", thinks_by_default=True, sampling=False),
    ModelFacts("claude-mythos-5", 1 * M, 128 * K, "always", thinks_by_default=True, sampling=False),
    # [opus55], [preserved]: always on, bound thinking; [overview] 1M / 128K
    ModelFacts("claude-opus-5-5", 1 * M, 128 * K, "always", thinks_by_default=True, preserved_thinking=True,
               sampling=False),
    ModelFacts("claude-fable-5-1", 1 * M, 128 * K, "always", thinks_by_default=True, preserved_thinking=True,
               sampling=False),
    ModelFacts("claude-mythos-5-1", 1 * M, 128 * K, "always", thinks_by_default=True, preserved_thinking=True,
               sampling=False),
    ModelFacts("claude-fable-5-2", 1 * M, 128 * K, "always", thinks_by_default=True, preserved_thinking=True,
               sampling=False),
    ModelFacts("claude-mythos-5-2", 1 * M, 128 * K, "always", thinks_by_default=True, preserved_thinking=True,
               sampling=False),
    # [sonnet55], [preserved]: on by default, "disabled" refused, between_tools instead
    ModelFacts("claude-sonnet-5-5", 1 * M, 128 * K, "adaptive", thinks_by_default=True, between_tools=True,
               preserved_thinking=True, sampling=False),
    # [overview] Haiku 5.5: 1M / 128K; [haiku55] adaptive only, on by default; [preserved]
    ModelFacts("claude-haiku-5-5", 1 * M, 128 * K, "adaptive", thinks_by_default=True, preserved_thinking=True,
               sampling=False, disabled_only_up_to_high=True, prefill=False),
)
_BY_PREFIX = sorted(_TABLE, key=lambda f: len(f.family), reverse=True)
# A version suffix: a date (-20251001), -latest, or -v1 style; anything else (claude-opus-4-9) is another model.
_SUFFIX = re.compile(r"(-\d{8}|-latest|-v\d+(:\d+)?)*$")
_ZERO_ALIAS = re.compile(r"^(claude-(?:sonnet|opus)-4)-0$")  # claude-sonnet-4-0 is the alias of claude-sonnet-4

# Unknown ids: accept the conservative shape (what the client sends when it does not know a model) and refuse
# nothing model-specific. 32K output is the smallest limit of any current Claude 4+ model ([overview]).
UNKNOWN = ModelFacts("unknown", 200 * K, 32 * K, "both", known=False)


def facts_for(model: str) -> ModelFacts:
    """The record whose family is `model` up to a version suffix, else UNKNOWN."""
    base = _ZERO_ALIAS.sub(r"\1", _SUFFIX.sub("", model.strip().lower()))
    for facts in _BY_PREFIX:
        if base == facts.family:
            return facts
    return UNKNOWN
