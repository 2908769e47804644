"""The ACP agent: sessions, prompt turns, permissions and cancel over the SDK's connection.

Threads: the SDK runs on an asyncio loop; the engine is synchronous and blocks (model streams, tools, the
permission question). So each prompt turn runs `Session.send` in a worker thread, and the engine's callbacks hop
back to the loop with `run_coroutine_threadsafe`, waiting for each update to be written: updates keep their
order, and a slow client slows the engine rather than piling up memory. `session/cancel` sets the session's
cancel event (what Esc does in the REPL) and cancels a permission question still waiting.

Sessions are coder's stored sessions: the ACP session id is the store's id, so a session started in the editor
goes on in the terminal with `coder --resume ID`, and `session/load` of a terminal session replays it in the editor.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    AuthenticateResponse,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
)

from coder import __version__
from coder.acp import permission
from coder.acp.updates import STOP_REASONS, Translator, replay
from coder.base import events as ev
from coder.base.errors import CoderError
from coder.commands.approval import approval
from coder.commands.modes import current_mode, set_mode
from coder.config.modes import MODES
from coder.engine.builder import open_session
from coder.engine.history import stored_events
from coder.engine.options import options_from_args
from coder.models.images import ImageRefused, prepare
from coder.models.types import ImageBlock
from coder.policy.base import PermissionAnswer

#: how long the engine's thread waits for one update to be written (a client that stopped reading)
CALL_TIMEOUT = 60.0
MODE_NAMES = {"plan": "Plan (read only)", "ask": "Ask before changes", "auto-edit": "Auto-edit",
              "auto": "Auto (no questions)"}


@dataclass
class Live:
    """One open coder session and what the ACP side keeps for it."""

    opened: Any  # coder.engine.builder.Opened
    translator: Translator
    ready: bool = False
    busy: bool = False
    waiting: concurrent.futures.Future[Any] | None = None  # the permission question the client has not answered
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def session(self) -> Any:
        return self.opened.session


class CoderAgent:
    """Implements the SDK's `Agent` protocol on top of `open_session` (the composition root every frontend uses).

    `args` are the parsed `coder acp` flags (model, permission mode, rules, sandbox, trust); each session opens
    with them and the working directory the client names."""

    def __init__(self, args: Any) -> None:
        self.args = args
        self.conn: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sessions: dict[str, Live] = {}
        self.closing = False  # the client went away: the engine's callbacks stop waiting for the loop
        self.reads_buffers = False  # the client offers fs/read_text_file: attached files come from its buffers

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # ---- lifecycle ---------------------------------------------------------------------------------------------
    async def initialize(self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
                         **kwargs: Any) -> InitializeResponse:
        self.loop = asyncio.get_running_loop()
        fs = getattr(client_capabilities, "fs", None)
        self.reads_buffers = bool(getattr(fs, "read_text_file", False))
        return InitializeResponse(
            protocol_version=min(int(protocol_version), PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(load_session=True, prompt_capabilities=PromptCapabilities(
                embedded_context=True, image=True)),
            agent_info=Implementation(name="coder", title="coder", version=__version__), auth_methods=[])

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        return AuthenticateResponse()  # model keys come from coder's own config and environment

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        live = await self._open(cwd, None)
        return NewSessionResponse(session_id=live.session.id, modes=self._modes(live))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> LoadSessionResponse:
        live = self.sessions.get(session_id)
        if live is None:
            live = await self._open(cwd, session_id)

        events = await asyncio.to_thread(stored_events, live.opened.store, live.session.id)
        for update in replay(events, live.translator.cwd):
            await self.conn.session_update(session_id=live.session.id, update=update)
        return LoadSessionResponse(modes=self._modes(live))

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        try:
            set_mode(self._live(session_id).session, mode_id)
        except CoderError as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from exc
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        live = self._live(session_id)
        with live.lock:
            if live.busy:
                raise RequestError.invalid_request({"message": "a prompt turn is already running in this session"})
            live.busy = True
        try:
            blocks = await self._with_buffers(session_id, prompt)
            images = prompt_images(blocks)
            attached = await asyncio.to_thread(live.opened.attach, prompt_words(blocks), images)
            outcome = await asyncio.to_thread(live.session.send, prompt_text(blocks), attached)
        finally:
            live.busy = False
        if outcome.reason not in STOP_REASONS:  # a limit, an error or the stuck detector: say why in the chat
            why = f" ({outcome.error})" if outcome.error else ""
            await self.conn.session_update(session_id=session_id, update=_text(
                f"\n\ncoder: stopped: {outcome.reason}{why}"))
        meta = {"coder/evidence": outcome.evidence} if outcome.evidence is not None else None  # issue 49
        return PromptResponse(stop_reason=STOP_REASONS.get(outcome.reason, "end_turn"),  # type: ignore[arg-type]
                              field_meta=meta)

    async def _with_buffers(self, session_id: str, blocks: list[Any]) -> list[Any]:
        """Files the user attached by link, read through the client when it offers `fs/read_text_file`: the
        editor's buffer, unsaved edits included, is what the user looks at. A file it cannot read stays a link
        (`@path`: the model reads the disk with its tools)."""
        if not self.reads_buffers:
            return blocks
        # start-up time: the ACP SDK (pydantic) loads only when this runs
        from acp.schema import EmbeddedResourceContentBlock, TextResourceContents

        out: list[Any] = []
        for block in blocks:
            uri = str(getattr(block, "uri", "")) if getattr(block, "type", "") == "resource_link" else ""
            if uri.startswith("file://"):
                try:
                    read = await self.conn.read_text_file(session_id=session_id, path=_path_of(uri))
                    block = EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
                        uri=uri, text=read.content))
                except Exception as exc:  # noqa: BLE001 - the link still names the file
                    print(f"coder acp: fs/read_text_file {uri}: {exc}", file=sys.stderr)
            out.append(block)
        return out

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        live = self.sessions.get(session_id)
        if live is None:
            return
        live.session.interrupt()
        if live.waiting is not None:
            live.waiting.cancel()

    def stop_turns(self) -> None:
        """The connection ended (on the loop, before it stops): running turns are interrupted and questions
        cancelled, so their worker threads end and the loop's shutdown does not wait on them forever."""
        self.closing = True
        for live in self.sessions.values():
            live.session.interrupt()
            if live.waiting is not None:
                live.waiting.cancel()

    def close_all(self) -> None:
        """After the loop: every open session is closed and saved, resumable later."""
        for live in list(self.sessions.values()):
            live.session.interrupt()
            try:
                live.opened.finish("done")  # stored with its status; one that never got a prompt is not kept
            except Exception as exc:  # noqa: BLE001 - one session failing to close must not keep the others open
                print(f"coder acp: closing {live.session.id}: {exc}", file=sys.stderr)
        self.sessions.clear()

    # ---- sessions ----------------------------------------------------------------------------------------------
    async def _open(self, cwd: str, resume: str | None) -> Live:
        holder: list[Live] = []

        def on_event(event: ev.Event) -> None:
            if holder and holder[0].ready:
                self._forward(holder[0], event)
            elif isinstance(event, ev.ErrorEvent):  # notes while opening (trust, sandbox): the agent's log
                print(f"coder acp: {event.message}", file=sys.stderr)

        options = options_from_args(self.args, cwd=Path(cwd), resume=resume, continue_last=False)
        try:
            opened = await asyncio.to_thread(open_session, options, on_event, self._asker(holder))
        except CoderError as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from exc
        live = Live(opened, Translator(Path(opened.session.parts.tool_ctx.cwd), dict(opened.session.parts.tools)))
        holder.append(live)
        live.ready = True
        self.sessions[opened.session.id] = live
        return live

    def _live(self, session_id: str) -> Live:
        live = self.sessions.get(session_id)
        if live is None:
            raise RequestError.invalid_params({"message": f"no open session {session_id!r}: use session/load"})
        return live

    def _modes(self, live: Live) -> SessionModeState:
        return SessionModeState(current_mode_id=current_mode(live.session),
                                available_modes=[SessionMode(id=m, name=MODE_NAMES.get(m, m)) for m in MODES])

    # ---- engine thread -> loop ---------------------------------------------------------------------------------
    def _call(self, coro: Any) -> Any:
        """Run `coro` on the loop from the engine's thread and wait for it (order and back-pressure)."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(CALL_TIMEOUT)

    def _forward(self, live: Live, event: ev.Event) -> None:
        if self.closing:
            return
        for update in live.translator.convert(event):
            try:
                self._call(self.conn.session_update(session_id=live.session.id, update=update))
            except Exception as exc:  # noqa: BLE001 - a client that went away must not crash the turn
                print(f"coder acp: session/update failed: {exc}", file=sys.stderr)
                return

    def _asker(self, holder: list[Live]) -> Any:
        def ask(request: ev.PermissionRequest) -> PermissionAnswer:
            if not holder or self.closing:  # while opening (none is asked today), or the client is gone
                return PermissionAnswer(False, message="nobody can answer: the editor is not connected")
            return self._ask(holder[0], request)

        return ask

    def _ask(self, live: Live, request: ev.PermissionRequest) -> PermissionAnswer:
        """The engine's `ask`: the client answers through `session/request_permission`."""
        where = None if request.agent else (live.opened.workspace, live.session.parts.tool_ctx.cwd)
        view = approval(request.tool, request.input, request.suggested_rule, where)
        plan = isinstance(request, ev.PlanProposed)
        call = permission.tool_call(request, "Approve the plan" if plan else view.title, view.detail, view.diff or "",
                                    live.translator.current_call if plan else request.id)
        assert self.loop is not None
        future = asyncio.run_coroutine_threadsafe(self.conn.request_permission(
            session_id=live.session.id, tool_call=call, options=permission.options(request)), self.loop)
        live.waiting = future
        try:
            response = future.result()
        except (concurrent.futures.CancelledError, Exception) as exc:  # noqa: BLE001 - cancelled or gone
            response = None
            if not isinstance(exc, concurrent.futures.CancelledError):
                print(f"coder acp: session/request_permission failed: {exc}", file=sys.stderr)
        finally:
            live.waiting = None
        answer, stop = permission.answer(response, request)
        if stop:
            live.session.interrupt()
        return answer


def prompt_text(blocks: list[Any]) -> str:
    """The user's message from ACP content blocks: text as is, a linked file as `@path`, an embedded resource
    (an open buffer, a selection) as a fenced block under its URI, so the model sees what the editor attached."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"@{_path_of(block.uri)}")
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            if text is not None:
                parts.append(f"\n{_path_of(resource.uri)}:\n```\n{text}\n```\n")
            else:
                parts.append(f"@{_path_of(resource.uri)}")
    return "\n".join(p for p in parts if p) or ("(see the image)" if any(
        getattr(b, "type", "") == "image" for b in blocks) else "(empty prompt)")


def prompt_words(blocks: list[Any]) -> str:
    """What of a prompt the person wrote or linked, the only part that may attach files (coder/engine/mentions.py):
    the text blocks, and `@path` for each linked file the client did not embed. An embedded resource's text (a
    buffer, a selection) is the file's content, not the person's words: a path in it attaches nothing."""
    parts: list[str] = []
    for block in blocks:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link" or (kind == "resource" and getattr(block.resource, "text", None) is None):
            parts.append(f"@{_path_of(block.uri if kind == 'resource_link' else block.resource.uri)}")
    return "\n".join(parts)


def prompt_images(blocks: list[Any]) -> list[ImageBlock]:
    """The images of a prompt (issue 35: ACP's image content, base64 with its MIME type), made to obey the API's
    rules; one that cannot be sent is refused with the reason, before the turn starts."""
    out: list[ImageBlock] = []
    for block in blocks:
        if getattr(block, "type", "") != "image":
            continue
        name = _path_of(str(getattr(block, "uri", None) or f"image {len(out) + 1}"))
        try:
            out.append(prepare(base64.b64decode(str(getattr(block, "data", "")), validate=True), name))
        except (ImageRefused, binascii.Error, ValueError) as exc:
            raise RequestError.invalid_params({"message": f"{name}: {exc}"}) from exc
    return out


def _path_of(uri: str) -> str:
    return uri[len("file://"):] if uri.startswith("file://") else uri


def _text(text: str) -> Any:
    # start-up time: the ACP SDK (pydantic) loads only when this runs
    from acp import helpers

    return helpers.update_agent_message_text(text)
