"""Messages API rules on the thinking configuration, effort and the sampling settings thinking excludes, per model
([thinking-troubleshooting] "Thinking support, defaults, and rejected configurations by model", [errors] "Common
validation errors", [effort], [extended-thinking] "Feature compatibility")."""

from __future__ import annotations

from typing import Any

from coder_testkit.fake_rules.book import (
    ADAPTIVE,
    ANTHROPIC_SDK,
    EFFORT,
    ERRORS,
    OPUS_5_5,
    SONNET_5_5,
    THINKING,
    THINKING_TROUBLE,
    Found,
    Rules,
)
from coder_testkit.fake_rules.context import MessagesCall
from coder_testkit.fake_rules.facts import EFFORTS

RULES: Rules[MessagesCall] = Rules()

THINKING_TYPES = ("adaptive", "disabled", "enabled", "between_tools")
DISPLAYS = ("summarized", "omitted", "updates")  # [thinking] "Controlling thinking display" ("updates": beta)
BINDING_BETA = "thinking-binding-controls-2026-08-01"  # [errors] block_binding needs this beta header
_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
_ADAPTIVE_HINT = 'Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'


def _thinking(call: MessagesCall) -> dict[str, Any]:
    thinking = call.body.get("thinking")
    return thinking if isinstance(thinking, dict) else {}


def _kind(call: MessagesCall) -> Any:
    return _thinking(call).get("type")


@RULES.rule("thinking.type", "`thinking` is an object with a type", "thinking.type: Field required", ANTHROPIC_SDK,
            "schema")
def _type(call: MessagesCall) -> Found:
    return {} if "thinking" in call.body and "type" not in _thinking(call) else None


@RULES.rule("thinking.type-known", "the thinking type is adaptive, disabled, enabled or between_tools",
            "thinking: Input tag '{kind}' found using 'type' does not match any of the expected tags: 'adaptive', "
            "'disabled', 'enabled'", ANTHROPIC_SDK, "closest")
def _known(call: MessagesCall) -> Found:
    kind = _kind(call)
    return {"kind": kind} if "thinking" in call.body and kind not in THINKING_TYPES else None


@RULES.rule("thinking.between-tools-unsupported", "between_tools only on the models that take it (Sonnet 5.5)",
            '"thinking.type.between_tools" is not supported for this model.', SONNET_5_5, "closest")
def _between_tools(call: MessagesCall) -> Found:
    return {} if _kind(call) == "between_tools" and not call.facts.between_tools else None


@RULES.rule("thinking.unsupported-model", "no thinking on models without it (Claude 3.5 and earlier)",
            '"thinking.type.{kind}" is not supported for this model.', THINKING_TROUBLE, "closest")
def _no_thinking(call: MessagesCall) -> Found:
    kind = _kind(call)
    return {"kind": kind} if call.facts.thinking == "none" and kind in ("enabled", "adaptive") else None


@RULES.rule("thinking.enabled-removed", 'no "enabled" (extended thinking) on Claude 4.7 and later models',
            '"thinking.type.enabled" is not supported for this model. ' + _ADAPTIVE_HINT, ERRORS, "documented")
def _enabled_removed(call: MessagesCall) -> Found:
    return {} if _kind(call) == "enabled" and call.facts.thinking in ("adaptive", "always") else None


@RULES.rule("thinking.adaptive-unsupported", 'no "adaptive" on models with extended thinking only (Claude 4.5 and '
            "earlier)", "adaptive thinking is not supported on this model", ERRORS, "documented")
def _adaptive_unsupported(call: MessagesCall) -> Found:
    return {} if _kind(call) == "adaptive" and call.facts.thinking == "budget" else None


@RULES.rule("thinking.budget-minimum", "budget_tokens >= 1024",
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024", THINKING, "schema")
def _budget_minimum(call: MessagesCall) -> Found:
    budget = _thinking(call).get("budget_tokens")
    bad = not isinstance(budget, int) or isinstance(budget, bool) or budget < 1024
    return {} if _kind(call) == "enabled" and bad else None


@RULES.rule("thinking.budget-below-max-tokens", "budget_tokens < max_tokens",
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "
            f"{_DOCS}#max-tokens-and-context-window-size", THINKING, "closest")
def _budget_below(call: MessagesCall) -> Found:
    max_tokens = call.body.get("max_tokens")
    if _kind(call) != "enabled" or call.count_tokens or not isinstance(max_tokens, int):
        return None
    return {} if _thinking(call)["budget_tokens"] >= max_tokens else None


@RULES.rule("thinking.adaptive-budget", "adaptive thinking takes no budget_tokens",
            "thinking.adaptive.budget_tokens: Extra inputs are not permitted", ADAPTIVE, "schema")
def _adaptive_budget(call: MessagesCall) -> Found:
    return {} if _kind(call) == "adaptive" and "budget_tokens" in _thinking(call) else None


@RULES.rule("thinking.display", "`display` is summarized, omitted or updates",
            "thinking.{kind}.display: Input should be 'summarized' or 'omitted'", ANTHROPIC_SDK, "schema")
def _display(call: MessagesCall) -> Found:
    display = _thinking(call).get("display")
    return {"kind": _kind(call)} if display is not None and display not in DISPLAYS else None


@RULES.rule("thinking.block-binding-beta", "`thinking.block_binding` only with the thinking-binding-controls beta "
            "header", "thinking.{kind}.block_binding: Extra inputs are not permitted", ERRORS, "documented")
def _block_binding(call: MessagesCall) -> Found:
    if "block_binding" in _thinking(call) and BINDING_BETA not in call.betas:
        return {"kind": _kind(call)}
    return None


@RULES.rule("thinking.disabled-always-on", 'no "disabled" on models that always think (Fable / Mythos 5.x, Mythos '
            "Preview)", '"thinking.type.disabled" is not supported for this model. Thinking defaults to adaptive mode '
            'when not specified; use "thinking.type.enabled" with "budget_tokens" for extended thinking.',
            THINKING_TROUBLE, "documented")
def _disabled_always_on(call: MessagesCall) -> Found:
    return {} if _kind(call) == "disabled" and call.facts.disable_hint == "enabled" else None


@RULES.rule("thinking.disabled-opus-5-5", 'no "disabled" on Opus 5.5 (always on)',
            '"thinking.type.disabled" is not supported for this model. ' + _ADAPTIVE_HINT, OPUS_5_5, "closest")
def _disabled_adaptive(call: MessagesCall) -> Found:
    return {} if _kind(call) == "disabled" and call.facts.disable_hint == "adaptive" else None


@RULES.rule("thinking.disabled-between-tools", 'no "disabled" on Sonnet 5.5 (between_tools is its lowest setting)',
            '"thinking.type.disabled" is not supported for this model. Use "thinking.type.between_tools" for the '
            'lowest thinking setting, or "thinking.type.adaptive" and "output_config.effort" to control thinking '
            "behavior.", SONNET_5_5, "closest")
def _disabled_between(call: MessagesCall) -> Found:
    return {} if _kind(call) == "disabled" and call.facts.disable_hint == "between_tools" else None


# --------------------------------------------------------------------------------------------------- effort


def _effort(call: MessagesCall) -> Any:
    return call.effort


@RULES.rule("effort.level", "the effort is low, medium, high, xhigh or max",
            "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'", EFFORT, "schema")
def _effort_level(call: MessagesCall) -> Found:
    effort = _effort(call)
    return {} if effort is not None and effort not in EFFORTS else None


@RULES.rule("effort.unsupported-model", "no effort on models without it (Claude Sonnet / Haiku 4.5 and earlier)",
            "output_config.effort: effort is not supported for this model.", EFFORT, "closest")
def _effort_model(call: MessagesCall) -> Found:
    return {} if _effort(call) is not None and call.facts.known and not call.facts.efforts else None


@RULES.rule("effort.model-level", "an effort level the model has (max from the 4.6 models, xhigh from Opus 4.7)",
            'output_config.effort: "{effort}" is not supported for this model. Supported values: {levels}.', EFFORT,
            "closest")
def _effort_model_level(call: MessagesCall) -> Found:
    effort, levels = _effort(call), call.facts.efforts
    if effort is not None and levels and effort not in levels:
        return {"effort": effort, "levels": ", ".join(levels)}
    return None


@RULES.rule("thinking.disabled-effort", '"disabled" only at effort high or below (Opus 5 and later, Haiku 5.5)',
            '"thinking.type.disabled" is only supported with "output_config.effort" high or below.',
            THINKING_TROUBLE, "closest")
def _disabled_effort(call: MessagesCall) -> Found:
    ok = _kind(call) != "disabled" or not call.facts.disabled_only_up_to_high
    return None if ok or _effort(call) not in ("xhigh", "max") else {}


@RULES.rule("thinking.between-tools-effort", "between_tools only at effort low, medium or high",
            '"thinking.type.between_tools" is only supported with "output_config.effort" low, medium or high.',
            SONNET_5_5, "closest")
def _between_effort(call: MessagesCall) -> Found:
    return {} if _kind(call) == "between_tools" and _effort(call) in ("xhigh", "max") else None


# ------------------------------------------------------------------------------------- sampling with thinking


@RULES.rule("sampling.temperature-with-thinking", "temperature is 1 (or unset) while the model thinks",
            "`temperature` may only be set to 1 when thinking is enabled or in interleaved thinking mode. Please "
            f"consult our documentation at {_DOCS}#feature-compatibility", THINKING, "closest")
def _temperature_thinking(call: MessagesCall) -> Found:
    temperature = call.body.get("temperature")
    return {} if temperature is not None and temperature != 1 and call.thinking_active else None


@RULES.rule("sampling.top-k-with-thinking", "no top_k while the model thinks",
            f"`top_k` may not be set when thinking is enabled. Please consult our documentation at {_DOCS}"
            "#feature-compatibility", THINKING, "closest")
def _top_k_thinking(call: MessagesCall) -> Found:
    return {} if "top_k" in call.body and call.thinking_active else None


@RULES.rule("sampling.top-p-with-thinking", "top_p between 0.95 and 1 while the model thinks",
            "`top_p` must be between 0.95 and 1 when thinking is enabled. Please consult our documentation at "
            f"{_DOCS}#feature-compatibility", THINKING, "closest")
def _top_p_thinking(call: MessagesCall) -> Found:
    top_p = call.body.get("top_p")
    return {} if isinstance(top_p, (int, float)) and top_p < 0.95 and call.thinking_active else None
