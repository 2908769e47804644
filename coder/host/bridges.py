"""Libraries that spawn their process themselves, handed a `Launch` the door prepared.

The MCP SDK's stdio client and pygls's language-server client each create their subprocess (they own its pipes,
its lifetime and its kill on close). Neither takes a ready process, but both take the program, arguments,
working directory and environment: those come from `prepare`, so the rules hold as for any host process. These
functions are the only places in coder that call those spawners (tests/host/test_host_door.py checks), and the
run-time door (coder/host/audit.py) allows the start because their frame is on the stack while the library
starts the process: only then, not in the tasks the library leaves running.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TextIO

from coder.host.audit import door
from coder.host.spawn import Launch


def mcp_stdio(launch: Launch, errlog: TextIO) -> Any:
    """The MCP SDK's stdio transport for `launch` (an async context manager). The SDK adds its minimal default
    environment (HOME, PATH, SHELL, TERM, USER, LOGNAME) under ours, and starts a new session itself."""
    from mcp.client.stdio import StdioServerParameters, stdio_client  # start-up time: the SDK loads for a server

    params = StdioServerParameters(command=launch.argv[0], args=list(launch.argv[1:]), env=launch.env,
                                   cwd=launch.cwd)
    return _entered_by_the_door(stdio_client(params, errlog=errlog))


@asynccontextmanager
@door
async def _entered_by_the_door(transport: Any) -> AsyncIterator[Any]:
    """`transport` entered (the process started) and left with the door's frame on the stack; while it is used
    (this generator suspended at its yield) the frame is not."""
    async with transport as streams:
        yield streams


@door
async def lsp_start_io(client: Any, launch: Launch) -> None:
    """Start a pygls client's server process for `launch`, in a session of its own."""
    await client.start_io(launch.argv[0], *launch.argv[1:], cwd=launch.cwd, env=launch.env,
                          start_new_session=True)


@door
def ray_init(ray: Any, **kwargs: Any) -> Any:
    """`ray.init(**kwargs)`: for `coder batch --backend ray` without `--address`, Ray starts its local cluster (the
    GCS server, the raylet, the log monitor) with command lines of its own, and no prepared launch can be handed
    to it. Those processes run coder's batch tasks, so they need this process's environment (the model's key
    included) and PATH: the one library start the door allows as the library makes it, because the user asked for
    Ray. A Ray worker then runs coder held to the door (coder/batch/ray_backend.py)."""
    return ray.init(**kwargs)
