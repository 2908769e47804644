"""Libraries that spawn their process themselves, handed a `Launch` the door prepared.

The MCP SDK's stdio client and pygls's language-server client each create their subprocess (they own its pipes,
its lifetime and its kill on close). Neither takes a ready process, but both take the program, arguments,
working directory and environment: those come from `prepare`, so the rules hold as for any host process. These
two functions are the only places in coder that call those spawners (tests/host/test_host_door.py checks).
"""

from __future__ import annotations

from typing import Any, TextIO

from coder.host.spawn import Launch


def mcp_stdio(launch: Launch, errlog: TextIO) -> Any:
    """The MCP SDK's stdio transport for `launch` (an async context manager). The SDK adds its minimal default
    environment (HOME, PATH, SHELL, TERM, USER, LOGNAME) under ours, and starts a new session itself."""
    from mcp.client.stdio import StdioServerParameters, stdio_client  # start-up time: the SDK loads for a server

    params = StdioServerParameters(command=launch.argv[0], args=list(launch.argv[1:]), env=launch.env,
                                   cwd=launch.cwd)
    return stdio_client(params, errlog=errlog)


async def lsp_start_io(client: Any, launch: Launch) -> None:
    """Start a pygls client's server process for `launch`, in a session of its own."""
    await client.start_io(launch.argv[0], *launch.argv[1:], cwd=launch.cwd, env=launch.env,
                          start_new_session=True)
