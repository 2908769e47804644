"""A fake model server on 127.0.0.1 that serves a script (see coder.models.script) over HTTP.

It speaks the Anthropic Messages API (POST /v1/messages, JSON and SSE streaming, tool_use, thinking, prompt
caching emulated; POST /v1/messages/count_tokens) and OpenAI chat completions (POST /v1/chat/completions, JSON
and SSE, tool_calls) from the same script, so tests drive the real SDKs end to end and the agent's requests can
be recorded and measured.

It is as strict as the real APIs: every request is checked against the rule table of coder_testkit.fake_rules
(written from the documentation, one rule per documented constraint, each with its source, sharing no code with
the client) and a violation is answered with HTTP 400 and the real error body (`{"type": "error", "error": {"type":
"invalid_request_error", "message": ...}, "request_id": ...}`, or OpenAI's `{"error": {"message", "type", "param",
"code"}}`), which the SDKs raise as BadRequestError; a body over the documented 32 MB gets 413 request_too_large.
There is no lenient mode: a request the real API refuses must fail here too. The model id picks the documented
facts (coder_testkit.fake_rules.facts): output limit, context window (unless `context_window` is given),
thinking kind; models that think by default or always answer with a thinking block even when not asked. Tool-use
ids are the script's deterministic ones (the same as the scripted provider's) unless one of them is already in the
request's history (a session resumed against a restarted server): then they get a random per-server part, so they
stay unique as real ids do.

Usage counts are deterministic (coder.models.wire): input = sum over tools, system blocks and message blocks
of ceil(chars / 4). Caching: a request's prefix up to a cache_control breakpoint that an earlier request sent
counts as cache_read_input_tokens, the rest up to its last breakpoint as cache_creation_input_tokens, the
remainder as input_tokens. (No minimum cacheable length, no expiry.)

Command line:

    python -m coder_testkit.fake_server --script S.json [--port 0] [--record R.jsonl] [--fault SPEC ...]
                                       [--context-window N]

prints `http://127.0.0.1:PORT` as the first stdout line, then serves until killed.

Faults (`--fault SPEC`, repeatable; `faults=[...]` in Python): `WHAT@WHEN[:retry-after=SECONDS]`
  WHAT  a status code (`429`, `500`, `503`, `529` = overloaded_error, `400`, `401`, ...), `cut` (the response
        stops in the middle: an SSE stream after half of its events, a JSON body after half of its bytes),
        `overload` (an SSE stream sends half of its events, then an `error` event with overloaded_error, as the
        real API does when it is overloaded after answering 200; a JSON request gets a 529),
        `delay=SECONDS` (wait before answering, then answer normally), `stall=SECONDS` (pause in the middle of
        the stream, then finish it).
  WHEN  the number of the generation request (1-based, counting /v1/messages and /v1/chat/completions, not
        count_tokens): `2`, a range `2-4`, `3+` (from 3 on), or `*` (every request).
  e.g.  `429@2:retry-after=1`, `500@1`, `529@3`, `cut@4`, `delay=1.5@1`, `500@*`.
A request answered by a status fault, cut or overload does not consume a turn of the script; delay and stall
do not change the answer.

The OpenAI route lives under the same base URL: point the openai SDK (or OPENAI_BASE_URL) at `<base_url>/v1`.
Its usage reports automatic prefix caching as prompt_tokens_details.cached_tokens.

Python API (tests):

    with FakeServer("script.json", record="req.jsonl", faults=["429@1:retry-after=0.1"]) as srv:
        client = anthropic.Anthropic(base_url=srv.base_url, api_key="x")
        ...
        srv.requests   # the bodies of the generation requests received, in order (faulted ones too)
        srv.records    # every request received: {"n", "path", "headers", "body"}

The server sets TCP_NODELAY on its connections: without it every SDK request waited ~40 ms on delayed ACKs.
"""

from __future__ import annotations

import argparse
import json
import secrets
import signal
import socket
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from coder.base.errors import CoderError
from coder.models.script import (
    Answer,
    Script,
    ScriptCursor,
    anthropic_match_text,
    load_script,
    openai_match_text,
)
from coder.models.wire import PrefixCache, input_tokens
from coder_testkit import fake_responses as fr
from coder_testkit.fake_faults import Fault, parse_fault
from coder_testkit.fake_http import ResponseWriter
from coder_testkit.fake_rules import Refusal, check_chat, check_messages, facts_for

_STATUS_TEXT = {429: "Rate limit exceeded (injected fault).", 529: "Overloaded (injected fault).",
                500: "Internal server error (injected fault)."}
_SECRET_HEADERS = {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"}
#: https://platform.claude.com/docs/en/api/errors "Request size limits": 32 MB for Messages and token counting
MAX_REQUEST_BYTES = 32 * 1024 * 1024


class FakeServer:
    """The server in a background thread; a context manager."""

    def __init__(self, script: str | Path | dict[str, Any] | Script, *, record: str | Path | None = None,
                 faults: list[str | Fault] | None = None, port: int = 0, host: str = "127.0.0.1",
                 context_window: int | None = None, verbose: bool = False) -> None:
        self.script = script if isinstance(script, Script) else load_script(script)
        self.cursor = ScriptCursor(self.script)
        self.faults = [f if isinstance(f, Fault) else parse_fault(f) for f in faults or []]
        self.record_path = Path(record) if record else None
        self.context_window = context_window
        self.verbose = verbose
        self.records: list[dict[str, Any]] = []
        self.anthropic_cache = PrefixCache()
        self.openai_cache = PrefixCache(every_segment=True)
        self.id_nonce = secrets.token_hex(4)  # tool-use ids unique across servers (restarts, resumes)
        self.waiting: dict[str, Any] = {}  # server tool calls left waiting -> their scripted results
        self._count = 0
        self._lock = threading.Lock()
        self._httpd = _HTTPServer((host, port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.records if r["n"] is not None]

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-model-server", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._httpd.serve_forever(poll_interval=0.2)

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------------------------- used by the handler

    def admit(self, path: str, headers: dict[str, str], body: Any, generation: bool) -> tuple[int | None,
                                                                                               list[Fault]]:
        """Number and record the request; return its number and the faults that apply to it."""
        with self._lock:
            number = None
            if generation:
                self._count += 1
                number = self._count
            entry = {"n": number, "path": path, "body": body,
                     "headers": {k.lower(): v for k, v in headers.items() if k.lower() not in _SECRET_HEADERS}}
            self.records.append(entry)
            if self.record_path is not None:
                with self.record_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
        faults = [f for f in self.faults if number is not None and f.applies(number)]
        return number, faults

    def answer(self, system: str, last_user: str, advance: bool, taken: set[str]) -> Answer:
        """The next scripted answer; unnamed tool-use ids that the history (`taken`) already holds are made
        unique to this server."""
        answer = self.cursor.next(system, last_user, advance=advance)
        if any(x in taken or "call_" + x.removeprefix("toolu_") in taken for x in answer.tool_ids):
            answer.tool_ids = [call.id or f"toolu_{self.id_nonce}_{answer.index:04d}_{i}"
                               for i, call in enumerate(answer.turn.tool_calls)]
        return answer


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    fake: FakeServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a cancelled stream, a closed pool) is normal here; other errors are printed."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _Handler(ResponseWriter):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer  # type: ignore[assignment]  # ours: the base class declares any socketserver server

    def setup(self) -> None:
        super().setup()
        # small writes (headers, then each SSE event) must not wait for delayed ACKs (Nagle: +40 ms a request)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.fake.verbose:
            super().log_message(format, *args)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("", "/health"):
            self._json(200, {"status": "ok", "turns_left": self.server.fake.cursor.remaining})
        else:
            self._error(404, f"Not found: {self.path}", openai=False)

    def do_POST(self) -> None:
        fake = self.server.fake
        path = self.path.split("?")[0].rstrip("/")
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if length > MAX_REQUEST_BYTES and path in ("/v1/messages", "/v1/messages/count_tokens"):
            return self._error(413, "Request exceeds the maximum allowed number of bytes.", False)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        generation = path in ("/v1/messages", "/v1/chat/completions")
        number, faults = fake.admit(path, dict(self.headers.items()), body, generation)
        openai = path == "/v1/chat/completions"
        if not generation and path != "/v1/messages/count_tokens":
            return self._error(404, f"Not found: {path}", openai)
        if body is None:
            return self._error(400, "request body is not valid JSON", openai)
        for fault in faults:
            if fault.kind == "delay":
                time.sleep(fault.seconds)
        for fault in faults:
            if fault.kind == "status":
                message = _STATUS_TEXT.get(fault.status, f"Injected HTTP {fault.status}.")
                return self._error(fault.status, message, openai, fault.retry_after)
        if path == "/v1/messages/count_tokens":
            refusal = check_messages(body, count_tokens=True, headers=dict(self.headers.items()))
            if refusal:
                return self._refuse(refusal, openai=False)
            return self._json(200, {"input_tokens": input_tokens(body)})
        broken = next((f.kind for f in faults if f.kind in ("cut", "overload")), None)
        if broken == "overload" and not body.get("stream"):
            return self._error(529, _STATUS_TEXT[529], openai)
        stall = sum(f.seconds for f in faults if f.kind == "stall")
        assert number is not None
        if openai:
            self._chat_completions(body, number, broken, stall)
        else:
            self._messages(body, number, broken, stall)

    def _messages(self, body: dict[str, Any], number: int, broken: str | None, stall: float) -> None:
        fake = self.server.fake
        refusal = check_messages(body, headers=dict(self.headers.items()))
        if refusal:
            return self._refuse(refusal, openai=False)
        facts = facts_for(body["model"])
        window = fake.context_window or (facts.context_window if facts.known else None)
        total = input_tokens(body)
        if window is not None and total > window:
            # the real API's answer, verbatim
            return self._error(400, f"prompt is too long: {total} tokens > {window} maximum", False)
        if broken == "cut" and not body.get("stream"):
            return self._cut_json(fr.anthropic_error("api_error", "cut"))
        system, last_user = anthropic_match_text(body)
        taken = {b.get("id") for m in body["messages"] if isinstance(m.get("content"), list) for b in m["content"]
                 if b.get("type") == "tool_use"}
        answer = fake.answer(system, last_user, broken is None, taken)
        reply = fr.anthropic_reply(answer, body, fake.anthropic_cache, fake.waiting)
        model = body["model"]
        if not body.get("stream"):
            return self._json(200, fr.anthropic_message(reply, model, number))
        events = fr.anthropic_events(reply, model, number)
        payloads = [f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n" for name, data in events]
        error = fr.anthropic_error("overloaded_error", "Overloaded")
        self._stream(payloads, broken, stall, f"event: error\ndata: {json.dumps(error)}\n\n")

    def _chat_completions(self, body: dict[str, Any], number: int, broken: str | None, stall: float) -> None:
        fake = self.server.fake
        refusal = check_chat(body)
        if refusal:
            return self._refuse(refusal, openai=True)
        if fake.context_window is not None:
            total = sum(seg.tokens for seg in fr.openai_segments(body))
            if total > fake.context_window:
                return self._json(400, {"error": {
                    "message": f"This model's maximum context length is {fake.context_window} tokens. However, "
                               f"your messages resulted in {total} tokens.",
                    "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        if broken == "cut" and not body.get("stream"):
            return self._cut_json({"error": {"message": "cut"}})
        system, last_user = openai_match_text(body)
        taken = {str(c.get("id")) for m in body["messages"] for c in m.get("tool_calls") or [] if isinstance(c, dict)}
        answer = fake.answer(system, last_user, broken is None, taken)
        reply = fr.openai_reply(answer, body, fake.openai_cache)
        model = body["model"]
        if not body.get("stream"):
            return self._json(200, fr.openai_completion(reply, model, number))
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = fr.openai_chunks(reply, model, number, include_usage)
        payloads = [f"data: {json.dumps(c, ensure_ascii=False)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
        error = {"error": {"message": "Overloaded", "type": "server_error", "code": "overloaded"}}
        self._stream(payloads, broken, stall, f"data: {json.dumps(error)}\n\n")

    def _refuse(self, refusal: Refusal, openai: bool) -> None:
        """The real API's error body for a broken request rule."""
        self._json(refusal.status, fr.error_body(refusal.status, refusal.message, openai, self._request_id(),
                                                 refusal.error_type, refusal.param, refusal.code))

    def _request_id(self) -> str:
        return f"req_fake_{self.server.fake._count:06d}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coder_testkit.fake_server",
                                     description="Serve a model script over the Anthropic / OpenAI HTTP APIs.")
    parser.add_argument("--script", required=True, help="script file (JSON or YAML)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = any free port)")
    parser.add_argument("--record", help="append every request as one JSON line to this file")
    parser.add_argument("--fault", action="append", default=[], metavar="SPEC",
                        help="inject a fault, e.g. 429@2:retry-after=1, 500@1, 529@3, cut@4, delay=1.5@1")
    parser.add_argument("--context-window", type=int, help="answer 'prompt is too long' above this many tokens")
    parser.add_argument("--verbose", action="store_true", help="log requests to stderr")
    args = parser.parse_args(argv)
    try:
        server = FakeServer(args.script, record=args.record, faults=args.fault, port=args.port,
                            context_window=args.context_window, verbose=args.verbose)
    except CoderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(server.base_url, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server._httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
