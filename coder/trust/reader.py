"""What a repository defines that coder would run or honour, read without running anything or following links.

`inspect` is the single reader of a repository's defining files (`.mcp.json`, `.coder/config.toml` and the files of
`.coder/tools|agents|commands`, the SKILL.md of each skill folder in `.coder/skills` and `.claude/skills`, and
Claude Code's settings, agents and commands: coder/trust/claude.py): it returns their exact bytes with the
fingerprint and the lines the trust dialog shows, and the session then uses those bytes (config loading, MCP
servers), so what was trusted is what runs. Every file is read beneath the workspace with no symlink anywhere in
its path (`coder.fs.beneath`): a link's target is not the repository's to define, and a fifo cannot hang coder.

What trust covers is what runs: the workspace files that the repository's MCP servers and Claude Code hooks run
(`python tools/server.py`, `"$CLAUDE_PROJECT_DIR"/.claude/hooks/check.sh`: coder/trust/commands.py) are
fingerprinted too, so a change to the script asks again as a change to `.mcp.json` does (a link counts by where
it points); the files they only read or write (`--db data.sqlite`, `>> hook.log`) are not, or every session
would find them changed. The dialog lists them. (Such a server runs in the sandbox, but with the env and network
its entry gives it. The repository's hooks and tools always run in the sandbox with nothing of their own, so their
scripts are the repository's like any other file.)
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.fs.beneath import EscapeError, WorkspaceFS, path_kind, read_beneath
from coder.trust import claude
from coder.trust.commands import workspace_use

#: folders under `.coder/` whose files define something that runs or steers (permissions.json is not one)
DEFINING_DIRS = ("tools", "agents", "commands")
MAX_FILES = 1000  # a definitions folder with more entries cannot be trusted: the dialog could not show them
MAX_BYTES = 4 * 1024 * 1024  # per defining file
UNTRUSTABLE = "cannot be trusted"
#: Agent Skills folders of a repository (coder/ext/skills.py); each `<dir>/<name>/SKILL.md` is a defining file
REPO_SKILL_DIRS = (".coder/skills", ".claude/skills")
SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class Wanted:
    """One thing the repository would have coder run or honour."""

    kind: str  # "config", "mcp server", "hook", "custom tool", "agent", "command"
    name: str
    detail: str = ""
    key: str = ""  # MCP servers: what the approval is recorded against (server_key)
    #: workspace files the command runs (coder/trust/commands.py): fingerprinted, and run in the sandbox
    runs: tuple[str, ...] = ()

    def line(self) -> str:
        runs = f" [runs {', '.join(self.runs)} from the workspace: in the sandbox]" if self.runs else ""
        return f"{self.kind} {self.name}" + (f": {self.detail}" if self.detail else "") + runs


@dataclass
class TrustRequest:
    """What trusting `workspace` would switch on, and the fingerprint a decision is recorded against."""

    workspace: Path
    wanted: list[Wanted] = field(default_factory=list)
    fingerprint: str = ""
    problems: list[str] = field(default_factory=list)
    #: the defining files' bytes by workspace-relative path, exactly as fingerprinted
    files: dict[str, bytes] = field(default_factory=dict)

    @property
    def wants_anything(self) -> bool:
        return bool(self.wanted)

    @property
    def trustable(self) -> bool:
        """False when the definitions could not all be read and shown: then nothing may be trusted."""
        return not any(UNTRUSTABLE in p for p in self.problems)

    @property
    def servers(self) -> dict[str, str]:
        """The repository's MCP servers by name -> approval key."""
        return {w.name: w.key for w in self.wanted if w.kind == "mcp server"}

    def describe(self) -> str:
        lines = [f"{self.workspace} wants coder to use:"] + [f"  - {w.line()}" for w in self.wanted]
        return "\n".join(lines + [f"  ! {p}" for p in self.problems])


def workspace_key(workspace: Path) -> str:
    return os.path.realpath(workspace)


def inspect(workspace: Path) -> TrustRequest:
    """What the repository at `workspace` defines (read, never run), its bytes and its fingerprint."""
    request = TrustRequest(Path(workspace_key(workspace)))
    digest = hashlib.sha256()
    for rel, data in _defining_files(request.workspace, request.problems):
        request.files[rel] = data
        digest.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
        try:
            request.wanted.extend(_wanted_from(rel, data, request.workspace))
        except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as exc:  # a hostile file's shape
            request.wanted.append(Wanted("config", rel, f"not readable ({type(exc).__name__})"))
    for rel in sorted({f for w in request.wanted for f in w.runs}):
        digest.update(b"runs\0" + rel.encode() + b"\0" + _run_file_digest(request.workspace, rel))
    request.fingerprint = digest.hexdigest()
    return request


def _run_file_digest(root: Path, rel: str) -> bytes:
    """What a named workspace file is, for the fingerprint: its content's hash, or where a link points."""
    kind = path_kind(root, rel)
    if kind == "file":
        digest = hashlib.sha256()
        try:
            with WorkspaceFS(root) as fs:
                fd, _ = fs.open_regular(rel)
            with os.fdopen(fd, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
        except (OSError, EscapeError):
            return b"unreadable"
        return digest.digest()
    path = root / rel
    return f"{kind}:{os.readlink(path) if os.path.islink(path) else os.path.realpath(path)}".encode()


def read_repo_file(root: Path, rel: str, problems: list[str] | None = None) -> bytes | None:
    """A repository file coder itself reads: a regular file reached without any symlink, else None (with the
    reason in `problems` when it exists but is refused)."""
    data = read_beneath(root, rel, MAX_BYTES)
    if data is None and problems is not None:
        parts = rel.split("/")
        kinds = [path_kind(root, "/".join(parts[: i + 1])) for i in range(len(parts))]
        if "link" in kinds:
            problems.append(f"{rel} is (or is under) a symlink: ignored")
        elif kinds[-1] not in (None, "dir"):
            problems.append(f"{rel} is not a regular file: ignored")
    return data


def _defining_files(root: Path, problems: list[str]) -> list[tuple[str, bytes]]:
    files: list[tuple[str, bytes]] = []
    for rel in (".mcp.json", ".coder/config.toml", *claude.SETTINGS):
        data = read_repo_file(root, rel, problems)
        if data is not None:
            files.append((rel, data))
    for sub in DEFINING_DIRS:
        folder = f".coder/{sub}"
        try:
            with WorkspaceFS(root) as fs:
                names = sorted(name for name, _ in fs.listdir(folder))
        except (OSError, EscapeError):
            read_repo_file(root, folder, problems)  # says why when it is a link
            continue
        if len(names) > MAX_FILES:
            problems.append(f"{folder} holds {len(names)} entries, more than {MAX_FILES}: the repository "
                            f"{UNTRUSTABLE} as it is")
            continue
        for name in names:
            data = read_repo_file(root, f"{folder}/{name}", problems)
            if data is not None:
                files.append((f"{folder}/{name}", data))
    files.extend(_skill_files(root, problems))
    claude_files, too_many = claude.folder_files(root, MAX_FILES)
    problems.extend(f"{p}: the repository {UNTRUSTABLE} as it is" for p in too_many)
    for rel in claude_files:
        data = read_repo_file(root, rel, problems)
        if data is not None:
            files.append((rel, data))
    return files


def _skill_files(root: Path, problems: list[str]) -> list[tuple[str, bytes]]:
    """The SKILL.md of each Agent Skill folder (`.coder/skills/*/`, `.claude/skills/*/`, coder/ext/skills.py): a
    skill steers the model, so its instructions are part of what is trusted (the files beside it are read, or
    run in the sandbox, like any file of the repository)."""
    paths = repo_skill_paths(root)
    if len(paths) > MAX_FILES:
        problems.append(f"{' and '.join(REPO_SKILL_DIRS)} hold {len(paths)} skills, more than {MAX_FILES}: the "
                        f"repository {UNTRUSTABLE} as it is")
        return []
    out = []
    for rel in paths:
        data = read_repo_file(root, rel, problems)
        if data is not None:
            out.append((rel, data))
    return out


def repo_skill_paths(root: Path) -> list[str]:
    """Workspace-relative paths of the repository's SKILL.md files: one per folder of a skills dir, found without
    following a symlink (a linked skill folder is not the repository's to define)."""
    out: list[str] = []
    for base in REPO_SKILL_DIRS:
        try:
            with WorkspaceFS(root) as fs:
                names = sorted(n for n, kind in fs.listdir(base) if kind == "dir" and not n.startswith("."))
        except (OSError, EscapeError):
            continue
        out.extend(f"{base}/{name}/{SKILL_FILE}" for name in names)
    return out


def _wanted_from(rel: str, data: bytes, root: Path) -> list[Wanted]:
    """Human-readable lines for one defining file; a broken file is still listed (its bytes are fingerprinted)."""
    text = data.decode("utf-8", "replace")
    if rel == ".mcp.json":
        try:
            servers = json.loads(text).get("mcpServers", {})
            return [_server(name, entry, root) for name, entry in servers.items()]
        except (ValueError, AttributeError):
            return [Wanted("config", rel, "not valid JSON")]
    if rel == ".coder/config.toml":
        try:
            table = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, ValueError, RecursionError):  # ValueError: an int over 4,300 digits
            return [Wanted("config", rel, "not valid TOML")]
        out = [Wanted("config", rel, "sets " + ", ".join(sorted(table)))] if table else []
        servers = (table.get("mcp") or {}).get("servers") or {}
        out.extend(_server(name, entry, root) for name, entry in servers.items() if isinstance(servers, dict))
        for event, hooks in (table.get("hooks") or {}).items():
            for hook in hooks if isinstance(hooks, list) else []:
                command = hook.get("command", "?") if isinstance(hook, dict) else "?"
                out.append(Wanted("hook", str(event), str(command)))
        return out
    if rel.startswith(".claude/") and not rel.endswith("/SKILL.md"):
        return [Wanted(kind, name, detail, runs=claude.run_files(root, command) if command else ())
                for kind, name, detail, command in claude.wanted(rel, data)]
    if rel.endswith("/SKILL.md"):
        return [Wanted("skill", rel.split("/")[-2], rel)]
    kind = {"tools": "custom tool", "agents": "agent", "commands": "command"}[rel.split("/")[1]]
    return [Wanted(kind, rel.rsplit("/", 1)[-1], rel)]


def _server(name: Any, entry: Any, root: Path) -> Wanted:
    return Wanted("mcp server", str(name), server_line(entry), server_key(entry), _named(entry, root))


def _named(entry: Any, root: Path) -> tuple[str, ...]:
    """The workspace files a stdio server entry runs (coder/trust/commands.py `code_files`)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return ()
    args = [str(a) for a in entry.get("args", [])] if isinstance(entry.get("args"), list) else []
    cwd = entry.get("cwd") if isinstance(entry.get("cwd"), str) else None
    env = {k: str(v) for k, v in entry["env"].items()} if isinstance(entry.get("env"), dict) else None
    return tuple(workspace_use([entry["command"], *args], root, cwd, env).code_files(root))


def server_key(entry: Any) -> str:
    """What an MCP server's approval is recorded against: the whole entry (command, args, env, cwd, url,
    headers) as canonical JSON, so a changed `env` (say a PYTHONPATH into the workspace) is another server."""
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), default=str)


def server_line(entry: Any) -> str:
    """The command line (or URL) an MCP server entry would start, with its cwd and env, as the user sees it."""
    if not isinstance(entry, dict):
        return repr(entry)
    if entry.get("url"):
        return f"url {entry['url']}"
    args = entry.get("args")
    args = args if isinstance(args, list) else []
    line = shlex.join([str(entry.get("command", "?"))] + [str(a) for a in args])
    env = entry.get("env")
    env = env if isinstance(env, dict) else {}
    extras = ([f"cwd {entry['cwd']}"] if entry.get("cwd") else []) + [f"{k}={v}" for k, v in env.items()]
    return line + (f"  ({', '.join(extras)})" if extras else "")
