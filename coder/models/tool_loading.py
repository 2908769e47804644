"""One rule for the tools a session loads on demand, on every route and model: a tool the conversation loaded is
loaded in every request that carries that conversation (after a compaction, `/model`, a resume, a mode switch).

The history records each load on the tool search's result (`ToolResultBlock.tool_references`,
coder/tools/tool_search_tool.py); which tools are deferred is fixed when the session opens (`ToolSpec.deferred`).
How a request loads them depends on what its model takes (the model table's `defers_tools`):

- **Deferred loading** (Anthropic models the tool-search page lists, platform.claude.com/docs/en/agents-and-tools/
  tool-use/tool-search-tool "Model compatibility"): every deferred tool is declared with `defer_loading: true`, after
  the others, and a load is the result's `tool_reference` blocks, which the API expands in place; the tool list
  never changes, so the cached prefix holds. One exception: a reference that goes out as text loads nothing (a
  model that always thinks gets a call made without thinking, such as a compaction's reload or another model's
  call after `/model`, as text: coder.models.request_rules), so a tool loaded only that way is declared whole.
- **No deferred loading** (Chat Completions; Claude Opus 4.1 and earlier, which "don't support the tool search
  tool"; a model the table does not know): `defer_loading` is never sent; a deferred tool is left out until the
  conversation loads it, then appended after the others in the order of the loads (never reordered: each load
  costs one miss of the provider's prefix cache).

Nothing else decides it: the providers build their tool lists here, and the engine refuses to run a deferred tool
the conversation never loaded (coder/tools/tool_search_tool.py `not_loaded`), since the model has no definition
of it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from coder.models.types import Message, ToolSpec, loaded_tools


@dataclass
class Declared:
    """The tools of one request, in the order they are sent, and those sent marked `defer_loading`."""

    specs: list[ToolSpec]
    deferred: set[str] = field(default_factory=set)


def declare(specs: list[ToolSpec], messages: list[Message], defer: bool, whole: Collection[str] = ()) -> Declared:
    """The request's tools. `defer`: the route and model take deferred loading; `whole`: deferred tools the
    conversation loaded by a reference that is not sent as one (declared without the marker, in place)."""
    core = [s for s in specs if not s.deferred]
    if defer:
        rest = [s for s in specs if s.deferred]
        return Declared(core + rest, {s.name for s in rest if s.name not in whole})
    by_name = {s.name: s for s in specs if s.deferred}
    return Declared(core + [by_name[n] for n in loaded_tools(messages) if n in by_name])
