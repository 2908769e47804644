"""Input tokens the Messages API bills that a request body does not show, from Anthropic's documentation.

Two kinds, both counted by coder.models.wire.segments (so by the fake server's usage, the scripted provider, the
provider's local estimate and benchmarks/context.py alike):

- The tool-use system prompt: "When you use tools, we also automatically include a special system prompt for the
  model which enables tool use", its size by model and `tool_choice`; "the table assumes at least 1 tool is
  provided. If no tools are provided, then a tool choice of none uses 0 additional system prompt tokens" ([pricing]).
- Server-defined tools: the body declares `{"type": "bash_20250124", "name": "bash"}`, a few tokens, and the API
  puts the tool's own definition in the prompt instead: "The bash tool adds 245 input tokens to your API calls"
  ([bash]); the text editor tool needs 700 additional input tokens on the Claude 4.x and Sonnet 3.7 versions
  ([editor], [pricing] "Text editor tool"). The documented figure replaces the declaration's estimate.

Both sit where the API renders them, in the prompt before the system text and the messages, so they are part of
the cached prefix: written once with the tools and system prompt, read from the cache after. Where the table has no
row here (Claude 4.6 and later; the deprecated 3.5 models, whose rows could not be read in this session), the Claude
4.x figures apply: the latest documented ones.

The OpenAI route adds nothing: OpenAI documents that function definitions are injected into the system message and
billed as input tokens (which the estimate counts from the definitions themselves) and no fixed added prompt.

Sources (platform.claude.com/docs/en/):
  [pricing]  about-claude/pricing, "Tool use pricing": the tool-use system prompt token counts (Claude Opus 4.x,
             Sonnet 4.x, Haiku 4.5, Sonnet 3.7: 346 with tool_choice auto or none, 313 with any or tool) and "Text
             editor tool": 700 additional input tokens for text_editor_20250429 / 20250728 (Claude 4.x) and
             20250124 (Sonnet 3.7).
  [claude3]  docs.anthropic.com/en/docs/tool-use-pricing-and-tokens (the Claude 3 page): Opus 3 530 / 281, Sonnet 3
             159 / 235, Haiku 3 264 / 340 (auto / any, tool).
  [bash]     agents-and-tools/tool-use/bash-tool, "Pricing": "The bash tool adds 245 input tokens to your API calls."
  [editor]   agents-and-tools/tool-use/text-editor-tool, "Pricing": the same 700 tokens as [pricing].
"""

from __future__ import annotations

from typing import Any

#: (tool_choice auto or none, tool_choice any or tool) by model id prefix; any other model: CLAUDE_4
TOOL_PROMPT: tuple[tuple[str, tuple[int, int]], ...] = (
    ("claude-3-haiku", (264, 340)),  # [claude3]
    ("claude-3-opus", (530, 281)),
    ("claude-3-sonnet", (159, 235)),
)
CLAUDE_4 = (346, 313)  # [pricing]: every Claude 4.x model and Sonnet 3.7

#: a server-defined tool type -> the input tokens its definition adds ([bash], [editor], [pricing])
SERVER_TOOL_TOKENS: dict[str, int] = {
    "bash_20250124": 245,
    "bash_20241022": 245,
    "text_editor_20250728": 700,
    "text_editor_20250429": 700,
    "text_editor_20250124": 700,
    "text_editor_20241022": 700,  # not in today's table (a deprecated model's version): taken as its successors
}


def tool_prompt_tokens(body: dict[str, Any]) -> int:
    """The tool-use system prompt the API adds to `body`: none without tools, else by model and tool_choice."""
    if not body.get("tools"):
        return 0
    model = str(body.get("model", "")).lower()
    auto, forced = next((counts for prefix, counts in TOOL_PROMPT if model.startswith(prefix)), CLAUDE_4)
    choice = body.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, dict) else "auto"
    return forced if kind in ("any", "tool") else auto


def server_tool_tokens(tool: Any) -> int | None:
    """The documented tokens of a server-defined tool's definition, or None for a tool defined by its schema."""
    return SERVER_TOOL_TOKENS.get(str(tool.get("type", ""))) if isinstance(tool, dict) else None
