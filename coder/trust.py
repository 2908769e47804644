"""Workspace trust: whether a repository's own configuration may run anything, decided by the user, once.

A repository can carry a config (`.coder/config.toml`), MCP servers (`.mcp.json`), custom tools, slash commands
and agent definitions (`.coder/tools|commands|agents/`). Each of them runs code or steers the model, and a cloned
repository is written by somebody else. So, as Claude Code's trust dialog, Codex's trusted projects and Gemini
CLI's trusted folders do, a workspace is untrusted until its user says otherwise: untrusted, all of that is
ignored (bar the harmless config keys, see `coder/config_repo.py`) and the session says so once.

Decisions live in the user's state dir (`trust.json`), keyed by the workspace's real path, with a fingerprint of
the files that define servers, hooks, tools, commands and agents: a change to any of them (a new server, an
edited hook) makes the decision stale, and coder asks again. Each MCP server of the repository is approved by
name and command line, so the dialog shows exactly what will start.

Nothing here follows a symlink out of the workspace: a `.coder` or `.mcp.json` that is a symlink is treated as
absent (and reported), because its target is not the repository's to define.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shlex
import stat
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.paths import state_dir

#: folders under `.coder/` whose files define something that runs or steers (permissions.json is coder's own)
DEFINING_DIRS = ("tools", "agents", "commands")
MAX_FILES = 500  # a `.coder/` with more files than this is fingerprinted by the first MAX_FILES names


@dataclass(frozen=True)
class Wanted:
    """One thing the repository would have coder run or honour."""

    kind: str  # "config", "mcp server", "hook", "custom tool", "agent", "command"
    name: str
    detail: str = ""

    def line(self) -> str:
        return f"{self.kind} {self.name}" + (f": {self.detail}" if self.detail else "")


@dataclass
class TrustRequest:
    """What trusting `workspace` would switch on, and the fingerprint a decision is recorded against."""

    workspace: Path
    wanted: list[Wanted] = field(default_factory=list)
    fingerprint: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def wants_anything(self) -> bool:
        return bool(self.wanted)

    @property
    def servers(self) -> dict[str, str]:
        return {w.name: w.detail for w in self.wanted if w.kind == "mcp server"}

    def describe(self) -> str:
        lines = [f"{self.workspace} wants coder to use:"] + [f"  - {w.line()}" for w in self.wanted]
        return "\n".join(lines + [f"  ! {p}" for p in self.problems])


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


def workspace_key(workspace: Path) -> str:
    return str(Path(os.path.realpath(workspace)))


def inspect(workspace: Path) -> TrustRequest:
    """What the repository at `workspace` defines (read, never run) and its fingerprint."""
    request = TrustRequest(Path(workspace_key(workspace)))
    digest = hashlib.sha256()
    root = request.workspace
    for rel, data in _defining_files(root, request.problems):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
        request.wanted.extend(_wanted_from(rel, data))
    request.fingerprint = digest.hexdigest()
    return request


def _defining_files(root: Path, problems: list[str]) -> list[tuple[str, bytes]]:
    files: list[tuple[str, bytes]] = []
    for rel in (".mcp.json", ".coder/config.toml"):
        data = _read_plain(root, rel, problems)
        if data is not None:
            files.append((rel, data))
    coder_dir = root / ".coder"
    if coder_dir.is_symlink():
        problems.append(".coder is a symlink: ignored")
        return files
    for sub in DEFINING_DIRS:
        folder = coder_dir / sub
        if folder.is_symlink() or not folder.is_dir():
            if folder.is_symlink():
                problems.append(f".coder/{sub} is a symlink: ignored")
            continue
        names = sorted(p.name for p in folder.iterdir())[:MAX_FILES]
        for name in names:
            data = _read_plain(root, f".coder/{sub}/{name}", problems)
            if data is not None:
                files.append((f".coder/{sub}/{name}", data))
    return files


def _read_plain(root: Path, rel: str, problems: list[str]) -> bytes | None:
    """A regular file's bytes, not through a symlink at its last component (its parents were checked)."""
    path = root / rel
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if path.is_symlink():
            problems.append(f"{rel} is a symlink: ignored")
        elif not path.is_dir():
            problems.append(f"{rel} cannot be read: {exc.strerror}")
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None  # a fifo or device: never read (it could block or never end)
        return handle.read(4 * 1024 * 1024)


def _wanted_from(rel: str, data: bytes) -> list[Wanted]:
    """Human-readable lines for one defining file; a broken file is still listed (its bytes are fingerprinted)."""
    text = data.decode("utf-8", "replace")
    if rel == ".mcp.json":
        try:
            servers = json.loads(text).get("mcpServers", {})
            return [Wanted("mcp server", str(name), server_line(entry)) for name, entry in servers.items()]
        except (ValueError, AttributeError):
            return [Wanted("config", rel, "not valid JSON")]
    if rel == ".coder/config.toml":
        try:
            table = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return [Wanted("config", rel, "not valid TOML")]
        out = [Wanted("config", rel, "sets " + ", ".join(sorted(table)))] if table else []
        for name, entry in ((table.get("mcp") or {}).get("servers") or {}).items():
            out.append(Wanted("mcp server", str(name), server_line(entry)))
        for event, hooks in (table.get("hooks") or {}).items():
            for hook in hooks if isinstance(hooks, list) else []:
                command = hook.get("command", "?") if isinstance(hook, dict) else "?"
                out.append(Wanted("hook", str(event), str(command)))
        return out
    kind = {"tools": "custom tool", "agents": "agent", "commands": "command"}[rel.split("/")[1]]
    return [Wanted(kind, rel.rsplit("/", 1)[-1], rel)]


def server_line(entry: Any) -> str:
    """The command line (or URL) an MCP server entry would start: what the user approves."""
    if not isinstance(entry, dict):
        return repr(entry)
    if entry.get("url"):
        return f"url {entry['url']}"
    args = entry.get("args") or []
    return shlex.join([str(entry.get("command", "?"))] + ([str(a) for a in args] if isinstance(args, list) else []))


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
    fd, tmp = tempfile.mkstemp(prefix=".trust.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
    os.replace(tmp, path)


def status(request: TrustRequest) -> TrustStatus:
    """The stored decision for the request's workspace, checked against what the repository defines now."""
    entry = _load()["workspaces"].get(str(request.workspace))
    if not isinstance(entry, dict):
        return TrustStatus(False, False, "never trusted")
    if entry.get("fingerprint") != request.fingerprint:
        return TrustStatus(False, True, "its servers, hooks, tools, commands or agents changed since you trusted it")
    return TrustStatus(True, False, f"trusted on {entry.get('trusted_at', '?')}")


def is_trusted(workspace: Path) -> bool:
    """The user's stored decision for `workspace`, valid for what the repository defines now."""
    return status(inspect(workspace)).trusted


def approved_servers(workspace: Path) -> dict[str, str]:
    """Repository MCP servers the user approved, by name -> command line."""
    entry = _load()["workspaces"].get(workspace_key(workspace)) or {}
    servers = entry.get("servers") if isinstance(entry, dict) else None
    return dict(servers) if isinstance(servers, dict) else {}


def grant(request: TrustRequest) -> None:
    """Trust the workspace as it is now (its servers approved by name and command line)."""
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
