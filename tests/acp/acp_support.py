"""A real ACP client (the `agent-client-protocol` SDK's client side) that spawns `coder acp` as a subprocess.

The client records every session update and answers permission questions with a policy the test sets: an option
id to pick, or "cancel" (the client cancels the turn while the question waits, and answers it cancelled, as the
protocol asks of clients).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
)

REPO = Path(__file__).resolve().parents[2]


class RecordingClient:
    """Implements the SDK's `Client` protocol: records updates, answers permission requests."""

    def __init__(self, answer: str = "allow_once", buffers: dict[str, str] | None = None) -> None:
        self.answer = answer
        self.buffers = buffers  # path -> the editor's buffer text; None: no fs capability offered
        self.reads: list[str] = []
        self.updates: list[tuple[str, Any]] = []
        self.questions: list[Any] = []
        self.conn: Any = None
        self.session_id = ""
        self.first_text = asyncio.Event()

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.questions.append((tool_call, options))
        if self.answer == "cancel":
            await self.conn.cancel(session_id=session_id)
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        if getattr(update, "session_update", "") == "agent_message_chunk":
            self.first_text.set()

    async def write_text_file(self, **kwargs: Any) -> None:
        raise NotImplementedError("coder does not write through the client")

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> ReadTextFileResponse:
        if self.buffers is None or path not in self.buffers:
            raise NotImplementedError(f"no buffer for {path}")
        self.reads.append(path)
        return ReadTextFileResponse(content=self.buffers[path])

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=self.buffers is not None,
                                                            write_text_file=False))

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    # ---- what the tests read -----------------------------------------------------------------------------------
    def kinds(self) -> list[str]:
        return [u.session_update for _, u in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for _, u in self.updates if u.session_update == kind)

    def of(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if u.session_update == kind]


def write_script(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"turns": turns}))
    return path


def user_config(home: Path, text: str) -> None:
    """The user's config (the isolated HOME of the test: conftest points XDG_CONFIG_HOME into it)."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "coder"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(text)


@asynccontextmanager
async def coder_acp(client: RecordingClient, cwd: Path, *flags: str, env: dict[str, str] | None = None):
    """`python -m coder acp FLAGS` in `cwd`, initialized; yields (connection, process)."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    async with spawn_agent_process(client, sys.executable, "-m", "coder", "acp", *flags, cwd=cwd, env=env) as (
            conn, proc):
        init = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION,
                                                      client_capabilities=client.capabilities()), 60)
        conn.init_response = init
        yield conn, proc


def coder_cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real command line (`python -m coder ARGS`) with this checkout on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "coder", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, input="")
