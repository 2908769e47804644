"""The session's language servers as a service the tools share (`ctx.services["lsp"]`). The `[lsp]` settings are
declared in coder/config/programs.py (`LspSettings`).

Created on first use, never at session start: a session that edits no file of a served language starts no
server. Closed by whichever tool closes first at session end (every tool that uses it closes it; closing twice
is harmless).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from coder.config.sections import Config
from coder.lsp.servers import configured_servers

SERVICE_KEY = "lsp"


def check_settings(config: Config) -> None:
    """Raise ConfigError for a server table that cannot make a server (a new name without `command` or
    `languages`): the one check of `[lsp]` the declarations cannot make, since only coder/lsp knows the default
    servers. Cheap: nothing is started and pygls is not imported."""
    configured_servers(config.lsp)


def manager_for(services: dict[str, Any], config: Config, workspace: Path) -> Any | None:
    """The session's LspManager (created on first call), or None when `[lsp]` is off or the workspace is not
    trusted: servers read (and, for some, build) the repository, in the sandbox unless it is off
    (coder/sandbox/confine.py)."""
    if SERVICE_KEY in services:
        return services[SERVICE_KEY]
    manager = None
    if config.lsp.enabled and config.trusted:
        # start-up time: coder.lsp.manager brings asyncio
        from coder.lsp.manager import LspManager

        manager = LspManager(workspace, config.lsp, trusted=True, sandbox=config.sandbox)
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
