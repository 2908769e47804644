"""A session as the interactive frontends open and replay it: its options from the `coder` flags, and its stored
events as Event objects (a resumed session's transcript)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coder.base.events import EVENT_TYPES, Event, event_from_dict


def workspace_of(args: Any) -> Path:
    """The directory the flags name (`--cwd`), before any session is open: completion and commands without a
    session work there."""
    return Path(getattr(args, "cwd", ".") or ".")


def options_from_args(args: Any, **override: Any) -> Any:
    """SessionOptions from the parsed `coder` flags (the same fields `coder run` uses)."""
    from coder.engine.builder import SessionOptions  # lazy: the engine's imports come after the first paint

    values = {
        "cwd": workspace_of(args), "model": getattr(args, "model", None),
        "permission_mode": getattr(args, "permission_mode", None), "resume": getattr(args, "resume", None),
        "continue_last": bool(getattr(args, "continue_last", False)), "allow": list(getattr(args, "allow", []) or []),
        "deny": list(getattr(args, "deny", []) or []), "no_sandbox": bool(getattr(args, "no_sandbox", False)),
        "trust": getattr(args, "trust", None),
        "allow_domains": list(getattr(args, "net_allow", []) or []),
        "deny_domains": list(getattr(args, "net_deny", []) or []),
        "network_presets": list(getattr(args, "net_preset", []) or []),
    }
    values.update(override)
    return SessionOptions(**values)


def replay_rows(store: Any, session_id: str) -> list[Event]:
    """The stored events of a session as Event objects (for a resumed session's transcript)."""
    out: list[Event] = []
    for row in store.events(session_id):
        if row.type in EVENT_TYPES:
            try:
                out.append(event_from_dict(row.to_dict()))
            except TypeError:
                continue
    return out
