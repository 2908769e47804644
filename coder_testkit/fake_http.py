"""How the fake model server (coder_testkit/fake_server.py) writes a response: JSON with its request id, the APIs'
error bodies, a server-sent event stream in HTTP chunks that an injected fault cuts, overloads or stalls half-way,
and a connection dropped mid-response as a proxy or a crashed backend would. What to answer is the server's.
"""

from __future__ import annotations

import json
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from coder_testkit import fake_responses as fr


class ResponseWriter(BaseHTTPRequestHandler):
    """The writing half of the server's request handler; `request_id` is the handler's."""

    def _request_id(self) -> str:
        raise NotImplementedError

    def _json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", self._request_id())
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, openai: bool, retry_after: float | None = None) -> None:
        payload = fr.error_body(status, message, openai, self._request_id())
        extra = {}
        if retry_after is not None:
            extra["retry-after"] = f"{retry_after:g}"
        if status >= 500 or status == 429:
            extra["x-should-retry"] = "true"
        self._json(status, payload, extra)

    def _stream(self, payloads: list[str], broken: str | None, stall: float, error_event: str) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", self._request_id())
        self.end_headers()
        half = max(1, len(payloads) // 2)
        try:
            for index, payload in enumerate(payloads):
                if index == half:
                    if broken == "cut":
                        return self._abort()
                    if broken == "overload":
                        data = error_event.encode("utf-8")
                        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n")
                        self.wfile.flush()
                        return
                    if stall:
                        time.sleep(stall)
                data = payload.encode("utf-8")
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away (cancelled); nothing to do

    def _cut_json(self, payload: Any) -> None:
        data = json.dumps(payload).encode("utf-8") * 4
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self._abort()

    def _abort(self) -> None:
        """Drop the connection mid-response, as a proxy or a crashed backend would."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
