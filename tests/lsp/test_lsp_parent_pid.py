"""A language server in the sandbox outlives its parent watchdog.

vscode-languageserver (basedpyright, and most servers written in TypeScript) checks every few seconds that the
`processId` of `initialize` is alive and exits with code 1 when it is not. In the sandbox's pid namespace coder's
pid names nothing, so a server told that pid died a few seconds into every session (seen under load, where the
tests outlasted the check). Both servers below start together; the control (told the host pid) proves the watchdog
fired, and the one coder starts, with `initialize_params`, must still be running then. No fixed wait: the test
waits for the control's exit."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

from lsp_support import make_repo, need, server_env

from coder.lsp.client import initialize_params
from coder.lsp.servers import ServerSpec
from coder.sandbox.confine import confined_command


def _start(repo: Path, home: Path, process_id: int | None) -> subprocess.Popen[bytes]:
    command = confined_command(["basedpyright-langserver", "--stdio"], repo, server_env(home), None)
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=server_env(home), start_new_session=True)
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # type: ignore[union-attr]
    params = {"processId": process_id, "rootUri": repo.as_uri(), "capabilities": {}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode()
    assert proc.stdin is not None
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()
    return proc


def test_a_confined_server_is_not_told_a_pid_it_cannot_see(tmp_path: Path) -> None:
    need("basedpyright-langserver", "pip install basedpyright (or pip install -e '.[dev]')")
    repo = make_repo(tmp_path / "repo", {"main.py": "x = 1\n"})
    home = tmp_path / "home"
    home.mkdir()
    spec = ServerSpec(name="basedpyright", command=["basedpyright-langserver", "--stdio"], languages=["python"])
    told = initialize_params(repo, spec).process_id
    assert told is None

    control = _start(repo, home, os.getpid())
    ours = _start(repo, home, told)
    try:
        assert control.wait(timeout=240) == 1, "the control server should exit when its parent pid is not seen"
        assert ours.poll() is None, f"the server coder starts exited with {ours.returncode} with the control"
    finally:
        for proc in (control, ours):
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
