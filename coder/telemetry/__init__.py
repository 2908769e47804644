"""OpenTelemetry export of a session (opt-in): traces and metrics over OTLP, configured by the standard `OTEL_*`
variables (docs/telemetry.md). `[telemetry]` (coder/config/sections.py) says whether it is on and what it may
carry; `spans.py` turns the session's events into spans and metrics with the official SDK, which is imported
only when telemetry is on."""
