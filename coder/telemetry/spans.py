"""A session's events as OpenTelemetry spans and metrics, exported with the official SDK over OTLP.

Spans (one trace per session):
- `coder.session`: from SessionStart to SessionEnd (session id, model, mode, version, turns, cost);
- `coder.turn`, its child, one per user turn (the prompt's length; its text only with `log_prompts`; the reason it
  ended, requests made);
- `chat MODEL`, a child of the turn, one per model request (OpenTelemetry's GenAI names: `gen_ai.request.model`,
  `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`; cache reads and writes, `coder.cost_usd`), timed from
  the end of the step before (the prompt, or the last tool result) to the answer's usage;
- `tool NAME`, a child of the turn, one per tool call (its outcome: ok, error, denied; duration; the input only
  with `log_tool_details`).
Metrics (the names Claude Code exports, under `coder.`): `coder.session.count`, `coder.token.usage` (by `type`:
input, output, cacheRead, cacheCreation), `coder.cost.usage` (USD), `coder.tool.calls` (by tool and outcome),
`coder.tool.duration` (seconds).

The SDK is imported here, and this module only when telemetry is on (coder/engine/builder.py), so `coder
--version` and a session without telemetry never load it.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

from coder import __version__
from coder.base import events as ev
from coder.base.errors import ConfigError
from coder.config.sections import TelemetrySettings

DETAIL_CHARS = 1000


def _exporter(signal: str) -> Any:
    """The exporter `OTEL_<SIGNAL>_EXPORTER` names (otlp by default, console, none) for "traces" or "metrics",
    over the protocol `OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL` names (http/protobuf
    by default, grpc). Endpoint, headers, timeout and compression the exporter reads from the environment."""
    kind = os.environ.get(f"OTEL_{signal.upper()}_EXPORTER", "otlp").strip().lower()
    if kind == "none":
        return None
    if kind == "console":
        return ConsoleSpanExporter() if signal == "traces" else ConsoleMetricExporter()
    if kind != "otlp":
        raise ConfigError(f"OTEL_{signal.upper()}_EXPORTER={kind!r}: coder exports with otlp, console or none.")
    protocol = (os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
                or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip().lower()
    if protocol == "grpc":
        # start-up time: only the chosen protocol's exporter loads (grpc's is a large library)
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans

        return GrpcSpans() if signal == "traces" else GrpcMetrics()
    if protocol != "http/protobuf":
        raise ConfigError(f"OTLP protocol {protocol!r}: coder exports over http/protobuf or grpc.")
    # start-up time: only the chosen protocol's exporter loads
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter() if signal == "traces" else OTLPMetricExporter()


class SessionTelemetry:
    """Watches one session's events (the builder hands it every event it records) and exports them."""

    def __init__(self, settings: TelemetrySettings) -> None:
        self.settings = settings
        attributes = {"service.version": __version__}
        if not os.environ.get("OTEL_SERVICE_NAME") and "service.name=" not in os.environ.get(
                "OTEL_RESOURCE_ATTRIBUTES", ""):
            attributes["service.name"] = "coder"  # the user's OTEL_SERVICE_NAME wins
        resource = Resource.create(attributes)
        self.tracer_provider = TracerProvider(resource=resource)
        spans = _exporter("traces")
        if spans is not None:
            self.tracer_provider.add_span_processor(BatchSpanProcessor(spans))
        metrics = _exporter("metrics")
        readers = [PeriodicExportingMetricReader(metrics)] if metrics is not None else []
        self.meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        self.tracer = self.tracer_provider.get_tracer("coder", __version__)
        meter = self.meter_provider.get_meter("coder", __version__)
        self.sessions = meter.create_counter("coder.session.count", description="Sessions started")
        self.tokens = meter.create_counter("coder.token.usage", unit="tokens", description="Tokens used")
        self.cost = meter.create_counter("coder.cost.usage", unit="USD", description="Cost of model requests")
        self.tool_calls = meter.create_counter("coder.tool.calls", description="Tool calls by outcome")
        self.tool_duration = meter.create_histogram("coder.tool.duration", unit="s", description="Tool call time")
        self.model = ""
        self.session: Any = None
        self.turn: Any = None
        self.requests = 0
        self.step_started = time.time_ns()
        self.tools: dict[str, Any] = {}
        self.closed = False

    def _context(self, parent: Any) -> Any:
        return trace.set_span_in_context(parent) if parent is not None else None

    def observe(self, event: ev.Event) -> None:
        """One event of the session, in the order the session emits them; never raises into the session."""
        try:
            self._observe(event)
        except Exception:  # noqa: BLE001 - telemetry must never break a session
            pass

    def _observe(self, event: ev.Event) -> None:
        now = time.time_ns()
        if isinstance(event, ev.SessionStart):
            self.model = event.model
            self.session = self.tracer.start_span("coder.session", start_time=now, attributes={
                "session.id": event.session_id, "coder.model": event.model, "coder.permission_mode": event.mode,
                "coder.sandbox": event.sandbox, "coder.resumed": event.resumed, "coder.version": event.version})
            self.sessions.add(1, {"model": event.model})
        elif isinstance(event, ev.UserMessage):
            self._end_turn("superseded", now)
            attributes: dict[str, Any] = {"coder.prompt.length": len(event.text)}
            if self.settings.log_prompts:
                attributes["coder.prompt"] = event.text
            self.turn = self.tracer.start_span("coder.turn", self._context(self.session), start_time=now,
                                               attributes=attributes)
            self.requests = 0
            self.step_started = now
        elif isinstance(event, ev.UsageEvent):
            self._request(event, now)
        elif isinstance(event, ev.ToolCallRequested):
            attributes = {"coder.tool": event.tool, "gen_ai.tool.call.id": event.id}
            if self.settings.log_tool_details:
                attributes["coder.tool.input"] = json.dumps(event.input, ensure_ascii=False)[:DETAIL_CHARS]
            self.tools[event.id] = self.tracer.start_span(f"tool {event.tool}", self._context(self.turn or
                                                                                              self.session),
                                                          start_time=now, attributes=attributes)
        elif isinstance(event, ev.ToolCallDenied):
            span = self.tools.get(event.id)
            if span is not None:
                span.set_attribute("coder.tool.denied_by", event.by)
        elif isinstance(event, ev.ToolCallFinished):
            self._tool_done(event, now)
        elif isinstance(event, ev.TurnEnd):
            self._end_turn(event.reason, now)
        elif isinstance(event, ev.SessionEnd):
            self._end_turn("session end", now)
            if self.session is not None:
                self.session.set_attributes({"coder.turns": event.turns, "coder.cost_usd": event.cost_usd,
                                             "coder.end_reason": event.reason})
                self.session.end(end_time=now)
                self.session = None
            self.close()

    def _request(self, event: ev.UsageEvent, now: int) -> None:
        self.requests += 1
        span = self.tracer.start_span(f"chat {self.model}", self._context(self.turn or self.session),
                                      start_time=min(self.step_started, now), attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": self.model,
            "gen_ai.usage.input_tokens": event.input_tokens, "gen_ai.usage.output_tokens": event.output_tokens,
            "coder.usage.cache_read_tokens": event.cache_read_tokens,
            "coder.usage.cache_write_tokens": event.cache_write_tokens,
            "coder.cost_usd": event.cost_usd, "coder.cost_known": event.cost_known})
        span.end(end_time=now)
        self.step_started = now
        labels = {"model": self.model}
        for kind, count in (("input", event.input_tokens), ("output", event.output_tokens),
                            ("cacheRead", event.cache_read_tokens), ("cacheCreation", event.cache_write_tokens)):
            self.tokens.add(count, {**labels, "type": kind})
        self.cost.add(event.cost_usd, labels)

    def _tool_done(self, event: ev.ToolCallFinished, now: int) -> None:
        span = self.tools.pop(event.id, None)
        denied = span is not None and span.attributes.get("coder.tool.denied_by") is not None
        outcome = "denied" if denied else "error" if event.is_error else "ok"
        if span is not None:
            span.set_attributes({"coder.tool.outcome": outcome, "coder.tool.duration_s": event.duration_s,
                                 "coder.tool.files_changed": len(event.files_changed)})
            if outcome != "ok":
                span.set_status(trace.Status(trace.StatusCode.ERROR, outcome))
            span.end(end_time=now)
        self.tool_calls.add(1, {"tool": event.tool, "outcome": outcome})
        self.tool_duration.record(event.duration_s, {"tool": event.tool})
        self.step_started = now

    def _end_turn(self, reason: str, now: int) -> None:
        if self.turn is None:
            return
        for span in self.tools.values():  # calls that never finished (an interrupt)
            span.end(end_time=now)
        self.tools.clear()
        self.turn.set_attributes({"coder.turn.reason": reason, "coder.turn.requests": self.requests})
        self.turn.end(end_time=now)
        self.turn = None

    def close(self) -> None:
        """Flush and stop the exporters (at session end; again at exit is harmless)."""
        if self.closed:
            return
        self.closed = True
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
