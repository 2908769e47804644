"""XDG locations. Nothing here creates folders; callers create what they write."""

from __future__ import annotations

import os
from pathlib import Path


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value else Path.home() / default


def config_dir() -> Path:
    return _xdg("XDG_CONFIG_HOME", ".config") / "coder"


def state_dir() -> Path:
    """Sessions database and per-session files; `CODER_STATE_DIR` overrides (batch runs use it)."""
    override = os.environ.get("CODER_STATE_DIR")
    return Path(override) if override else _xdg("XDG_STATE_HOME", ".local/state") / "coder"


def cache_dir() -> Path:
    return _xdg("XDG_CACHE_HOME", ".cache") / "coder"


def sessions_db() -> Path:
    return state_dir() / "sessions.db"


def session_dir(session_id: str) -> Path:
    return state_dir() / "sessions" / session_id


def data_dir() -> Path:
    """What coder installs for the user (plugins)."""
    return _xdg("XDG_DATA_HOME", ".local/share") / "coder"
