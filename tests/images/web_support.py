"""A local HTTP server standing in for real hosts (the proxy's test mapping names it), recording what it got."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Site:
    """path -> (status, headers, body); `seen` holds (path, headers) of every request."""

    pages: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    seen: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    port: int = 0


@contextmanager
def serve(site: Site) -> Iterator[Site]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            site.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            status, headers, body = site.pages.get(self.path, (404, {"Content-Type": "text/plain"}, b"missing"))
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
