"""A loopback OTLP/HTTP receiver for the tests, written with `opentelemetry-proto`'s protobuf classes (the
OpenTelemetry Collector binary cannot be installed here): it accepts what an OTLP exporter POSTs to `/v1/traces`
and `/v1/metrics` on 127.0.0.1, decodes it, and keeps the spans and the metric names it received."""

from __future__ import annotations

import gzip
import http.server
import threading
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


@dataclass
class Received:
    spans: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, list[Any]] = field(default_factory=dict)
    resources: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class OTLPReceiver:
    def __init__(self) -> None:
        self.received = Received()
        received = self.received

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path == "/v1/traces":
                    request = ExportTraceServiceRequest.FromString(body)
                    with received.lock:
                        for rs in request.resource_spans:
                            received.resources.append({a.key: _value(a.value) for a in rs.resource.attributes})
                            for ss in rs.scope_spans:
                                for s in ss.spans:
                                    received.spans.append({
                                        "name": s.name, "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                                        "parent": s.parent_span_id.hex(), "start": s.start_time_unix_nano,
                                        "end": s.end_time_unix_nano, "status": s.status.code,
                                        "attributes": {a.key: _value(a.value) for a in s.attributes}})
                    reply = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    request = ExportMetricsServiceRequest.FromString(body)
                    with received.lock:
                        for rm in request.resource_metrics:
                            for sm in rm.scope_metrics:
                                for m in sm.metrics:
                                    received.metrics.setdefault(m.name, []).append(m)
                    reply = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> OTLPReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
