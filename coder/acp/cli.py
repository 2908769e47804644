"""`coder acp`: serve the Agent Client Protocol on stdin/stdout until the client closes them.

Why the file descriptors are moved: stdout carries the protocol, and one stray byte on it (a library's print, a
child process that inherits fd 1) breaks the client's JSON-RPC stream. So the protocol gets private duplicates of
fds 0 and 1, fd 1 then points at stderr (which editors show as the agent's log) and fd 0 at /dev/null.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from coder.base.errors import UsageError
from coder.engine.options import add_session_flags


def register(sub: Any) -> None:
    p = sub.add_parser("acp", help="serve the Agent Client Protocol on stdio (Zed and other editors)",
                       description="Run coder as an ACP agent: an editor starts `coder acp` and talks JSON-RPC on "
                                   "its stdin and stdout. Sessions are coder's stored sessions (`coder --resume ID` "
                                   "goes on with one in the terminal). The flags set every session it opens.")
    add_session_flags(p, subcommand=True)
    p.set_defaults(func=acp_command)


def acp_command(args: Any) -> int:
    # start-up time: asyncio loads only when this runs
    import asyncio

    try:
        import acp  # noqa: F401 - the SDK is a dependency; a broken install is a user-facing error, not a traceback
    except ImportError as exc:
        raise UsageError(f"`coder acp` needs the agent-client-protocol package ({exc}): "
                         "pip install agent-client-protocol") from exc
    # start-up time: coder.acp.agent brings the ACP SDK (pydantic)
    from coder.acp.agent import CoderAgent

    if getattr(args, "resume", None) or getattr(args, "continue_last", False):
        raise UsageError("coder acp: the editor picks the session (session/load); --resume and --continue do not "
                         "apply. Start `coder acp` without them.")

    protocol_in, protocol_out = _private_stdio()
    agent = CoderAgent(args)
    try:
        asyncio.run(_serve(agent, protocol_in, protocol_out))
    finally:
        agent.close_all()
    return 0


def _private_stdio() -> tuple[int, int]:
    """Duplicates of stdin and stdout for the protocol; fd 1 becomes stderr and fd 0 /dev/null for everything else."""
    sys.stdout.flush()
    protocol_in, protocol_out = os.dup(0), os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return protocol_in, protocol_out


async def _serve(agent: Any, fd_in: int, fd_out: int) -> None:
    # start-up time: asyncio loads only when this runs
    import asyncio

    from acp import run_agent

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)  # an embedded file can be large (the SDK's default too)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd_in, "rb", 0))
    protocol = asyncio.streams.FlowControlMixin()
    transport, _ = await loop.connect_write_pipe(lambda: protocol, os.fdopen(fd_out, "wb", 0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)  # type: ignore[arg-type]
    try:
        await run_agent(agent, writer, reader)
    finally:
        agent.stop_turns()
