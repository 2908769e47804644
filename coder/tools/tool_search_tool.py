"""`tool_search`: rarely used tools and MCP servers' tools are loaded when the model asks for them.

Every tool definition a request carries is paid for on every request, and MCP servers bring dozens. A tool whose
contract says `deferred` (and every MCP tool) is therefore not in the model's tool list: the tool search's own
description names them (a built-in with one line, an MCP server's tools by name under the server), and a search
loads the best matches. The result records the loaded names (`data["tool_references"]`, carried into the history's
tool_result block), and each provider turns that into what its API understands:

- Anthropic: deferred tools are in `tools` with `defer_loading: true` from the first request on, and the result is
  `tool_reference` blocks that the API expands into the definitions at that place of the conversation. The tools,
  the system prompt and every earlier message stay byte for byte the same, so the cached prefix holds.
- OpenAI-compatible: chat completions has no deferred loading; a loaded tool is appended to the end of `tools`
  (never reordering the others), which costs one miss of the cached prefix per load.

Which tools are deferred is fixed when the session opens, so the tool list never changes during a session. A
deferred tool a permission mode wants (`loaded_in_modes`: `exit_plan` in plan mode) is loaded whole in a session
that opens in that mode (coder/tools/registry.py); a switch into that mode tells the model to load it with this
tool (coder/engine/mode_notice.py), so the load is the model's own call, made with its thinking. A resumed
session may send whole a tool its history loaded (the other route's editor, `deferred_on`; `exit_plan` resumed in
plan mode): the Anthropic request then leaves that `tool_reference` out (coder/models/request_rules.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Any

from coder.base.errors import ToolError
from coder.models.types import Message, loaded_tools
from coder.tools.base import Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params

MAX_RESULTS = 5
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class ToolSearchParams(Params):
    """tools/tool_search.json: keywords, or `select:NAME,...`."""

    query: str


class ToolSearchTool(Tool[ToolSearchParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract
        self.catalog: dict[str, Tool[Any]] = {}

    def attach(self, deferred: dict[str, Tool]) -> None:
        """The session's deferred tools: what a search looks through, and what the description lists."""
        self.catalog = dict(deferred)
        base = self.contract.description.split("\n\nLoadable tools:", 1)[0]
        self.contract = replace(self.contract, description=base + "\n\nLoadable tools:\n" + listing(self.catalog))

    def run(self, params: ToolSearchParams, ctx: ToolContext) -> ToolResult:
        query = params.query.strip()
        if not query:
            raise ToolError("give keywords, or select:NAME[,NAME...]")
        if query.startswith("select:"):
            wanted = [self._full_name(n.strip()) for n in query[len("select:"):].split(",") if n.strip()]
            unknown = [n for n in wanted if n not in self.catalog]
            if unknown:
                raise ToolError(f"no loadable tool named {', '.join(unknown)}; loadable: {', '.join(self.catalog)}")
            found = list(dict.fromkeys(wanted))
        else:
            found = search(self.catalog, query)
        if not found:
            return ToolResult(f"No loadable tool matches {query!r}. Loadable: {', '.join(self.catalog)}.")
        lines = [f"- {name}: {first_line(self.catalog[name].contract.description)}" for name in found]
        return ToolResult("Loaded (callable from your next step):\n" + "\n".join(lines),
                          data={"tool_references": found})

    def _full_name(self, name: str) -> str:
        """`name`, or the one loadable tool it ends (`read_file` for `mcp__fs__read_file`: the listing shows an MCP
        server's tools without their common prefix)."""
        if name in self.catalog:
            return name
        ends = [n for n in self.catalog if n.endswith("__" + name)]
        return ends[0] if len(ends) == 1 else name


def not_loaded(tools: dict[str, Tool], name: str, history: list[Message]) -> str | None:
    """Why the engine refuses a call to `name`, or None: a deferred tool the conversation never loaded has no
    definition the model could have read (coder/models/tool_loading.py), so its call is a guess at the input; the
    error says how to load it."""
    tool = tools.get(name)
    if tool is None or not tool.contract.deferred or name in loaded_tools(history):
        return None
    searcher = next((n for n, t in tools.items() if isinstance(t, ToolSearchTool)), None)
    how = f" Load it first: call {searcher} with query \"select:{name}\", then call it." if searcher else ""
    return f"{name} is not loaded, so its definition is not in your tools and the call did not run.{how}"


def search(catalog: dict[str, Tool], query: str) -> list[str]:
    """The best matches, at most MAX_RESULTS: a query word in the name counts 3, in the description or a
    parameter's name or description 1; ties keep the catalog's order. A match scoring under half the best is left
    out: every loaded definition is paid on each later request, and one common word ("add", "line") is noise."""
    words = set(_WORD.findall(query.lower()))
    scored = []
    for order, (name, tool) in enumerate(catalog.items()):
        contract = tool.contract
        in_name = set(_WORD.findall(name.lower()))
        params = contract.input_schema.get("properties") or {}
        text = " ".join([contract.description, *params, *(str(p.get("description", "")) for p in params.values()
                                                          if isinstance(p, dict))])
        in_text = set(_WORD.findall(text.lower()))
        score = sum(3 if w in in_name else 1 if w in in_text else 0 for w in words)
        if score:
            scored.append((-score, order, name))
    best = -min(scored)[0] if scored else 0
    return [name for score, _, name in sorted(scored)[:MAX_RESULTS] if -score * 2 >= best]


def first_line(description: str, width: int = 80) -> str:
    """What the tool does in a few words (this text is in every request): the description's first sentence, up to
    a colon that starts a list or a format, cut at a word within `width` characters (an MCP server's tag left out)."""
    text = " ".join(re.sub(r"^\[MCP server [^\]]*\]\s*", "", description.strip()).split("\n", 1)[0].split())
    sentence = re.split(r"(?<=[.!?])\s+(?=[A-Z`(])", text, maxsplit=1)[0].split(": ", 1)[0].rstrip(":")
    if len(sentence) <= width:
        return sentence
    return sentence[: width - 1].rsplit(" ", 1)[0].rstrip(",;") + "…"


def listing(catalog: dict[str, Tool]) -> str:
    """Built-in deferred tools with one line each; an MCP server's tools by name, one line per server, without
    the prefix they share (a server brings dozens, and this text is in every request)."""
    lines: list[str] = []
    servers: dict[str, list[str]] = {}
    for name, tool in catalog.items():
        server = getattr(tool, "server", None)
        if isinstance(server, str):
            servers.setdefault(server, []).append(name)
        else:
            lines.append(f"- {name}: {first_line(tool.contract.description)}")
    for server, names in servers.items():
        prefix = os.path.commonprefix(names) if len(names) > 1 else ""
        prefix = prefix[: prefix.rfind("__") + 2] if "__" in prefix else ""
        shown = ", ".join(n[len(prefix):] for n in names)
        lines.append(f"- MCP server {server} ({prefix}NAME): {shown}" if prefix else f"- MCP server {server}: {shown}")
    return "\n".join(lines)


def arrange(tools: dict[str, Tool]) -> dict[str, Tool]:
    """A session's tools in the order they are sent: the loaded ones, then the tool search (only when some tool
    is deferred, with those tools attached), then the deferred ones."""
    searchers = [t for t in tools.values() if isinstance(t, ToolSearchTool)]
    rest = {n: t for n, t in tools.items() if not isinstance(t, ToolSearchTool)}
    deferred = {n: t for n, t in rest.items() if t.contract.deferred}
    arranged = {n: t for n, t in rest.items() if not t.contract.deferred}
    if deferred and searchers:
        searchers[0].attach(deferred)
        arranged[searchers[0].contract.name] = searchers[0]
        arranged.update(deferred)
    else:  # nothing to load, or no tool to load it with: every tool is sent whole
        for name, tool in deferred.items():
            tool.contract = replace(tool.contract, deferred=False)
            arranged[name] = tool
    return arranged


