"""`web_fetch` (issue 35): read a URL through the sandbox's domain rules, HTML as Markdown.

The fetch runs on the host but leaves only through coder's domain proxy (coder/netproxy/client.py), so the
user's lists decide every host, a redirect included, and every access is recorded like the shell's; nothing of
coder's (API key, cookies) is sent. What comes back:

- HTML: the page's main part (`<main>`, else `<article>`, else `<body>`) without scripts, styles and navigation,
  converted to Markdown with markdownify (docs/decisions/35-images-and-web.md says why that library);
- text, Markdown, JSON, XML: as they are; an image: the image (coder/models/images.py);
- anything else (PDF, archives): refused with what it was.

The text is cut at `max_chars` (the whole page stays behind a read_output handle). On demand (deferred): the
definition costs nothing per request until the tool search loads it (docs/decisions/33-context-cost.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coder.base.errors import ConfigError, ToolError
from coder.base.schema import key
from coder.models.images import ImageRefused, prepare
from coder.netproxy.client import FetchError, Page, fetch
from coder.sandbox.network import close_fetch_proxy, fetch_proxy
from coder.store.outputs import save_output
from coder.tools.base import CallFacts, Tool, ToolContext, ToolContract, ToolResult, one_line
from coder.tools.params import Params

MAX_BYTES = 5 * 1024 * 1024  # read at most this much of a response
DEFAULT_CHARS = 30_000
TIMEOUT = 30.0
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml", "application/javascript",
              "application/x-yaml", "application/yaml", "application/toml")
DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "nav", "footer", "form")


@dataclass(frozen=True)
class WebFetchParams(Params):
    """tools/web_fetch.json."""

    url: str
    max_chars: int = key(DEFAULT_CHARS, at_least=1000)


class WebFetchTool(Tool[WebFetchParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract
        self._services: dict[str, Any] | None = None

    def facts(self, params: WebFetchParams) -> CallFacts:
        return CallFacts(f"web_fetch {one_line(params.url, 90)}", params.url, maskable=True)

    def run(self, params: WebFetchParams, ctx: ToolContext) -> ToolResult:
        url, limit = params.url, params.max_chars
        if not url.strip():
            raise ToolError("give the `url` to fetch (http:// or https://)")
        try:
            self._services = ctx.services
            proxy = fetch_proxy(ctx.services, ctx.config.sandbox)
        except ConfigError as exc:
            return ToolResult(f"web_fetch cannot run: {exc}", is_error=True)
        proxy.new_command()  # a "once" answer covers this fetch (and its redirects) only
        try:
            page = fetch(proxy.socket_path, url.strip(), max_bytes=MAX_BYTES, timeout=TIMEOUT)
        except FetchError as exc:
            return ToolResult(f"web_fetch {url}: {exc}", is_error=True, data={"url": url})
        return _result(page, limit, ctx)

    def close(self) -> None:
        close_fetch_proxy(self._services)


def _result(page: Page, limit: int, ctx: ToolContext) -> ToolResult:
    media = page.content_type.split(";")[0].strip().lower()
    head = f"[{page.url}: HTTP {page.status}, {media or 'no content type'}" + (
        f", redirected from {page.redirects[0]}" if page.redirects else "") + "]"
    data: dict[str, Any] = {"url": page.url, "status": page.status, "content_type": media, "bytes": len(page.body)}
    failed = page.status >= 400
    if media.startswith("image/"):
        try:
            image = prepare(page.body, page.url)
        except ImageRefused as exc:
            return ToolResult(f"{head}\n{exc}", is_error=True, data=data)
        return ToolResult(f"{head}\nimage, sent as {image.width}x{image.height}", failed, data=data, images=[image])
    if media and not media.startswith(TEXT_TYPES):
        return ToolResult(f"{head}\nnot text, HTML or an image ({len(page.body)} bytes); not shown", True, data=data)
    text = page.body.decode(_charset(page.content_type), errors="replace")
    if media in ("text/html", "application/xhtml+xml") or (not media and "<html" in text[:1000].lower()):
        text = html_to_markdown(text)
    if page.truncated:
        text += f"\n\n[the response was cut at {MAX_BYTES // (1024 * 1024)} MB]"
    if len(text) > limit:
        handle = save_output(ctx.state_dir, text)
        shown = text[:limit]
        line = shown.count("\n") + 1
        text = (f"{shown}\n\n[page cut at {limit:,} of {len(text):,} characters; the rest: read_output "
                f"handle={handle} start_line={line}]")
        data.update(truncated=True, output_handle=handle)
    return ToolResult(f"{head}\n{text}", failed, data=data)


def _charset(content_type: str) -> str:
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            name = value.strip().strip('"')
            try:
                "".encode(name)
            except LookupError:
                break
            return name
    return "utf-8"


def html_to_markdown(html: str) -> str:
    """The page's main part as Markdown: title first, scripts, styles and navigation gone."""
    # start-up time: BeautifulSoup and markdownify load only when a page is fetched
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(DROPPED_TAGS):
        tag.decompose()
    main = soup.find("main") or soup.find("article") or soup.body or soup
    try:
        text = MarkdownConverter(heading_style="ATX", bullets="-", code_language="").convert_soup(main)
    except RecursionError:  # markdownify recurses per nesting level: a page 3,000 elements deep is read as text
        text = "[the page is nested too deeply to convert to Markdown: its text only]\n\n" + main.get_text(
            "\n", strip=True)
    lines = [line.rstrip() for line in text.splitlines()]
    compact: list[str] = []
    for line in lines:  # at most one blank line in a row
        if line or (compact and compact[-1]):
            compact.append(line)
    body = "\n".join(compact).strip()
    return f"# {title}\n\n{body}" if title and not body.startswith("# ") else body
