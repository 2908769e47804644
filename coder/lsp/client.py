"""One running language server, spoken to through pygls's client and lsprotocol's types.

pygls is asyncio; the engine is not. Every server of a session lives on one event loop in a daemon thread
(`LoopThread`), and the synchronous callers (`coder/lsp/manager.py`) submit coroutines with a deadline. A server
that does not answer in time costs the caller that deadline and nothing more.

The process runs in its own session (process group), so a Ctrl-C in the terminal does not reach it and closing
kills the whole group (basedpyright's entry point is a Python script that starts node as a child). Its stderr is
drained into a short tail: an undrained pipe would stall a chatty server, and the tail explains a crash.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from coder.base.errors import CoderError
from coder.host import prepare
from coder.host.bridges import lsp_start_io
from coder.lsp.servers import ServerSpec

T = TypeVar("T")


logging.getLogger("pygls").addHandler(logging.NullHandler())
logging.getLogger("pygls").propagate = False  # its warnings would land on the terminal a TUI draws on


class LspError(CoderError):
    """A language server failed to start, died, or did not answer in time."""


class LoopThread:
    """An asyncio loop in a daemon thread, with a blocking `run(coro, timeout)`."""

    def __init__(self, name: str = "lsp") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Awaitable[T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(_with_timeout(coro, timeout), self.loop)
        try:
            return future.result(timeout + 1.0)
        except TimeoutError:
            future.cancel()
            raise

    def submit(self, coro: Awaitable[T], timeout: float) -> concurrent.futures.Future[T]:
        """Start `coro` on the loop and return at once (a server that starts in the background)."""
        return asyncio.run_coroutine_threadsafe(_with_timeout(coro, timeout), self.loop)

    def stop(self) -> None:
        """Cancel what still runs on the loop (readers of dead servers), then end the thread and close the loop,
        so nothing is left for the interpreter to complain about at exit."""
        if not self.loop.is_running():
            return

        async def cancel_rest() -> None:
            current = asyncio.current_task()
            rest = [task for task in asyncio.all_tasks() if task is not current]
            for task in rest:
                task.cancel()
            await asyncio.wait(rest, timeout=2.0) if rest else None

        try:
            asyncio.run_coroutine_threadsafe(cancel_rest(), self.loop).result(timeout=3.0)
        except Exception:  # noqa: BLE001 - stopping goes on regardless
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        # not closed: transports of killed servers are collected later and would complain about a closed loop


async def _with_timeout(coro: Awaitable[T], timeout: float) -> T:
    """`coro`'s result, or TimeoutError after `timeout` seconds, at that moment. Unlike `asyncio.wait_for` this does
    not wait for the cancelled work to wind down: a server start cancelled while its process is being spawned
    waits for that process to exit (asyncio's subprocess clean-up), and a sandboxed one can take long to, which
    left the start neither done nor failed for good (the slot answered "still starting" to every edit). The
    caller stops the server's process group itself."""
    task = asyncio.ensure_future(coro)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if task in done:
        return task.result()
    task.cancel()
    raise TimeoutError


@dataclass
class Published:
    """The last diagnostics a server published for one document."""

    version: int | None
    diagnostics: list[Any]
    seq: int


@dataclass
class DocState:
    version: int = 0
    text: str | None = None
    #: the publish counter when the current text was sent (servers that publish without a version)
    sent_seq: int = 0
    open: bool = False


@dataclass
class ServerProcess:
    """What the manager knows of one server: its spec, its client, whether it died and why."""

    spec: ServerSpec
    root: Path
    client: Any = None
    capabilities: Any = None
    docs: dict[str, DocState] = field(default_factory=dict)
    published: dict[str, Published] = field(default_factory=dict)
    seq: int = 0
    changed: asyncio.Event | None = None
    #: set once the server has found the workspace's files (before that, references miss files)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    dead: str | None = None
    #: the server tags its publishes with the document version (then only a matching version is an answer)
    versioned: bool = False
    #: methods the server registered dynamically (`client/registerCapability`)
    registered: set[str] = field(default_factory=set)
    stderr_tail: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=20))
    pid: int | None = None

    # -- lifecycle (on the loop) ---------------------------------------------------------------------------------
    async def start(self, command: list[str], env: dict[str, str], timeout: float,
                    workdir: Path | None = None) -> None:
        """Spawn `command` (the server's, already wrapped in the sandbox by the manager) through the door, in
        `workdir` (None: a neutral folder), then give it `timeout` seconds to answer `initialize`. The spawn itself
        is not cut short: a start cancelled while its process is being created leaves a process nobody knows the
        pid of, which then outlives the session."""
        from lsprotocol import types as t
        from pygls.lsp._base_client import BaseLanguageClient  # what pygls.lsp.client re-exports

        launch = prepare(command, purpose=f"the language server {self.spec.name}", workdir=workdir, env=env)

        proc = self

        class Client(BaseLanguageClient):
            async def server_exit(self, server: asyncio.subprocess.Process) -> None:
                proc.dead = proc.dead or f"exited with code {server.returncode}" + proc.stderr_excerpt()
                proc._notify()

            def report_server_error(self, error: Exception, source: Any) -> None:
                proc.stderr_tail.append(f"protocol error: {error}")

        client = Client("coder", "1")
        self.client = client
        self.changed = asyncio.Event()
        self.versioned = self.spec.versioned
        self.ready = asyncio.Event()
        if not self.spec.ready_log:
            self.ready.set()

        @client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: t.PublishDiagnosticsParams) -> None:
            self.seq += 1
            if params.version is None and self.versioned:
                return  # pyright also publishes unversioned lists (e.g. for files it stops checking): not an answer
            self.versioned = self.versioned or params.version is not None
            self.published[params.uri] = Published(params.version, list(params.diagnostics), self.seq)
            self._notify()

        @client.feature(t.WORKSPACE_CONFIGURATION)
        def on_configuration(params: t.ConfigurationParams) -> list[Any]:
            return [_pinned(item.section, _section(self.spec.settings, item.section)) for item in params.items]

        @client.feature(t.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_progress(params: Any) -> None:
            return None

        @client.feature(t.CLIENT_REGISTER_CAPABILITY)
        def on_register(params: t.RegistrationParams) -> None:
            self.registered.update(r.method for r in params.registrations)

        # requests a server may send that need an answer (an unanswered or refused one can kill it: basedpyright
        # exits on "method not found" for workspace/diagnostic/refresh)
        for method in (t.WORKSPACE_DIAGNOSTIC_REFRESH, t.WORKSPACE_SEMANTIC_TOKENS_REFRESH,
                       t.WORKSPACE_INLAY_HINT_REFRESH, t.WORKSPACE_CODE_LENS_REFRESH, t.WORKSPACE_INLINE_VALUE_REFRESH,
                       t.WINDOW_SHOW_MESSAGE_REQUEST, t.CLIENT_UNREGISTER_CAPABILITY):
            client.feature(method)(_nothing)

        @client.feature(t.WINDOW_LOG_MESSAGE)
        def on_log(params: t.LogMessageParams) -> None:
            if self.spec.ready_log and re.search(self.spec.ready_log, params.message):
                self.ready.set()

        @client.feature(t.WINDOW_SHOW_MESSAGE)
        def on_show(params: t.ShowMessageParams) -> None:
            self.stderr_tail.append(params.message[:300])

        @client.feature(t.WORKSPACE_WORKSPACE_FOLDERS)
        def on_folders(params: Any) -> list[t.WorkspaceFolder]:
            return [t.WorkspaceFolder(self.root.as_uri(), self.root.name)]

        await lsp_start_io(client, launch)
        server = client._server
        self.pid = server.pid if server is not None else None
        if server is not None and server.stderr is not None:
            asyncio.get_running_loop().create_task(self._drain(server.stderr))
        result = await _with_timeout(client.initialize_async(initialize_params(self.root, self.spec)), timeout)
        self.capabilities = result.capabilities
        client.initialized(t.InitializedParams())

    async def _drain(self, stream: asyncio.StreamReader) -> None:
        while line := await stream.readline():
            self.stderr_tail.append(line.decode("utf-8", "replace").rstrip()[:300])

    def stderr_excerpt(self) -> str:
        lines = [line for line in self.stderr_tail if line.strip()][-3:]
        return (": " + " | ".join(lines)) if lines else ""

    def _notify(self) -> None:
        if self.changed is not None:
            self.changed.set()

    async def stop(self, grace: float = 2.0) -> None:
        """shutdown + exit, then the process group is killed if it is still there."""
        client = self.client
        if client is None:
            return
        server = client._server
        if self.dead is None:
            try:
                await asyncio.wait_for(client.shutdown_async(None), grace)
                client.exit(None)
            except Exception:  # noqa: BLE001 - a server that cannot shut down is killed below
                pass
        self.dead = self.dead or "stopped"
        if server is not None and server.returncode is None:
            try:
                await asyncio.wait_for(server.wait(), grace)
            except TimeoutError:
                pass
        if server is not None:
            _kill_group(server.pid)
            transport = getattr(server, "_transport", None)  # closed here, on its loop, not by a late __del__
            if transport is not None:
                transport.close()
        client._stop_event.set()

    # -- documents -------------------------------------------------------------------------------------------------
    def sync(self, path: Path, text: str, language: str) -> tuple[str, int]:
        """Send `text` as the document's content (open or full change). Returns (uri, version)."""
        # start-up time: lsprotocol loads only when this runs
        from lsprotocol import types as t

        uri = path.as_uri()
        doc = self.docs.setdefault(uri, DocState())
        if doc.open and doc.text == text:
            return uri, doc.version  # same text: the server will not publish again; its last publish stands
        doc.version += 1
        doc.sent_seq = self.seq
        if not doc.open:
            self.client.text_document_did_open(t.DidOpenTextDocumentParams(
                t.TextDocumentItem(uri, language, doc.version, text)))
            doc.open = True
        else:
            self.client.text_document_did_change(t.DidChangeTextDocumentParams(
                t.VersionedTextDocumentIdentifier(doc.version, uri),
                [t.TextDocumentContentChangeWholeDocument(text)]))
        doc.text = text
        return uri, doc.version

    def close_doc(self, uri: str) -> None:
        # start-up time: lsprotocol loads only when this runs
        from lsprotocol import types as t

        doc = self.docs.get(uri)  # kept: versions only grow, so an old publish never matches a new version
        if doc is not None and doc.open and self.dead is None:
            self.client.text_document_did_close(t.DidCloseTextDocumentParams(t.TextDocumentIdentifier(uri)))
        if doc is not None:
            doc.open, doc.text = False, None

    def pulls(self) -> bool:
        """Whether to ask for diagnostics (`textDocument/diagnostic`) rather than wait for them to be pushed.

        Pulling is the only reliable way with pyright: it pushes a version's diagnostics twice, first an empty
        list (before checking), then the real one, and nothing marks which push is the last."""
        caps = self.capabilities
        return bool(self.spec.pull or (caps is not None and caps.diagnostic_provider is not None)
                    or "textDocument/diagnostic" in self.registered)

    async def pull(self, uri: str) -> list[Any]:
        # start-up time: lsprotocol loads only when this runs
        from lsprotocol import types as t

        if self.dead is not None:
            raise LspError(f"{self.spec.name} {self.dead}")
        report = await self.client.protocol.send_request_async(
            t.TEXT_DOCUMENT_DIAGNOSTIC, t.DocumentDiagnosticParams(t.TextDocumentIdentifier(uri)))
        return list(getattr(report, "items", None) or [])

    async def diagnostics(self, uri: str, version: int) -> list[Any]:
        """Wait for the publish that belongs to `version` of the document (the caller bounds the wait).

        A server that sends versions is matched by version; one that does not (jedi-language-server), by the
        first publish after the text was sent."""
        assert self.changed is not None
        doc = self.docs.get(uri)
        while True:
            if self.dead is not None:
                raise LspError(f"{self.spec.name} {self.dead}")
            got = self.published.get(uri)
            if got is not None and doc is not None:
                if got.version is not None and got.version == version:
                    return got.diagnostics
                if got.version is None and got.seq > doc.sent_seq:
                    return got.diagnostics
            self.changed.clear()
            await self.changed.wait()


def _client_capabilities() -> Any:
    # start-up time: lsprotocol loads only when this runs
    from lsprotocol import types as t

    return t.ClientCapabilities(
        workspace=t.WorkspaceClientCapabilities(configuration=True, workspace_folders=True),
        text_document=t.TextDocumentClientCapabilities(
            synchronization=t.TextDocumentSyncClientCapabilities(did_save=False),
            publish_diagnostics=t.PublishDiagnosticsClientCapabilities(version_support=True),
            diagnostic=t.DiagnosticClientCapabilities(dynamic_registration=True, related_document_support=False),
            definition=t.DefinitionClientCapabilities(link_support=False),
            references=t.ReferenceClientCapabilities(),
            hover=t.HoverClientCapabilities(content_format=[t.MarkupKind.PlainText, t.MarkupKind.Markdown]),
            call_hierarchy=t.CallHierarchyClientCapabilities(),
        ),
        general=t.GeneralClientCapabilities(position_encodings=[t.PositionEncodingKind.Utf16]),
    )


def _nothing(params: Any) -> None:
    return None


def _pinned(section: str | None, value: Any) -> Any:
    """`value` with the interpreter pinned: pyright and basedpyright run `python.pythonPath` on the host to learn
    the search paths, and without one they run the workspace's own `.venv/bin/python` (a file the repository,
    or the sandboxed model, controls; with a `.pth` in its site-packages even a symlink to a real Python runs
    repository code). So the answer always names an interpreter outside the workspace: the user's own
    `python.pythonPath` from their config (a repository's config cannot set `[lsp]`), else coder's."""
    if section == "python":
        value = dict(value) if isinstance(value, dict) else {}
        value.setdefault("pythonPath", sys.executable)
    elif section in ("python.pythonPath", "python.defaultInterpreterPath") and not value:
        value = sys.executable
    return value


def _section(settings: dict[str, Any], section: str | None) -> Any:
    """`workspace/configuration` looks settings up by dotted section ("python", "python.analysis")."""
    value: Any = settings
    for part in (section or "").split(".") if section else []:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _kill_group(pid: int) -> None:
    """Kill the server's process group (it runs in a session of its own, see start_new_session)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def initialize_params(root: Path, spec: ServerSpec) -> Any:
    """The `initialize` request. `processId` is null on purpose: the server runs in the sandbox's own pid
    namespace, where coder's pid names no process (or another one), and a server that watches its parent
    (vscode-languageserver checks `kill(pid, 0)` every few seconds) then exits with code 1 a few seconds into the
    session. The spec allows null ("not started by another process"); the server's end with coder's is kept by
    bwrap's `--die-with-parent` and the process-group kill on close."""
    from lsprotocol import types as t  # start-up time: lsprotocol loads only when a server starts

    return t.InitializeParams(
        process_id=None,
        root_uri=root.as_uri(),
        workspace_folders=[t.WorkspaceFolder(root.as_uri(), root.name)],
        initialization_options=spec.initialization_options or None,
        capabilities=_client_capabilities(),
    )
