"""What the fake server believes about each Claude model, written from Anthropic's documentation.

Deliberately independent of the client's model table (coder/models/model_table.json): the fake server is the judge of
the requests coder builds, so a fact the client gets wrong must not be copied into the judge. Every record names
where its facts come from.

Sources (platform.claude.com/docs/en/ unless a full URL is given):
  [overview]  about-claude/models/overview and each model's page models/<model>/overview ("Context window ·
              Max output", and the "How it compares to the current lineup" table with its Thinking column).
  [trouble]   build-with-claude/thinking-troubleshooting, "Thinking support, defaults, and rejected configurations
              by model": extended thinking ("enabled") is deprecated on the 4.6 models and rejected with a 400 on
              Claude 4.7 and later; Claude 4.5 and earlier have only extended thinking; Fable 5 / 5.1 and Mythos 5 /
              5.1 are adaptive only and always on (reject "enabled" and "disabled"); Mythos Preview takes both modes,
              is always on and rejects "disabled"; Opus 5 rejects "enabled", and "disabled" above effort high.
  [errors]    api/errors, "Common validation errors": prefill is refused by Claude 4.6 and later models and Mythos
              Preview; forced tool use is refused by Fable 5.1 and Mythos 5.1.
  [opus55]    models/opus-5-5/whats-new-opus-5-5: always on, forced tool use returns an error, thinking bound to
              the model and conversation. "The first three [changes] also apply to Claude Fable 5.1."
  [sonnet55]  models/sonnet-5-5/whats-new-sonnet-5-5: on by default, "disabled" refused (between_tools instead),
              forced tool use returns an error, thinking bound to the model and conversation.
  [fable52]   models/fable-5-2/whats-new-fable-5-2: as Fable 5.1 (sampling, forced tool choice, prefill behave as
              on 5.1); prefix checks for every account.
  [haiku55]   models/haiku-5-5/whats-new-haiku-5-5: adaptive thinking on by default, "enabled", non-default
              sampling parameters and prefill return 400; "disabled" works only at effort low, medium and high.
  [sonnet5]   models/sonnet-5/overview: adaptive thinking on by default, "enabled" and non-default sampling
              parameters (temperature, top_p, top_k) return 400.
  [effort]    build-with-claude/effort: effort on Claude Opus 4.5 (low, medium, high) and later models; max from
              the 4.6 models; xhigh from Claude Opus 4.7 (and every later model); Claude 4.5 Sonnet / Haiku and
              earlier have no effort.
  [preserved] build-with-claude/preserved-thinking/prefix-checks (featureMetadata.supportedModels): the models
              with preserved thinking, whose thinking blocks are bound to the exact earlier conversation and model.
  [editor]    agents-and-tools/tool-use/text-editor-tool, "Model compatibility": Claude 4.x models take
              text_editor_20250728 (name str_replace_based_edit_tool); Claude Sonnet 3.7 text_editor_20250124 (name
              str_replace_editor); "older tool versions are not guaranteed to be backwards-compatible with newer
              models"; the 2025-04-29 version was the first Claude 4 one (release notes).
  [bash]      agents-and-tools/tool-use/bash-tool: bash_20250124 for Claude 4 models and Sonnet 3.7; bash_20241022
              with Sonnet 3.5 (computer-use beta). The name is always "bash".
  [vision]    build-with-claude/vision: 100 images a request for models with a 200k-token context window, 600 for
              all other models.
  [tool-search] agents-and-tools/tool-use/tool-search-tool, "Model compatibility": the Claude 4.5 models and later
              (the 5.x models in its supportedModels list); "Claude Opus 4.1 and earlier models don't support the tool
              search tool", so they take neither `defer_loading` nor `tool_reference`.
  [sampling]  Sampling parameters are refused by Opus 4.7 and later, Sonnet 5 and later, Haiku 5.5 and the Fable /
              Mythos 5 models ([sonnet5]; Opus 4.7 migration guide "Sampling parameters removed").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Thinking kinds. "none": no thinking at all. "budget": only {"type": "enabled", "budget_tokens": N}.
# "both": budget (deprecated) and adaptive. "adaptive": adaptive only, "enabled" refused.
# "always": adaptive only and always on, "enabled" and "disabled" refused.
THINKING_KINDS = ("none", "budget", "both", "adaptive", "always")

MODERN_TOOLS = frozenset({"bash_20250124", "text_editor_20250728"})  # [bash], [editor]: Claude 4.x and later
CLAUDE4_TOOLS = MODERN_TOOLS | {"text_editor_20250429"}  # [editor]: the first Claude 4 editor version
SONNET37_TOOLS = frozenset({"bash_20250124", "bash_20241022", "text_editor_20250124"})  # [bash], [editor]
SONNET35_TOOLS = frozenset({"bash_20241022", "text_editor_20241022"})  # [bash], [editor] (deprecated models)


EFFORTS = ("low", "medium", "high", "xhigh", "max")  # [effort], in rising order
NO_EFFORT: tuple[str, ...] = ()
EFFORT_4_5 = EFFORTS[:3]  # [effort] Claude Opus 4.5
EFFORT_4_6 = ("low", "medium", "high", "max")  # [effort] the 4.6 models (and Mythos Preview): no xhigh
ALL_EFFORTS = EFFORTS  # [effort] Claude Opus 4.7 and every later model


@dataclass(frozen=True)
class ModelFacts:
    """One model family as the documentation describes it."""

    family: str  # the id prefix it was matched by (also what thinking signatures are bound to)
    context_window: int
    max_output: int
    thinking: str  # one of THINKING_KINDS
    thinks_by_default: bool = False  # a request without `thinking` runs with adaptive thinking
    always_on: bool = False  # thinking cannot be turned off although "enabled" works ([trouble]: Mythos Preview)
    between_tools: bool = False  # takes {"type": "between_tools"} instead of "disabled" ([sonnet55])
    disable_hint: str = ""  # what the refusal of "disabled" points to: "enabled", "adaptive" or "between_tools"
    preserved_thinking: bool = False  # thinking blocks bound to the conversation prefix ([preserved])
    sampling: bool = True  # accepts non-default temperature / top_p / top_k ([sampling])
    disabled_only_up_to_high: bool = False  # "disabled" refused at effort xhigh / max ([trouble], [haiku55])
    prefill: bool = True  # accepts a final assistant message to continue ([errors], [haiku55])
    efforts: tuple[str, ...] = NO_EFFORT  # the output_config.effort levels it takes ([effort]); () = none
    forced_tool_choice: bool = True  # accepts tool_choice "any" / "tool" ([errors], [opus55], [sonnet55])
    server_tools: frozenset[str] = MODERN_TOOLS
    reads_as: str = ""  # the family whose thinking blocks it reads and signs as its own ([fable52]: Mythos = Fable)
    defers_tools: bool = True  # takes defer_loading / tool_reference ([tool-search]: not Opus 4.1 and earlier)
    known: bool = True

    @property
    def thinking_family(self) -> str:
        """What a thinking block's signature binds it to: a model reads the blocks of its own thinking family."""
        return self.reads_as or self.family

    @property
    def max_images(self) -> int:
        """[vision] 100 images a request for models with a 200k-token window, 600 for every other model."""
        return 100 if self.context_window <= 200 * K else 600


K, M = 1_000, 1_000_000


def _always(family: str, bound: bool = True, disable_hint: str = "enabled", reads_as: str = "") -> ModelFacts:
    """A model that always thinks ([trouble], [errors], [effort]: Fable / Mythos 5.x, Opus 5.5): adaptive only,
    no sampling settings, no prefill, every effort level; `bound`: the 5.1 / 5.5 generation, whose thinking is
    bound to its conversation and which refuses forced tool use ([opus55], [errors])."""
    return ModelFacts(family, 1 * M, 128 * K, "always", thinks_by_default=True, disable_hint=disable_hint,
                      sampling=False, prefill=False, efforts=ALL_EFFORTS, preserved_thinking=bound,
                      forced_tool_choice=not bound, reads_as=reads_as)


# Longest prefix wins; ids may carry a date suffix (claude-haiku-4-5-20251001) or an alias suffix (-latest).
_TABLE: tuple[ModelFacts, ...] = (
    # [overview] legacy models; [bash]/[editor] tool versions; [tool-search] none of them defers tools
    ModelFacts("claude-3-haiku", 200 * K, 4096, "none", server_tools=frozenset(), defers_tools=False),
    ModelFacts("claude-3-5-haiku", 200 * K, 8192, "none", server_tools=frozenset(), defers_tools=False),
    ModelFacts("claude-3-5-sonnet", 200 * K, 8192, "none", server_tools=SONNET35_TOOLS, defers_tools=False),
    ModelFacts("claude-3-7-sonnet", 200 * K, 64 * K, "budget", server_tools=SONNET37_TOOLS, defers_tools=False),
    ModelFacts("claude-sonnet-4", 200 * K, 64 * K, "budget", server_tools=CLAUDE4_TOOLS, defers_tools=False),
    ModelFacts("claude-opus-4", 200 * K, 32 * K, "budget", server_tools=CLAUDE4_TOOLS, defers_tools=False),
    ModelFacts("claude-opus-4-1", 200 * K, 32 * K, "budget", server_tools=CLAUDE4_TOOLS, defers_tools=False),
    # [overview] 4.5: 200K / 64K, extended thinking only ([trouble]); effort on Opus 4.5 only ([effort])
    ModelFacts("claude-haiku-4-5", 200 * K, 64 * K, "budget", server_tools=CLAUDE4_TOOLS),
    ModelFacts("claude-sonnet-4-5", 200 * K, 64 * K, "budget", server_tools=CLAUDE4_TOOLS),
    ModelFacts("claude-opus-4-5", 200 * K, 64 * K, "budget", efforts=EFFORT_4_5, server_tools=CLAUDE4_TOOLS),
    # [overview] 4.6: 1M / 128K; [trouble] both modes (budget deprecated); [errors] no prefill
    ModelFacts("claude-opus-4-6", 1 * M, 128 * K, "both", prefill=False, efforts=EFFORT_4_6,
               server_tools=CLAUDE4_TOOLS),
    ModelFacts("claude-sonnet-4-6", 1 * M, 128 * K, "both", prefill=False, efforts=EFFORT_4_6,
               server_tools=CLAUDE4_TOOLS),
    # [trouble] adaptive only, off by default; [sampling]
    ModelFacts("claude-opus-4-7", 1 * M, 128 * K, "adaptive", sampling=False, prefill=False, efforts=ALL_EFFORTS),
    ModelFacts("claude-opus-4-8", 1 * M, 128 * K, "adaptive", sampling=False, prefill=False, efforts=ALL_EFFORTS),
    # [trouble] both modes, always on, "disabled" refused; [effort] no xhigh
    ModelFacts("claude-mythos-preview", 1 * M, 128 * K, "both", thinks_by_default=True, always_on=True,
               disable_hint="enabled", sampling=False, prefill=False, efforts=EFFORT_4_6),
    # [sonnet5], [opus5]: adaptive, on by default, "disabled" accepted (Opus 5: at effort high or below)
    ModelFacts("claude-sonnet-5", 1 * M, 128 * K, "adaptive", thinks_by_default=True, sampling=False, prefill=False,
               efforts=ALL_EFFORTS),
    ModelFacts("claude-opus-5", 1 * M, 128 * K, "adaptive", thinks_by_default=True, sampling=False, prefill=False,
               disabled_only_up_to_high=True, efforts=ALL_EFFORTS),
    # [trouble]: always on
    _always("claude-fable-5", bound=False),
    _always("claude-mythos-5", bound=False),
    # [opus55], [errors], [preserved]: always on, bound thinking, no forced tool use; [overview] 1M / 128K
    _always("claude-opus-5-5", disable_hint="adaptive"),
    _always("claude-fable-5-1"),
    _always("claude-mythos-5-1", reads_as="claude-fable-5-1"),
    _always("claude-fable-5-2"),  # [fable52]
    _always("claude-mythos-5-2", reads_as="claude-fable-5-2"),
    # [sonnet55], [preserved]: on by default, "disabled" refused, between_tools instead; bound, no forced tool use
    ModelFacts("claude-sonnet-5-5", 1 * M, 128 * K, "adaptive", thinks_by_default=True, between_tools=True,
               disable_hint="between_tools", sampling=False, prefill=False, efforts=ALL_EFFORTS,
               preserved_thinking=True, forced_tool_choice=False),
    # [overview] Haiku 5.5: 1M / 128K; [haiku55] adaptive only, on by default; [preserved]
    ModelFacts("claude-haiku-5-5", 1 * M, 128 * K, "adaptive", thinks_by_default=True, preserved_thinking=True,
               sampling=False, disabled_only_up_to_high=True, prefill=False, efforts=ALL_EFFORTS),
)
FAMILIES = tuple(f.family for f in _TABLE)
_BY_PREFIX = sorted(_TABLE, key=lambda f: len(f.family), reverse=True)
# A version suffix: a date (-20251001), -latest, or -v1 style; anything else (claude-opus-4-9) is another model.
_SUFFIX = re.compile(r"(-\d{8}|-latest|-v\d+(:\d+)?)*$")
_ZERO_ALIAS = re.compile(r"^(claude-(?:sonnet|opus)-4)-0$")  # claude-sonnet-4-0 is the alias of claude-sonnet-4

# Unknown ids: accept the conservative shape (what the client sends when it does not know a model) and refuse
# nothing model-specific. 32K output is the smallest limit of any current Claude 4+ model ([overview]).
UNKNOWN = ModelFacts("unknown", 200 * K, 32 * K, "both", efforts=ALL_EFFORTS, known=False)


def facts_for(model: str) -> ModelFacts:
    """The record whose family is `model` up to a version suffix, else UNKNOWN."""
    base = _ZERO_ALIAS.sub(r"\1", _SUFFIX.sub("", model.strip().lower()))
    for facts in _BY_PREFIX:
        if base == facts.family:
            return facts
    return UNKNOWN
