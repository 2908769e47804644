"""`web_fetch` through the domain proxy (issue 35), with a local HTTP server standing in for real hosts: the
proxy's test mapping (CODER_NETPROXY_HOSTS) resolves their names to it; nothing else the proxy would reach."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from images_support import picture
from web_support import Site, serve

from coder.config.layers import settings
from coder.netproxy.proxy import Access
from coder.sandbox.network import HOSTS_VAR, NetHooks
from coder.tools.base import ToolContext, ToolResult
from coder.tools.registry import builtin_tools

PAGE = b"""<html><head><title>Widget docs</title><style>body{color:red}</style></head><body>
<nav>Home | Blog</nav><main><h2>Install</h2><p>Run <code>pip install widget</code>.</p>
<ul><li>fast</li><li>small</li></ul><script>steal(document.cookie)</script></main></body></html>"""


@pytest.fixture
def site(monkeypatch: pytest.MonkeyPatch) -> Iterator[Site]:
    pages = {"/docs": (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE),
             "/moved": (302, {"Location": "/docs"}, b""),
             "/away": (302, {"Location": "http://evil.example.test:{port}/docs"}, b""),
             "/plot.png": (200, {"Content-Type": "image/png"}, picture(2400, 600)),
             "/big.txt": (200, {"Content-Type": "text/plain"}, b"word " * 20_000),
             "/tool.zip": (200, {"Content-Type": "application/zip"}, b"PK\x03\x04")}
    with serve(Site(pages)) as running:
        status, headers, body = running.pages["/away"]
        running.pages["/away"] = (status, {"Location": headers["Location"].format(port=running.port)}, body)
        monkeypatch.setenv(HOSTS_VAR, json.dumps({"docs.example.test": "127.0.0.1",
                                                  "evil.example.test": "127.0.0.1"}))
        yield running


def fetch(site: Site, path: str, tmp_path: Path, allowed: list[str], host: str = "docs.example.test",
          hooks: NetHooks | None = None, **extra: Any) -> ToolResult:
    tool = builtin_tools(["web_fetch"])["web_fetch"]
    services: dict[str, Any] = {"net_hooks": hooks} if hooks else {}
    ctx = ToolContext(tmp_path, tmp_path, "s1", threading.Event(), tmp_path / "state",
                      settings({"sandbox": {"allowed_domains": allowed}}), services=services)
    (tmp_path / "state").mkdir(exist_ok=True)
    try:
        return tool.run(tool.parse({"url": f"http://{host}:{site.port}{path}", **extra}), ctx)
    finally:
        tool.close()


def test_an_allowed_page_comes_back_as_markdown_without_scripts_and_without_our_secrets(
        site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-marker")
    seen: list[Access] = []
    result = fetch(site, "/docs", tmp_path, ["docs.example.test"], hooks=NetHooks(report=seen.append))
    assert not result.is_error, result.output
    assert "# Widget docs" in result.output and "## Install" in result.output
    assert "`pip install widget`" in result.output and "- fast" in result.output
    assert "steal" not in result.output and "color:red" not in result.output and "Home | Blog" not in result.output
    path, headers = site.seen[-1]
    assert path == "/docs" and headers["user-agent"].startswith("coder-web-fetch")
    assert not {"authorization", "x-api-key", "cookie"} & set(headers)
    assert "sk-ant-secret-marker" not in json.dumps(headers)
    assert [(a.host, a.allowed, a.source) for a in seen] == [("docs.example.test", True, "allowed_domains")]


def test_an_unlisted_host_is_refused_headless_and_nothing_reaches_it(site: Site, tmp_path: Path) -> None:
    result = fetch(site, "/docs", tmp_path, ["other.example.test"])
    assert result.is_error and "not in [sandbox] allowed_domains" in result.output
    assert site.seen == []
    control = fetch(site, "/docs", tmp_path, ["docs.example.test"])  # the same server, listed: reached
    assert not control.is_error and site.seen


def test_the_app_asks_about_an_unlisted_host_and_its_answer_decides(site: Site, tmp_path: Path) -> None:
    asked: list[str] = []
    hooks = NetHooks(ask=lambda host, port: asked.append(host) or "once")
    result = fetch(site, "/docs", tmp_path, [], hooks=hooks)
    assert asked == ["docs.example.test"] and not result.is_error
    refused = fetch(site, "/docs", tmp_path, [], hooks=NetHooks(ask=lambda host, port: "deny"))
    assert refused.is_error and len(site.seen) == 1


def test_redirects_are_followed_only_to_allowed_hosts(site: Site, tmp_path: Path) -> None:
    moved = fetch(site, "/moved", tmp_path, ["docs.example.test"])
    assert not moved.is_error and "redirected from" in moved.output and "## Install" in moved.output
    away = fetch(site, "/away", tmp_path, ["docs.example.test"])
    assert away.is_error and "evil.example.test" in away.output
    assert [p for p, _ in site.seen].count("/docs") == 1  # the redirect to the unlisted host never arrived


def test_loopback_and_private_addresses_are_refused_even_when_listed(site: Site, tmp_path: Path) -> None:
    result = fetch(site, "/docs", tmp_path, ["127.0.0.1", "localhost"], host="127.0.0.1")
    assert result.is_error and "127.0.0.1" in result.output and site.seen == []
    local = fetch(site, "/docs", tmp_path, ["localhost"], host="localhost")
    assert local.is_error and site.seen == []


def test_images_come_back_as_images_big_pages_are_cut_with_a_handle_and_binaries_refused(
        site: Site, tmp_path: Path) -> None:
    image = fetch(site, "/plot.png", tmp_path, ["docs.example.test"])
    assert not image.is_error and image.images and image.images[0].width == 1568
    big = fetch(site, "/big.txt", tmp_path, ["docs.example.test"], max_chars=2000)
    assert "page cut at 2,000 of 100,000 characters" in big.output and "output://" in big.output
    archive = fetch(site, "/tool.zip", tmp_path, ["docs.example.test"])
    assert archive.is_error and "application/zip" in archive.output
    bad = fetch(site, "/docs", tmp_path, ["docs.example.test"], host="user:pw@docs.example.test")
    assert bad.is_error and "credentials" in bad.output
