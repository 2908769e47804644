"""An HTTP client whose only way out is coder's domain proxy: what `web_fetch` uses (issue 35).

Going through the proxy's Unix socket, not around it, gives a fetch exactly the shell's rules with no second copy
of them: the user's lists and answers decide each host (an unlisted one is asked about in the app, refused
headless), private and loopback addresses are refused (only the user's `hosts` map, which tests use, names
them), and every host reached or refused is recorded as the shell's accesses are. A redirect is a new request
through the proxy, so it is followed only to a host the rules allow, and never from https down to http.

The request carries nothing of coder's: no API key, no cookie, no credentials from the environment (the stdlib
`http.client` over a socket we opened; no proxy or netrc variables are read). TLS is verified with the system's
certificates. Responses are read up to `max_bytes`.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from coder.netproxy.domains import canonical_host

USER_AGENT = "coder-web-fetch/1 (a coding agent reading a page for its user)"
REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5


class FetchError(Exception):
    """A fetch that got no page: refused by the rules, unreachable, a bad URL, too many redirects."""


@dataclass
class Page:
    url: str  # after redirects
    status: int
    content_type: str
    body: bytes
    truncated: bool
    redirects: list[str] = field(default_factory=list)


def fetch(socket_path: Path, url: str, *, max_bytes: int, timeout: float = 30.0,
          context: ssl.SSLContext | None = None) -> Page:
    """GET `url` through the proxy at `socket_path`, following up to MAX_REDIRECTS redirects."""
    seen: list[str] = []
    current = url
    while True:
        scheme, host, port, target = _parse(current)
        response, conn = _request(socket_path, scheme, host, port, target, timeout, context)
        try:
            location = response.getheader("Location")
            if response.status in REDIRECTS and location:
                following = urljoin(current, location)
                if len(seen) >= MAX_REDIRECTS:
                    raise FetchError(f"more than {MAX_REDIRECTS} redirects (last to {following})")
                if scheme == "https" and urlsplit(following).scheme == "http":
                    raise FetchError(f"{current} redirects from https down to http ({following}); not followed")
                seen.append(current)
                current = following
                continue
            body = response.read(max_bytes + 1)
            content_type = response.getheader("Content-Type", "") or ""
            return Page(current, response.status, content_type, body[:max_bytes], len(body) > max_bytes, seen)
        finally:
            conn.close()


def _parse(url: str) -> tuple[str, str, int, str]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise FetchError(f"{url!r}: only http and https URLs are fetched")
    if parts.username or parts.password:
        raise FetchError(f"{url!r}: credentials in the URL are not sent; remove them")
    host = canonical_host(parts.hostname or "")
    if host is None:
        raise FetchError(f"{url!r}: no valid host name")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise FetchError(f"{url!r}: {exc}") from exc
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return parts.scheme, host, port, target


def _request(socket_path: Path, scheme: str, host: str, port: int, target: str, timeout: float,
             context: ssl.SSLContext | None) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
    authority = host if port == (443 if scheme == "https" else 80) else f"{host}:{port}"
    conn = _ProxiedConnection(socket_path, host, port, timeout, tunnel=scheme == "https", context=context)
    # plain http goes to the proxy in absolute form; https in origin form inside the CONNECT tunnel
    path = f"http://{authority}{target}" if scheme == "http" else target
    try:
        conn.request("GET", path, headers={"Host": authority, "User-Agent": USER_AGENT, "Accept-Encoding": "identity",
                                           "Accept": "text/html, text/markdown, text/plain, application/json, "
                                                     "image/*;q=0.8, */*;q=0.5",
                                           "Connection": "close"})
        response = conn.getresponse()
    except _Refused as exc:
        conn.close()
        raise FetchError(str(exc)) from None
    except (OSError, http.client.HTTPException) as exc:
        conn.close()
        raise FetchError(f"{scheme}://{authority}: {exc}") from exc
    if response.getheader("X-Coder-Refusal"):  # the proxy refused plain http: its body says why
        message = response.read(4096).decode("utf-8", "replace").strip()
        conn.close()
        raise FetchError(message)
    return response, conn


class _Refused(OSError):
    pass


class _ProxiedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection whose socket is the proxy's Unix socket (a CONNECT tunnel for https)."""

    def __init__(self, socket_path: Path, host: str, port: int, timeout: float, *, tunnel: bool,
                 context: ssl.SSLContext | None) -> None:
        super().__init__(host, port, timeout=timeout)
        self._socket_path = socket_path
        self._tunnel_to = tunnel
        self._context = context or ssl.create_default_context()

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(str(self._socket_path))
        if self._tunnel_to:
            sock.sendall(f"CONNECT {self.host}:{self.port} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n\r\n"
                         .encode("ascii"))
            answer = http.client.HTTPResponse(sock, method="CONNECT")
            answer.begin()
            if answer.status != 200:
                message = answer.read(4096).decode("utf-8", "replace").strip() or answer.reason
                sock.close()
                raise _Refused(message)
            sock = self._context.wrap_socket(sock, server_hostname=self.host)
        self.sock = sock
