"""Helpers for tests/lsp: real temp git repos, a tool context, the real servers (installed by `pip install -e
.[dev]`; a missing one fails with the command that installs it)."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

from repo_support import git

from coder.config.layers import settings
from coder.config.programs import LspSettings
from coder.lsp.hook import install as install_language_servers
from coder.tools.base import ToolContext

BROKEN = Path(__file__).with_name("broken_server.py")


def need(program: str, install: str) -> str:
    """The full path of a server's command; an assertion naming the install command when it is missing."""
    found = shutil.which(program) or (str(Path(sys.executable).parent / program)
                                      if (Path(sys.executable).parent / program).is_file() else None)
    assert found, f"{program} is not installed: {install}"
    return found


def make_repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init")
    return root


def server_env(home: Path) -> dict[str, str]:
    """What a server gets in tests: PATH and a private HOME (never the real one)."""
    return {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home), "LANG": "C.UTF-8"}


def lsp_section(lsp: dict[str, Any] | None = None) -> LspSettings:
    """An `[lsp]` table, checked as the config loader checks it."""
    return settings({"lsp": lsp or {}}).lsp


def context(repo: Path, state: Path, lsp: dict[str, Any] | None = None, trusted: bool = True,
            manager: Any = None) -> ToolContext:
    config = settings({"lsp": lsp or {}})
    config.trusted = trusted
    ctx = ToolContext(repo, repo, "test", threading.Event(), state, config)
    install_language_servers(ctx.services)  # as the session's builder does
    if manager is not None:
        ctx.services["lsp"] = manager
    return ctx


def only(name: str) -> dict[str, Any]:
    """An [lsp] section with every default Python server off but `name`."""
    return {"servers": {n: {"enabled": n == name} for n in ("basedpyright", "pyright", "jedi-language-server")}}


def broken(mode: str, wait: float = 10.0, start_timeout: float = 15.0) -> dict[str, Any]:
    """An [lsp] section whose Python server is tests/lsp/broken_server.py in `mode`."""
    return {"wait": wait, "start_timeout": start_timeout,
            "servers": {"broken": {"command": [sys.executable, str(BROKEN), mode], "languages": ["python"]}}}
