"""The session's language servers as a service the tools share (`ctx.services["lsp"]`), and the `[lsp]`
settings read in one place.

Created on first use, never at session start: a session that edits no file of a served language starts no
server. Closed by whichever tool closes first at session end (every tool that uses it closes it; closing twice
is harmless).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.base.errors import ConfigError
from coder.lsp.servers import configured_servers

SERVICE_KEY = "lsp"
DEFAULT_WAIT = 5.0
DEFAULT_NAV_WAIT = 10.0


@dataclass
class LspSettings:
    """`[lsp]`: enabled, diagnostics, wait, navigation_wait, start_timeout, severity, ignore, and servers (read by
    coder/lsp/servers.py). A repository's config may only set enabled/diagnostics = false
    (coder/trust/repo_config.py)."""

    enabled: bool = True
    diagnostics: bool = True
    wait: float = DEFAULT_WAIT
    navigation_wait: float = DEFAULT_NAV_WAIT
    start_timeout: float = 30.0
    severity: int = 1
    ignore: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> LspSettings:
        # start-up time: coder.lsp.diagnostics brings asyncio
        from coder.lsp.diagnostics import DEFAULT_IGNORE, SEVERITIES

        section = config.get("lsp") or {}
        if not isinstance(section, dict):
            raise ConfigError("[lsp] must be a table.")
        severity = section.get("severity", "error")
        if severity not in SEVERITIES:
            raise ConfigError(f"[lsp] severity must be one of {', '.join(SEVERITIES)}, not {severity!r}.")
        ignore = section.get("ignore", list(DEFAULT_IGNORE))
        if not (isinstance(ignore, list) and all(isinstance(x, str) for x in ignore)):
            raise ConfigError("[lsp] ignore must be a list of diagnostic codes.")
        values: dict[str, Any] = {}
        for key in ("wait", "navigation_wait", "start_timeout"):
            value = section.get(key, getattr(cls, key))
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"[lsp] {key} must be a positive number of seconds, not {value!r}.")
            values[key] = float(value)
        for key in ("enabled", "diagnostics"):
            value = section.get(key, True)
            if not isinstance(value, bool):
                raise ConfigError(f"[lsp] {key} must be true or false, not {value!r}.")
            values[key] = value
        return cls(severity=SEVERITIES[severity], ignore=tuple(ignore), **values)


def check_settings(config: dict[str, Any]) -> None:
    """Raise ConfigError for a mistake anywhere in `[lsp]` (the settings and every server table). Cheap: nothing is
    started and pygls is not imported."""
    LspSettings.from_config(config)
    configured_servers(config.get("lsp") or {})


def manager_for(services: dict[str, Any], config: dict[str, Any], workspace: Path) -> Any | None:
    """The session's LspManager (created on first call), or None when `[lsp]` is off or the workspace is not
    trusted: servers read (and, for some, build) the repository, in the sandbox unless it is off
    (coder/sandbox/confine.py)."""
    if SERVICE_KEY in services:
        return services[SERVICE_KEY]
    settings = LspSettings.from_config(config)
    manager = None
    if settings.enabled and config.get("_trusted", False):
        # start-up time: coder.lsp.manager brings asyncio
        from coder.lsp.manager import LspManager

        manager = LspManager(workspace, config.get("lsp") or {}, trusted=True, sandbox=config.get("sandbox") or {})
    services[SERVICE_KEY] = manager
    return manager


def close_for(services: dict[str, Any] | None) -> None:
    manager = (services or {}).get(SERVICE_KEY)
    if manager is not None:
        manager.close()


def rel_path(ctx: Any, path: str) -> str | None:
    """`path` (as a call writes it: relative to the working directory, or absolute) relative to the workspace;
    None outside it."""
    full = Path(path) if os.path.isabs(path) else Path(ctx.cwd) / path
    rel = os.path.relpath(os.path.normpath(full), os.path.normpath(ctx.workspace))
    return None if rel.startswith("..") or os.path.isabs(rel) else rel
