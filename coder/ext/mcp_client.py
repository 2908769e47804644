"""MCP servers as tools, on the official `mcp` SDK.

Servers come from `[mcp.servers.NAME]` in config (stdio: command, args, env, cwd; streamable HTTP: url, headers;
both: startup_timeout, call_timeout) and from `.mcp.json` in the repository (`{"mcpServers": {NAME: {...}}}`;
config wins for the same name). They start when a session opens (never for `coder --help`), all at once, each
within its startup timeout; one that fails is reported and left out. Their tools reach the model as
`mcp__SERVER__TOOL`, through the same permission rules and output limits as built-in tools. A server that dies is
restarted once, on the next call; a second death is final for the session.

The SDK is async and the engine is not: one event loop runs in a daemon thread, each server lives in its own task
(its client context is entered and left in that task, as anyio requires), and calls cross over with
`run_coroutine_threadsafe`. Stdio servers start through the door (coder/host): on the host, like the user's own
programs, in a neutral folder with the scrubbed environment plus the `env` the config gives them (our API keys do
not leak into them). A server whose command names a file in the workspace (`python tools/server.py`), or whose
`cwd` lies in it, runs in the sandbox instead (coder/sandbox/confine.py: workspace read-only, the network only
when `[sandbox] network = true`), and the files it names are read-only to the sandbox for the session: otherwise
the model could rewrite what the next session starts on the host (coder/trust/commands.py). A server the
repository defines runs in the sandbox whatever its command names: a `python3 -c` script can find the workspace by
itself (`/proc/PID/cwd` of its parent) and run a file there that trust never pinned. To run one on the host, the
user copies it into their own config.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
import re
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base.paths import state_dir
from coder.config.programs import McpServer
from coder.config.sections import Config
from coder.ext.manifests import McpFile, read_json, read_text
from coder.host import Launch, prepare
from coder.host.bridges import mcp_stdio
from coder.models.images import ImageRefused
from coder.models.images import prepare as prepare_image
from coder.models.types import ImageBlock
from coder.sandbox.confine import confined_command
from coder.sandbox.env import sandbox_env
from coder.sandbox.profile import SandboxConfig
from coder.trust.commands import workspace_use
from coder.trust.decisions import read_repo_file, server_key
from coder.trust.protected import protect_command_files

NAME_RE = re.compile(r"[^A-Za-z0-9_-]")


@dataclass
class ServerConfig:
    name: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    startup_timeout: float = 20.0
    call_timeout: float = 120.0
    source: str = ""
    #: defined by the repository (`.mcp.json`, its config's [mcp.servers]): runs in the sandbox, always
    repository: bool = False

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"


def _server(name: str, entry: McpServer, source: str, repository: bool = False) -> ServerConfig:
    return ServerConfig(name, entry.command, list(entry.args), dict(entry.env), entry.cwd, entry.url,
                        dict(entry.headers), entry.startup_timeout, entry.call_timeout, source, repository)


def servers_from_config(config: Config, workspace: Path,
                        report: Callable[[str], None] | None = None) -> list[ServerConfig]:
    """The servers to start. The repository's own (`.mcp.json`, or `[mcp.servers]` set by its config) only in a
    trusted workspace, and each only if the user approved that name with that very entry (coder/trust/decisions.py):
    a server whose entry changed since is left out and reported, never started."""
    servers: dict[str, ServerConfig] = {}

    def repository_server(name: str, entry: McpServer, written: Any, source: str) -> None:
        """`written`: the entry as the repository wrote it, which the approval was recorded against."""
        if "__" in name or NAME_RE.sub("_", name) != name:
            # `github__x` would make its tools `mcp__github__x__...`, which the user's rule `mcp__github__*` for
            # their own server `github` allows: a repository's server is named plainly or not started
            if report:
                report(f"MCP server {name!r} from {source} was not started: a repository's server name may hold "
                       "only letters, digits, - and single _")
            return
        if config.mcp_approved.get(name) != server_key(written):
            if report:
                report(f"MCP server {name!r} from {source} was not started: you have not approved it as it is "
                       "now (`coder trust` shows and approves it)")
            return
        servers[name] = _server(name, entry, source, repository=True)

    mcp_json = workspace / ".mcp.json"
    files = config.repo_files
    raw = (files.get(".mcp.json") if files is not None else read_repo_file(workspace, ".mcp.json")) \
        if config.trusted and not config.reach_pinned else None  # a batch agent's servers are the batch's alone
    if raw is not None:
        text = read_text(mcp_json, raw)
        checked = read_json(McpFile, mcp_json, text=text)  # a broken entry is an error even before it is approved
        written = json.loads(text)["mcpServers"] if checked.mcpServers else {}
        for name, entry in checked.mcpServers.items():
            repository_server(name, entry, written[name], str(mcp_json))
    for name, entry in config.mcp.servers.items():
        if config.set_by_repository(f"mcp.servers.{name}"):
            repository_server(name, entry, config.as_written(f"mcp.servers.{name}"),
                              "repository config [mcp.servers]")
        else:
            servers[name] = _server(name, entry, "config [mcp.servers]")
    return list(servers.values())


@dataclass
class ServerState:
    config: ServerConfig
    status: str = "stopped"  # stopped | starting | ready | failed | dead
    error: str = ""
    tools: list[Any] = field(default_factory=list)
    restarts: int = 0
    client: Any = None
    stop: asyncio.Event | None = None
    task: asyncio.Task | None = None


class MCPManager:
    """All MCP servers of one session."""

    def __init__(self, servers: list[ServerConfig], workspace: Path, sandbox: SandboxConfig | None = None) -> None:
        """`sandbox` is the session's `[sandbox]`: servers that run workspace files are confined by it."""
        self.workspace = workspace
        self.sandbox = sandbox
        self.states = {s.name: ServerState(s) for s in servers}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp", daemon=True)
        self._thread.start()
        self._closed = False

    # ---- lifecycle --------------------------------------------------------------------------------------------
    def start_all(self) -> None:
        futures = {name: asyncio.run_coroutine_threadsafe(self._start(state), self._loop)
                   for name, state in self.states.items()}
        for name, future in futures.items():
            state = self.states[name]
            try:
                future.result(timeout=state.config.startup_timeout + 5)
            except FutureTimeout:
                state.status, state.error = "failed", f"no answer within {state.config.startup_timeout:g}s"

    async def _start(self, state: ServerState) -> None:
        state.status, state.error = "starting", ""
        ready = asyncio.Event()
        state.stop = asyncio.Event()
        state.task = asyncio.create_task(self._serve(state, ready))
        try:
            await asyncio.wait_for(ready.wait(), state.config.startup_timeout)
        except TimeoutError:
            state.status, state.error = "failed", f"did not start within {state.config.startup_timeout:g}s"
            state.stop.set()
            state.task.cancel()

    async def _serve(self, state: ServerState, ready: asyncio.Event) -> None:
        # start-up time: the MCP SDK loads only when this runs
        from mcp import Client

        try:
            async with self._transport(state.config) as transport_or_none:
                async with Client(transport_or_none) as client:
                    state.client = client
                    state.tools = list((await client.list_tools()).tools)
                    state.status = "ready"
                    ready.set()
                    assert state.stop is not None
                    await state.stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - a server failing is a state to report, not a crash
            state.error = _describe(exc)
            state.status = "dead" if state.status == "ready" else "failed"
        finally:
            state.client = None
            ready.set()

    def _transport(self, config: ServerConfig):
        """An async context manager yielding what `mcp.Client` takes for this server."""
        @asynccontextmanager
        async def stdio():
            launch = self.launch(config)
            log = server_log(config.name)
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "a", encoding="utf-8") as errlog:  # the server's stderr, kept off the user's terminal
                yield mcp_stdio(launch, errlog)

        @asynccontextmanager
        async def http():
            # start-up time: httpx2 loads only when this runs
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(headers=config.headers, timeout=config.call_timeout) as http_client:
                yield streamable_http_client(config.url or "", http_client=http_client)

        return http() if config.url else stdio()

    def launch(self, config: ServerConfig) -> Launch:
        """How a stdio server starts: on the host through the door, or in the sandbox when its command takes
        something from the workspace (the module docstring)."""
        argv = [config.command or "", *config.args]
        purpose = f"the MCP server {config.name}"
        root = Path(os.path.realpath(self.workspace))
        use = workspace_use(argv, root, config.cwd, config.env)
        if not use.any and not config.repository:
            workdir = Path(os.path.expanduser(config.cwd)) if config.cwd else None  # the user's, outside
            return prepare(argv, purpose=purpose, workdir=workdir, extra_env=config.env)
        protect_command_files(root, use.files)
        program = argv[0] if "/" in argv[0] else (shutil.which(argv[0]) or argv[0])
        program = os.path.join(root, program)  # a relative program is the workspace's, where these used to run
        env = {**sandbox_env(os.environ, os.environ.get("HOME") or str(Path.home()),
                             self.sandbox.env_allow if self.sandbox else []), **config.env}
        command = confined_command([program, *argv[1:]], root, env, self.sandbox, network=True)
        confined = command[0] != program
        return prepare(command, purpose=purpose, workdir=None if confined else root, env=env)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        async def stop_all() -> None:
            for state in self.states.values():
                if state.stop is not None:
                    state.stop.set()
            tasks = [s.task for s in self.states.values() if s.task is not None]
            if tasks:
                await asyncio.wait(tasks, timeout=5)

        try:
            asyncio.run_coroutine_threadsafe(stop_all(), self._loop).result(timeout=10)
        except (FutureTimeout, RuntimeError):
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    # ---- calls ------------------------------------------------------------------------------------------------
    def call(self, server: str, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
        """(text for the model, is_error). Restarts a dead server once."""
        text, is_error, _ = self.call_tool(server, tool, args)
        return text, is_error

    def call_tool(self, server: str, tool: str, args: dict[str, Any]) -> tuple[str, bool, list[ImageBlock]]:
        """(text for the model, is_error, the images the result holds). Restarts a dead server once."""
        state = self.states[server]
        for attempt in (1, 2):
            if state.client is None:
                if state.restarts >= 1 or attempt == 2:
                    return f"MCP server {server!r} is not running ({state.error or state.status}).", True, []
                state.restarts += 1
                asyncio.run_coroutine_threadsafe(self._start(state), self._loop).result(
                    timeout=state.config.startup_timeout + 5)
                if state.client is None:
                    return f"MCP server {server!r} died and could not be restarted: {state.error}", True, []
            future = asyncio.run_coroutine_threadsafe(state.client.call_tool(tool, args), self._loop)
            try:
                result = future.result(timeout=state.config.call_timeout)
            except FutureTimeout:
                future.cancel()
                wait = state.config.call_timeout
                return f"MCP tool {tool!r} on {server!r} gave no answer within {wait:g}s.", True, []
            except Exception as exc:  # noqa: BLE001 - the SDK raises MCPError on a closed connection
                if "closed" in str(exc).lower() or state.task is None or state.task.done():
                    state.client, state.status, state.error = None, "dead", _describe(exc)
                    if state.restarts >= 1:
                        return f"MCP server {server!r} died again ({state.error}); not restarted.", True, []
                    continue
                return f"MCP tool {tool!r} failed: {_describe(exc)}", True, []
            text, images = render_result(result, f"{server} {tool}")
            return text, bool(getattr(result, "is_error", False)), images
        return f"MCP server {server!r} is not running.", True, []


def render_result(result: Any, name: str = "mcp") -> tuple[str, list[ImageBlock]]:
    """The text of a tool result and its images (issue 35: an image passes through as an image, made to obey the
    API's rules; one that cannot is a line saying why)."""
    parts: list[str] = []
    images: list[ImageBlock] = []
    for item in getattr(result, "content", None) or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "image":
            label = f"{name} image {len(images) + 1}"
            try:
                images.append(prepare_image(base64.b64decode(str(getattr(item, "data", "")), validate=True), label))
            except (ImageRefused, binascii.Error, ValueError) as exc:
                parts.append(f"[image not shown: {exc}]")
        elif kind == "resource":
            resource = item.resource
            parts.append(getattr(resource, "text", None) or f"[resource: {getattr(resource, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'content'}]")
    if not parts:
        structured = getattr(result, "structured_content", None)
        if structured is not None:
            parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts) or ("(an image)" if images else "(no content)"), images


def _describe(exc: BaseException) -> str:
    inner = getattr(exc, "exceptions", None)
    if inner:  # an ExceptionGroup from a task group: its first leaf says what happened
        return _describe(inner[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def server_log(name: str) -> Path:
    """Where a stdio server's stderr goes (`coder mcp list` names it when the server fails)."""
    return state_dir() / "mcp" / f"{NAME_RE.sub('_', name)}.log"


def tool_name(server: str, tool: str) -> str:
    return f"mcp__{NAME_RE.sub('_', server)}__{NAME_RE.sub('_', tool)}"[:128]
