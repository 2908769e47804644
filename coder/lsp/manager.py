"""The session's language servers: started lazily on the first file of their language, kept for the session,
restarted once if they die, shut down at the end.

Everything here is synchronous with a deadline. A server that is still starting when the deadline passes keeps
starting in the background (the next edit uses it); one that never answers its first request is stopped and
not tried again this session; one that dies is started again once, then left alone. Each failure is a short
note the caller shows, never an exception that fails a tool call.

Servers read (and some build) the repository, so only for a trusted workspace (`config["_trusted"]`); they run
in the sandbox (coder/sandbox/confine.py: workspace read-only, no network) unless `[sandbox] enabled = false`, with the
host environment scrubbed of provider keys and secrets (the one coder/host/git.py gives host git).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from coder.config.programs import LspSettings
from coder.fs.beneath import WorkspaceFS
from coder.host import safe_env
from coder.lsp.client import LoopThread, LspError, ServerProcess
from coder.lsp.servers import ServerSpec, configured_servers, language_id, server_for
from coder.sandbox.confine import confined_command
from coder.sandbox.profile import SandboxConfig

#: diagnostics kept per (path, content hash): an edit's "after" is usually the next edit's "before"
CACHE_SIZE = 256
MAX_TIMEOUTS = 3  # diagnostics timeouts in a row before a server is left off for the session


@dataclass(frozen=True)
class Diagnostic:
    path: str  # workspace-relative
    line: int  # 1-based
    column: int  # 1-based, in UTF-16 code units as the server counts
    severity: int  # 1 error, 2 warning, 3 information, 4 hint
    message: str
    code: str = ""
    source: str = ""

    def key(self) -> tuple[int, str, str]:
        """What identifies a diagnostic across an edit that moves lines: its kind and words, not its place."""
        return (self.severity, self.code, " ".join(self.message.split()))


@dataclass
class _Slot:
    spec: ServerSpec
    proc: ServerProcess | None = None
    starting: concurrent.futures.Future[Any] | None = None
    restarts: int = 0
    failed: str | None = None
    timeouts: int = 0  # diagnostics that did not come in time, in a row


class LspManager:
    """Language servers for one workspace."""

    def __init__(self, workspace: Path, section: LspSettings | None = None, trusted: bool = True,
                 env: dict[str, str] | None = None, sandbox: SandboxConfig | None = None) -> None:
        """`section` is `[lsp]`; `sandbox` the session's `[sandbox]`: servers run confined by it
        (coder/sandbox/confine.py)."""
        self.workspace = Path(workspace).resolve()
        self.sandbox = sandbox
        self.section = section or LspSettings()
        self.trusted = trusted
        self.enabled = self.section.enabled
        self.specs = configured_servers(self.section) if self.enabled else []
        self._env = env
        self._loop: LoopThread | None = None
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.RLock()
        self._cache: dict[tuple[str, str, str], list[Diagnostic]] = {}
        self._used: set[str] = set()
        self.closed = False

    # -- which server ------------------------------------------------------------------------------------------
    def spec_for(self, rel: str) -> ServerSpec | None:
        """The server that would answer for this file, or None (disabled, untrusted, no server installed)."""
        if not (self.enabled and self.trusted) or self.closed:
            return None
        language = language_id(rel)
        return server_for(language, self.specs) if language else None

    def _confine(self, command: list[str], env: dict[str, str]) -> list[str]:
        return confined_command(command, self.workspace, env, self.sandbox)

    def env(self) -> dict[str, str]:
        if self._env is None:
            self._env = safe_env()
        return self._env

    def _ensure(self, spec: ServerSpec, deadline: float) -> ServerProcess:
        """The running server, starting (or restarting once) it if needed; LspError when it cannot answer by
        `deadline` (it keeps starting in the background)."""
        with self._lock:
            if self._loop is None:
                self._loop = LoopThread()
            slot = self._slots.setdefault(spec.name, _Slot(spec))
            if slot.failed:
                raise LspError(slot.failed)
            if slot.proc is not None and slot.proc.dead is not None and slot.starting is None:
                if slot.restarts >= 1:
                    slot.failed = f"{spec.name} {slot.proc.dead}; not restarted again this session"
                    raise LspError(slot.failed)
                slot.restarts += 1
                self._loop.submit(slot.proc.stop(0.1), 3.0)  # reap what is left of the dead one
                slot.proc = None
            if slot.proc is None and slot.starting is None:
                executable = spec.executable()
                if executable is None or _inside(Path(executable), self.workspace):
                    # not installed, or found in the workspace itself (a PATH entry pointing into it): a program
                    # the repository controls never runs on the host as a language server
                    slot.failed = (f"{spec.name}: {spec.command[0]} is not installed" if executable is None else
                                   f"{spec.name}: {executable} lies in the workspace; coder does not run it")
                    raise LspError(slot.failed)
                slot.proc = ServerProcess(spec, self.workspace)
                command = self._confine([executable, *spec.command[1:]], self.env())
                # confined, bwrap moves into the workspace itself; unconfined (the user's choice), the server runs
                # there as it would in an editor
                workdir = None if command[0] != executable else self.workspace
                timeout = self.section.start_timeout
                # the timeout is initialize's (inside start); the outer one only bounds a spawn that never returns
                slot.starting = self._loop.submit(slot.proc.start(command, self.env(), timeout, workdir),
                                                  timeout + 30.0)
            starting, proc = slot.starting, slot.proc
        assert proc is not None
        if starting is not None:
            try:
                starting.result(timeout=max(0.0, deadline - time.monotonic()))
            except Exception as exc:  # noqa: BLE001 - any failure to start: stop it, say why, do not retry
                if not starting.done():
                    raise LspError(f"{spec.name} is still starting") from None
                why = "did not answer `initialize` in time" if isinstance(exc, TimeoutError) else str(exc)
                self._loop.run(proc.stop(0.5), 3.0)
                with self._lock:
                    slot.starting = None
                    slot.failed = f"{spec.name} could not start: {why}{proc.stderr_excerpt()}"[:400]
                raise LspError(slot.failed) from None
            with self._lock:
                slot.starting = None
        if proc.dead is not None:
            return self._ensure(spec, deadline)  # died since: restart once (or raise)
        return proc

    def warm(self, rel: str) -> None:
        """Start the server for `rel` in the background (a `view` of a file: an edit may follow)."""
        spec = self.spec_for(rel)
        if spec is not None:
            try:
                self._ensure(spec, time.monotonic())
            except LspError:
                pass

    # -- diagnostics ---------------------------------------------------------------------------------------------
    def diagnostics(self, rel: str, text: str, deadline: float) -> list[Diagnostic]:
        """The server's diagnostics for `text` as the content of `rel`, cached by content."""
        spec = self.spec_for(rel)
        if spec is None:
            return []
        key = (spec.name, rel, hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest())
        if key in self._cache:
            return self._cache[key]
        proc = self._ensure(spec, deadline)
        language = language_id(rel) or ""
        path = self.workspace / rel
        assert self._loop is not None

        async def sync() -> tuple[str, int]:
            self._refresh(proc, path.as_uri())
            return proc.sync(path, text, language)

        uri, version = self._loop.run(sync(), 5.0)
        remaining = deadline - time.monotonic()
        try:
            waiting = proc.pull(uri) if proc.pulls() else proc.diagnostics(uri, version)
            raw = self._loop.run(waiting, max(0.05, remaining))
        except TimeoutError:
            slot = self._slots[spec.name]
            slot.timeouts += 1
            if slot.timeouts >= MAX_TIMEOUTS:  # a server that cannot keep up would cost every edit its wait
                slot.failed = (f"{spec.name} did not report diagnostics {MAX_TIMEOUTS} times in a row; off for "
                               "this session")
            raise LspError(f"{spec.name} did not report diagnostics in time") from None
        self._slots[spec.name].timeouts = 0
        found = [_diagnostic(rel, d, spec.name) for d in raw]
        if len(self._cache) >= CACHE_SIZE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = found
        return found

    def _refresh(self, proc: ServerProcess, skip: str) -> None:
        """Bring the server's open documents up to date with the disk (a shell command may have changed them).

        Documents stay open once sent: pyright forgets a closed file's references (measured: after didClose,
        references from other files no longer find uses in it), and reopening costs a parse anyway."""
        with WorkspaceFS(self.workspace) as fs:
            for uri, doc in list(proc.docs.items()):
                if uri == skip or not doc.open:
                    continue
                rel = str(Path(unquote(urlparse(uri).path)).relative_to(self.workspace))
                try:
                    data = fs.read_if_file(rel)
                except OSError:
                    data = None
                if data is None:
                    proc.close_doc(uri)
                else:
                    text = data.decode("utf-8", "replace")
                    if text != doc.text:
                        proc.sync(self.workspace / rel, text, language_id(rel) or "")

    # -- requests (navigation) ---------------------------------------------------------------------------------
    def request(self, rel: str, text: str, method: str, params_for: Any, deadline: float) -> tuple[str, Any]:
        """Open `rel` with `text`, send one request built by `params_for(uri)`, close it again.
        Returns (server name, result). LspError when no server can answer in time."""
        spec = self.spec_for(rel)
        if spec is None:
            raise LspError("no language server for this file")
        proc = self._ensure(spec, deadline)
        path = self.workspace / rel
        assert self._loop is not None

        async def ask() -> Any:
            await proc.ready.wait()
            self._refresh(proc, path.as_uri())
            uri, _ = proc.sync(path, text, language_id(rel) or "")
            return await proc.client.protocol.send_request_async(method, params_for(uri))

        try:
            return spec.name, self._loop.run(ask(), max(0.05, deadline - time.monotonic()))
        except TimeoutError:
            raise LspError(f"{spec.name} did not answer {method} in time") from None
        except LspError:
            raise
        except Exception as exc:  # noqa: BLE001 - a server's error reply or its death mid-request
            raise LspError(f"{spec.name}: {method} failed: {str(exc)[:200]}") from None

    def first_use(self, kind: str) -> bool:
        """True the first time `kind` (a request) is asked of this session's servers."""
        with self._lock:
            if kind in self._used:
                return False
            self._used.add(kind)
            return True

    def capability(self, rel: str, name: str) -> bool:
        """Whether the running server for `rel` advertised `name` (e.g. "call_hierarchy_provider")."""
        spec = self.spec_for(rel)
        slot = self._slots.get(spec.name) if spec else None
        caps = slot.proc.capabilities if slot and slot.proc else None
        return bool(caps is not None and getattr(caps, name, None))

    # -- status and end --------------------------------------------------------------------------------------------
    def status(self) -> dict[str, str]:
        """server name -> "running (pid N)" / "failed: why" / "starting", for servers this session started."""
        out: dict[str, str] = {}
        for name, slot in self._slots.items():
            if slot.failed:
                out[name] = "failed: " + slot.failed
            elif slot.starting is not None and not slot.starting.done():
                out[name] = "starting"
            elif slot.starting is not None and slot.starting.exception() is not None:
                out[name] = f"failed to start: {slot.starting.exception()}"
            elif slot.proc is not None and slot.proc.dead is None:
                out[name] = f"running (pid {slot.proc.pid})"
            elif slot.proc is not None:
                out[name] = f"dead: {slot.proc.dead}"
        return out

    def pids(self) -> list[int]:
        return [slot.proc.pid for slot in self._slots.values() if slot.proc is not None and slot.proc.pid]

    def close(self) -> None:
        """Shut every server down (shutdown + exit, then the process group is killed)."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            slots = list(self._slots.values())
        if self._loop is None:
            return
        for slot in slots:
            if slot.proc is not None:
                try:
                    self._loop.run(slot.proc.stop(), 6.0)
                except Exception:  # noqa: BLE001 - closing must finish
                    pass
        self._loop.stop()


def _inside(path: Path, workspace: Path) -> bool:
    """`path` (or what it links to) lies in the workspace."""
    ws = workspace.resolve()
    return any(p == ws or ws in p.parents for p in (path.absolute(), path.resolve()))


def _diagnostic(rel: str, raw: Any, server: str) -> Diagnostic:
    code = raw.code if raw.code is not None else ""
    return Diagnostic(rel, raw.range.start.line + 1, raw.range.start.character + 1, int(raw.severity or 1),
                      str(raw.message), str(code), str(raw.source or server))
