"""Workspace trust: whether a repository's own configuration may run anything, decided by the user, once.

A repository can carry a config (`.coder/config.toml`), MCP servers (`.mcp.json`), custom tools, slash commands
and agent definitions (`.coder/tools|commands|agents/`). Each of them runs code or steers the model, and a cloned
repository is written by somebody else. So, as Claude Code's trust dialog, Codex's trusted projects and Gemini
CLI's trusted folders do, a workspace is untrusted until its user says otherwise: untrusted, all of that is
ignored (bar the harmless config keys, see `coder/config/repository.py`) and the session says so once.

Decisions live in the user's state dir (`trust.json`), keyed by the workspace's real path, with a fingerprint of
the files that define servers, hooks, tools, commands, agents and skills: a change to any of them (a new server, an
edited hook) makes the decision stale, and coder asks again. Each MCP server of the repository is approved by
name and whole entry (command, args, env, cwd), so the dialog shows exactly what will start.

Reading the repository is `coder/trust/reader.py`'s job; this module keeps the decisions.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.base.atomic import write_json_atomic
from coder.base.errors import UsageError
from coder.base.paths import state_dir
from coder.trust.reader import TrustRequest, Wanted, inspect, read_repo_file, server_key, server_line, workspace_key

__all__ = ["TrustRequest", "TrustStatus", "Wanted", "decided", "grant", "inspect",
           "is_trusted", "read_repo_file", "remember_decision", "revoke", "server_key", "server_line", "status"]


@dataclass(frozen=True)
class TrustStatus:
    trusted: bool
    stale: bool  # trusted once, but the defining files changed since
    reason: str


#: what this process decided per workspace (real path): lets slash-command completion and `/help` honour a
#: session's `--trust` without threading it through every frontend call
_DECIDED: dict[str, bool] = {}


def remember_decision(workspace: Path, trusted: bool) -> None:
    _DECIDED[workspace_key(workspace)] = trusted


def decided(workspace: Path) -> bool:
    """Whether a session of this process trusts `workspace` (False when none decided)."""
    return _DECIDED.get(workspace_key(workspace), False)


def store_path() -> Path:
    return state_dir() / "trust.json"


def _load() -> dict[str, Any]:
    try:
        data = json.loads(store_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"version": 1, "workspaces": {}}
    if not isinstance(data, dict) or not isinstance(data.get("workspaces"), dict):
        return {"version": 1, "workspaces": {}}
    return data


def _save(data: dict[str, Any]) -> None:
    path = store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, data, indent=2, sort_keys=True)


def status(request: TrustRequest) -> TrustStatus:
    """The stored decision for the request's workspace, checked against what the repository defines now."""
    entry = _load()["workspaces"].get(str(request.workspace))
    if not isinstance(entry, dict):
        return TrustStatus(False, False, "never trusted")
    if not request.trustable:
        return TrustStatus(False, False, "; ".join(request.problems))
    if entry.get("fingerprint") != request.fingerprint:
        return TrustStatus(False, True, "its servers, hooks, tools, commands, agents or skills changed since you "
                                        "trusted it")
    return TrustStatus(True, False, f"trusted on {entry.get('trusted_at', '?')}")


def is_trusted(workspace: Path) -> bool:
    """The user's stored decision for `workspace`, valid for what the repository defines now."""
    return status(inspect(workspace)).trusted


def grant(request: TrustRequest) -> None:
    """Trust the workspace as it is now (its servers approved by name and whole entry)."""
    if not request.trustable:
        raise UsageError(f"{request.workspace} cannot be trusted as it is: " + "; ".join(request.problems))
    data = _load()
    data["workspaces"][str(request.workspace)] = {
        "fingerprint": request.fingerprint, "servers": request.servers,
        "trusted_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    _save(data)


def revoke(workspace: Path) -> bool:
    data = _load()
    removed = data["workspaces"].pop(workspace_key(workspace), None) is not None
    if removed:
        _save(data)
    return removed
