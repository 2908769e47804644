"""Loopback servers named through the proxy's resolver, and a bash tool wired to a session's network."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import shutil
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from coder.config.layers import settings
from coder.sandbox.network import HOSTS_VAR, NetHooks
from coder.tools.base import ToolContext
from coder.tools.bash.tool import BashTool
from coder.tools.registry import load_contracts

#: the names tests use; all of them resolve (in the proxy only) to the loopback server
TEST_NAMES = ("allowed.test", "denied.test", "unlisted.test", "sub.wild.test", "files.allowed.test")
PKG = "coder-nettest-pkg"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # noqa: D102 - keep test output clean
        pass


@contextmanager
def loopback_server(root: Path) -> Iterator[int]:
    """An HTTP server on 127.0.0.1 serving `root`; yields its port."""
    handler = lambda *a, **k: _Quiet(*a, directory=str(root), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def hosts_env() -> str:
    return json.dumps(dict.fromkeys(TEST_NAMES, "127.0.0.1"))


def wheel_index(root: Path) -> None:
    """A PEP 503 index at `root/simple/` with one pure-Python wheel (built here, byte by byte)."""
    name, version = PKG.replace("-", "_"), "1.0"
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": b"VALUE = 'installed through the proxy'\n",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {PKG}\nVersion: {version}\n".encode(),
             f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
    wheel = f"{name}-{version}-py3-none-any.whl"
    (root / "files").mkdir(parents=True, exist_ok=True)
    (root / "files" / wheel).write_bytes(buf.getvalue())
    page = root / "simple" / PKG
    page.mkdir(parents=True, exist_ok=True)
    (page / "index.html").write_text(f'<html><body><a href="../../files/{wheel}">{wheel}</a></body></html>\n')
    (root / "index.html").write_text("hello from the loopback server\n")


class Asker:
    """A scripted user: answers from a list, records the questions."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def __call__(self, host: str, port: int) -> str:
        self.asked.append(host)
        return self.answers.pop(0) if self.answers else "deny"


def bash_tool(workspace: Path, state: Path, sandbox: dict[str, Any], hooks: NetHooks | None = None
              ) -> tuple[BashTool, ToolContext]:
    assert shutil.which("bwrap"), "bubblewrap is missing: apt-get install bubblewrap"
    tool = BashTool(load_contracts()["bash"])
    ctx = ToolContext(workspace, workspace, "t", threading.Event(), state, settings({"sandbox": sandbox}))
    if hooks is not None:
        ctx.services["net_hooks"] = hooks
    return tool, ctx


__all__ = ["HOSTS_VAR", "Asker", "bash_tool", "hosts_env", "loopback_server", "wheel_index"]
