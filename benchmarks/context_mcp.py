"""Three real third-party MCP servers for benchmarks/context.py --mcp and the tool-search tests.

- `git`: mcp-server-git from PyPI (12 tools; a dev dependency in pyproject.toml), run by this Python;
- `filesystem` and `everything`: the MCP project's reference servers from npm (14 and 13 tools), installed once
  with `npm install` into a cache folder (CODER_MCP_NPM_DIR, default ~/.cache/coder-dev/mcp-npm).

39 MCP tools with about 4,000 tokens of definitions, beside coder's own. Missing `node`/`npm` or the PyPI
package is an error that says how to install them, never a quiet skip.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

NPM_PACKAGES = {"filesystem": "@modelcontextprotocol/server-filesystem@2026.8.31",
                "everything": "@modelcontextprotocol/server-everything@2026.8.31"}


class MissingServer(RuntimeError):
    """A server this set needs cannot be installed or found here."""


def npm_dir() -> Path:
    return Path(os.environ.get("CODER_MCP_NPM_DIR") or Path.home() / ".cache" / "coder-dev" / "mcp-npm")


def npm_entry(name: str) -> Path:
    """The server's script, installed first when it is not there yet."""
    package = NPM_PACKAGES[name].rsplit("@", 1)[0]
    entry = npm_dir() / "node_modules" / package / "dist" / "index.js"
    if not entry.exists():
        if not shutil.which("npm") or not shutil.which("node"):
            raise MissingServer("the npm MCP servers need node and npm: apt-get install nodejs npm")
        npm_dir().mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(npm_dir()),
                               *NPM_PACKAGES.values()], capture_output=True, text=True, timeout=600, check=False)
        if proc.returncode != 0 or not entry.exists():
            raise MissingServer(f"npm install {' '.join(NPM_PACKAGES.values())} failed: {proc.stderr[-800:]}")
    return entry


def three_servers(root: Path | None = None) -> dict[str, Any]:
    """`[mcp.servers]` entries for the three servers; `root` is what the filesystem server may read."""
    if importlib.util.find_spec("mcp_server_git") is None:
        raise MissingServer("mcp-server-git is missing: pip install -e '.[dev]' (or pip install mcp-server-git)")
    node = shutil.which("node") or "node"
    wait = 90  # seconds to start: on a loaded machine the default 20 s dropped a server now and then
    return {
        "git": {"command": sys.executable, "args": ["-m", "mcp_server_git"], "startup_timeout": wait},
        "filesystem": {"command": node, "args": [str(npm_entry("filesystem")), str(root or Path.home())],
                       "startup_timeout": wait},
        "everything": {"command": node, "args": [str(npm_entry("everything"))], "startup_timeout": wait},
    }
