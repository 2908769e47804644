"""Starting a session's telemetry: nothing at all when it is off, the SDK only when it is on."""

from __future__ import annotations

import atexit
from typing import Any

from coder.base.errors import ConfigError
from coder.config.sections import TelemetrySettings


def start_telemetry(settings: TelemetrySettings) -> Any:
    """The session's exporter (coder/telemetry/spans.py `SessionTelemetry`), or None when telemetry is off
    (`[telemetry]`, coder/config/sections.py: the user's config or CODER_ENABLE_TELEMETRY). On without the SDK
    installed is a ConfigError saying how to install it."""
    if not settings.enabled:
        return None
    try:
        from coder.telemetry.spans import SessionTelemetry  # start-up time: the SDK loads only when telemetry is on
    except ImportError as exc:
        raise ConfigError(f"telemetry is on (CODER_ENABLE_TELEMETRY or [telemetry] enabled) but the OpenTelemetry "
                          f"SDK is not installed ({exc.name}): pip install 'coder[telemetry]'") from exc
    telemetry = SessionTelemetry(settings)
    atexit.register(telemetry.close)  # a session that never reaches its end still sends what it has
    return telemetry
