"""`web_search` (issue 35): on the Anthropic route the API's own web search tool; elsewhere a backend the user
names in the config.

- Anthropic route (a model the model table says takes `web_search_20250305`): the tool is declared as the server
  tool with `max_uses` and the user's domain lists (`allowed_domains` or `blocked_domains`, never both); the API
  runs the searches and the answer holds them (coder/models/types.py ServerToolBlock). A per-session cap counts
  the searches in the model's answers; past it the tool is no longer declared.
- Other routes: a plain tool whose calls go to `[web] search_backend`, a URL with `{query}` answering JSON in
  SearXNG's shape (`results: [{url, title, content}]`), fetched through the same domain proxy as web_fetch. No
  backend configured: the tool is not offered there at all (a tool that can only fail costs tokens for nothing).
- `[web] search = "off"` turns it off (the default is on); CODER_WEB_SEARCH=on/off is its environment variable
  (coder/config/sections.py WebSettings), and `coder batch` sets it off unless the user's environment already
  says CODER_WEB_SEARCH=on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote_plus

from coder.base.errors import ConfigError, ToolError
from coder.config.sections import Config
from coder.models.types import Message, ServerToolBlock, ToolSpec
from coder.models.wire import server_tool_supported
from coder.netproxy.client import FetchError, fetch
from coder.sandbox.network import close_fetch_proxy, fetch_proxy
from coder.tools.base import CallFacts, Tool, ToolContext, ToolContract, ToolResult, one_line
from coder.tools.params import Params

MAX_USES = 5  # per request
SESSION_CAP = 25
MAX_RESULTS = 8


@dataclass(frozen=True)
class WebSearchParams(Params):
    """tools/web_search.json."""

    query: str


class WebSearchTool(Tool[WebSearchParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract
        self.enabled = True
        self.model = ""
        self.backend = ""
        self.max_uses = MAX_USES
        self.cap = SESSION_CAP
        self.domains: dict[str, list[str]] = {}
        self.used = 0
        self._services: dict[str, Any] | None = None

    def configure(self, config: Config, model: str) -> None:
        web = config.web
        self.enabled, self.model = web.search == "on", model
        self.backend = web.search_backend
        self.max_uses, self.cap = web.search_max_uses, web.search_session_cap
        self.domains = {k: v for k, v in (("allowed_domains", web.search_allowed_domains),
                                          ("blocked_domains", web.search_blocked_domains)) if v}

    @property
    def server_side(self) -> bool:
        provider, _, model = self.model.partition(":")
        return provider == "anthropic" and bool(self.contract.anthropic_type) and server_tool_supported(
            str(self.contract.anthropic_type), model, self.contract.name)

    def spec(self) -> ToolSpec | None:
        left = self.cap - self.used
        if not self.enabled or left <= 0:
            return None
        spec = self.contract.spec()
        if self.server_side:
            return replace(spec, server_params={"max_uses": min(self.max_uses, left), **self.domains})
        return replace(spec, anthropic_type=None) if self.backend else None

    def saw_answer(self, message: Message) -> None:
        self.used += sum(1 for b in message.content if isinstance(b, ServerToolBlock)
                         and b.data.get("type") == "server_tool_use" and b.data.get("name") == self.contract.name)

    def facts(self, params: WebSearchParams) -> CallFacts:
        return CallFacts(f"web_search {one_line(params.query, 90)}", params.query)

    def run(self, params: WebSearchParams, ctx: ToolContext) -> ToolResult:
        """A search through `[web] search_backend` (the routes without the API's own search)."""
        query = params.query
        if not query.strip():
            raise ToolError("give the `query` to search for")
        if not self.backend:
            raise ToolError("web search has no backend on this route: set [web] search_backend")
        if self.used >= self.cap:
            raise ToolError(f"this session's {self.cap} web searches are used up ([web] search_session_cap)")
        self.used += 1
        try:
            self._services = ctx.services
            proxy = fetch_proxy(ctx.services, ctx.config.sandbox)
            proxy.new_command()
            page = fetch(proxy.socket_path, self.backend.replace("{query}", quote_plus(query)),
                         max_bytes=2 * 1024 * 1024)
        except (ConfigError, FetchError) as exc:
            return ToolResult(f"web_search: {exc}", is_error=True)
        try:
            results = json.loads(page.body.decode("utf-8", "replace")).get("results") or []
        except (json.JSONDecodeError, AttributeError):
            return ToolResult(f"web_search: the backend answered HTTP {page.status} without JSON results", True)
        lines = [f"{n}. {r.get('title', '')}\n   {r.get('url', '')}\n   {one_line(str(r.get('content', '')), 300)}"
                 for n, r in enumerate(results[:MAX_RESULTS], 1) if isinstance(r, dict)]
        return ToolResult("\n".join(lines) or "no results", data={"results": len(lines)})

    def close(self) -> None:
        close_fetch_proxy(self._services)
