"""A real MCP server for the tests, written with the official SDK: stdio by default, `http PORT` for streamable
HTTP on 127.0.0.1. `crash` kills the process (to test restarts); the marker file counts starts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp.server.mcpserver import Image, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("demo")
STARTS = os.environ.get("DEMO_STARTS_FILE")
if STARTS:
    with open(STARTS, "a") as f:
        f.write("start\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def write_note(text: str) -> str:
    """Write a note into the server's working directory."""
    Path("note-from-mcp.txt").write_text(text)
    return "written"


@server.tool()
def crash() -> str:
    """Kill the server process."""
    os._exit(3)


@server.tool()
def plot(width: int, height: int) -> list:
    """A chart as a PNG image (issue 35: an image result passes through as an image), and a caption."""
    import io  # only this tool needs an image library

    from PIL import Image as Picture

    out = io.BytesIO()
    Picture.new("RGB", (width, height), (10, 120, 200)).save(out, "PNG")
    return [f"chart {width}x{height}", Image(data=out.getvalue(), format="png")]


@server.tool()
def env_probe() -> str:
    """Say whether the parent's API key leaked into this server."""
    return "leaked" if os.environ.get("ANTHROPIC_API_KEY") else "clean"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
