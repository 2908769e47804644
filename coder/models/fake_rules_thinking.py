"""The fake server's thinking rules: thinking configuration per model, thinking blocks in the history, and the
signatures that bind a thinking block to its text (all models) or to its whole conversation prefix (models with
preserved thinking). Written from Anthropic's documentation, independently of the client (see fake_model_facts).

Each rule names its source. "verbatim" marks a message copied from a real API answer (GitHub issues that quote
the 400 body); "closest" marks a message written from the documented wording where no real answer was found.

Sources (platform.claude.com/docs): [thinking] en/build-with-claude/extended-thinking ("Max tokens and context
window size", "Thinking with tool use", "Preserving thinking blocks"); [adaptive] en/build-with-claude/
adaptive-thinking; [trouble] en/build-with-claude/thinking-troubleshooting; [opus55] en/models/opus-5-5/
whats-new-opus-5-5; [sonnet55] en/models/sonnet-5-5/whats-new-sonnet-5-5; [effort] en/build-with-claude/effort;
[prefix] en/build-with-claude/preserved-thinking/prefix-checks and .../fix-bound-to-a-different-conversation.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from coder.models.fake_model_facts import ModelFacts

THINKING_TYPES = ("adaptive", "disabled", "enabled", "between_tools")
EFFORTS = ("low", "medium", "high", "xhigh", "max")  # [effort]
_THINKING_BLOCKS = ("thinking", "redacted_thinking")
_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


def thinking_type(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking")
    return thinking.get("type") if isinstance(thinking, dict) else None


def thinking_active(body: dict[str, Any], facts: ModelFacts) -> bool:
    """Whether the model thinks up front on this request: asked for, or on by default ([opus55], [sonnet55]:
    "requests without a thinking field run with adaptive thinking"). between_tools has no up-front thinking."""
    kind = thinking_type(body)
    if kind is None:
        return facts.thinks_by_default
    return kind in ("enabled", "adaptive")


def _not_supported(kind: str) -> str:
    # [opus55] verbatim for "disabled" and "enabled" (the documented error messages of Opus 5.5)
    return (f'"thinking.type.{kind}" is not supported for this model. Use "thinking.type.adaptive" and '
            '"output_config.effort" to control thinking behavior.')


def check_config(body: dict[str, Any], facts: ModelFacts, *, count_tokens: bool = False) -> str | None:
    """The thinking parameter and effort, per model."""
    effort = (body.get("output_config") or {}).get("effort") if isinstance(body.get("output_config"), dict) else None
    if effort is not None and effort not in EFFORTS:
        # [effort] levels; closest (pydantic literal wording)
        return "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'"
    if "thinking" not in body:
        return None
    thinking = body["thinking"]
    if not isinstance(thinking, dict) or "type" not in thinking:
        return "thinking.type: Field required"  # closest (pydantic wording)
    kind = thinking["type"]
    if kind not in THINKING_TYPES or (kind == "between_tools" and not facts.between_tools):
        # closest: the tagged-union wording the API uses for an unknown `type`
        return (f"thinking: Input tag '{kind}' found using 'type' does not match any of the expected tags: "
                "'adaptive', 'disabled', 'enabled'")
    if facts.thinking == "none" and kind != "disabled":
        return f'"thinking.type.{kind}" is not supported for this model.'  # closest
    if kind == "enabled":
        if facts.thinking in ("adaptive", "always"):
            return _not_supported("enabled")  # [trouble]: 4.7+ reject "enabled" with 400; [opus55] verbatim
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1024:
            # [thinking] "budget_tokens ... minimum is 1,024"; verbatim
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        max_tokens = body.get("max_tokens")
        if not count_tokens and isinstance(max_tokens, int) and budget >= max_tokens:
            # [thinking] "budget_tokens must be set to a value less than max_tokens"; verbatim
            return ("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation "
                    f"at {_DOCS}#max-tokens-and-context-window-size")
    elif kind == "adaptive":
        if facts.thinking in ("budget", "none"):
            # [adaptive] "Older models (Sonnet 4.5, Opus 4.5, etc.) do not support adaptive thinking"; closest
            return ('"thinking.type.adaptive" is not supported for this model. Use "thinking.type.enabled" with '
                    '"thinking.budget_tokens" to control thinking behavior.')
        if "budget_tokens" in thinking:
            return "thinking.adaptive.budget_tokens: Extra inputs are not permitted"  # [adaptive]; closest
    elif kind == "disabled":
        if facts.thinking == "always":
            return _not_supported("disabled")  # [opus55], [fable5] verbatim
        if facts.between_tools:
            # [sonnet55] "returns 400 invalid_request_error whose message points to between_tools"; closest
            return ('"thinking.type.disabled" is not supported for this model. Use "thinking.type.between_tools" '
                    'to turn off up-front thinking.')
        if facts.disabled_only_up_to_high and effort in ("xhigh", "max"):
            # [opus55] "On Claude Opus 5 ... disabled is accepted at effort high or below", [haiku55]; closest
            return '"thinking.type.disabled" is only supported with "output_config.effort" high or below.'
    elif kind == "between_tools" and effort in ("xhigh", "max"):
        # [sonnet55] "At xhigh or max effort, requests with between_tools return a 400 error"; closest
        return '"thinking.type.between_tools" is only supported with "output_config.effort" low, medium or high.'
    return None


def check_tool_choice(body: dict[str, Any], facts: ModelFacts) -> str | None:
    """[thinking] "Tool use with thinking only supports tool_choice auto or none"; verbatim (real 400 body)."""
    choice = body.get("tool_choice")
    forced = isinstance(choice, dict) and choice.get("type") in ("any", "tool")
    if forced and thinking_type(body) == "enabled":
        return "Thinking may not be enabled when tool_choice forces tool use."
    return None


def check_blocks(body: dict[str, Any], facts: ModelFacts) -> str | None:
    """Where thinking blocks may stand, and the tool-loop rule ([thinking] "Thinking with tool use")."""
    messages = body.get("messages") or []
    for i, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list) or not content:
            continue
        kinds = [b.get("type") for b in content if isinstance(b, dict)]
        if any(k in _THINKING_BLOCKS for k in kinds) and kinds[0] not in _THINKING_BLOCKS:
            # verbatim (anthropics/claude-code#20705)
            return (f"messages.{i}.content.0: If an assistant message contains any thinking blocks, the first "
                    f"block must be thinking or redacted_thinking. Found {kinds[0]}.")
    if not messages:
        return None
    last = messages[-1]
    last_content = last.get("content") if isinstance(last.get("content"), list) else []
    active = thinking_active(body, facts)
    if last.get("role") == "assistant" and last_content:
        if last_content[-1].get("type") == "thinking":
            return f"messages.{len(messages) - 1}: The final block in an assistant message cannot be `thinking`."
        for j, block in enumerate(last_content):
            if block.get("type") in _THINKING_BLOCKS and not active:
                # verbatim (tailcallhq/forgecode#1853)
                return (f"messages.{len(messages) - 1}.content.{j}: When thinking is disabled, an `assistant` "
                        "message in the final position cannot contain `thinking`. To use thinking blocks, enable "
                        "`thinking` in your request.")
    in_tool_loop = last.get("role") == "user" and any(b.get("type") == "tool_result" for b in last_content)
    if active and in_tool_loop and len(messages) >= 2 and messages[-2].get("role") == "assistant":
        content = messages[-2].get("content")
        first = content[0].get("type") if isinstance(content, list) and content else "text"
        if first not in _THINKING_BLOCKS:
            # [thinking] "the entire assistant turn should operate in a single thinking mode"; verbatim
            return (f"messages.{len(messages) - 2}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                    f"found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a "
                    "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
                    "recommend you include thinking blocks from previous turns. To avoid this requirement, disable "
                    f"`thinking`. Please consult our documentation at {_DOCS}")
    return None


# ----------------------------------------------------------------------------------------------- signatures


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _blocks(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _prefix_digest(body: dict[str, Any], upto_message: int, upto_block: int) -> str:
    """[prefix] "Each thinking block's reasoning is about exactly what came before it: system, tools, and every
    earlier message. That content is the block's prefix". Cache breakpoints move from turn to turn, so
    cache_control is not part of it."""
    messages = body.get("messages") or []
    earlier = [{"role": m.get("role"), "content": _blocks(m.get("content"))} for m in messages[:upto_message]]
    current = _blocks(messages[upto_message].get("content")) if upto_message < len(messages) else []
    earlier.append({"role": "assistant", "content": current[:upto_block]})  # the blocks before it in its message
    prefix = {"system": _blocks(body.get("system")), "tools": body.get("tools") or [], "messages": earlier}
    return hashlib.sha256(json.dumps(_strip(prefix), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _signature(thinking: str, facts: ModelFacts, prefix: str | None) -> str:
    if prefix is None:  # bound to the text only: the same form the scripted provider uses
        return "sig_" + hashlib.sha256(thinking.encode("utf-8")).hexdigest()[:40]
    bound = f"{facts.family}\x00{prefix}\x00{thinking}".encode()
    return "sig_" + hashlib.sha256(bound).hexdigest()[:40]


def sign(body: dict[str, Any], facts: ModelFacts, thinking: str) -> str:
    """The signature of a thinking block the fake answers `body` with (as block 0 of a new assistant message)."""
    messages = body.get("messages") or []
    prefix = _prefix_digest(body, len(messages), 0) if facts.preserved_thinking else None
    return _signature(thinking, facts, prefix)


def check_signatures(body: dict[str, Any], facts: ModelFacts) -> str | None:
    """Every thinking block sent back must carry the signature the fake gave it. [thinking] "signature ... used to
    verify that thinking blocks were generated by Claude"; [prefix] on preserved-thinking models the signature also
    binds the block to its model and to everything before it (system, tools, earlier messages, earlier blocks)."""
    binding = (body.get("thinking") or {}).get("block_binding") if isinstance(body.get("thinking"), dict) else None
    dropping = isinstance(binding, dict) and binding.get("prefix_mismatch_behavior") == "drop_block"
    for i, message in enumerate(body.get("messages") or []):
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        for j, block in enumerate(message["content"]):
            if block.get("type") != "thinking":
                continue
            signature, text = block.get("signature"), block.get("thinking")
            if not isinstance(signature, str) or not isinstance(text, str):
                missing = "signature" if not isinstance(signature, str) else "thinking"
                return f"messages.{i}.content.{j}.thinking.{missing}: Field required"  # closest (pydantic)
            if facts.preserved_thinking:
                if dropping or signature == _signature(text, facts, _prefix_digest(body, i, j)):
                    continue
                # [prefix] verbatim from the documentation's error example
                return (f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block. The block is bound to a "
                        "different conversation. Remove the block, or set "
                        '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".')
            if signature != _signature(text, facts, None):  # a block of another model fails here too
                return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block."  # verbatim
    return None

