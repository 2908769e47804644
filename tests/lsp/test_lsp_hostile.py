"""A hostile repository against the language servers coder starts on the host (red-teamed 2026-11-25), with
the real basedpyright and harmless markers in a directory the test owns outside the repository:

- basedpyright runs `python.pythonPath`, and without one the workspace's own `.venv/bin/python`, to learn its
  search paths: a script there (planted by the repository, or by the sandboxed model) ran on the host.
- a link in the workspace to a file elsewhere on the host: hover read it for the model, past the sandbox.
- a relative PATH entry found the repository's own `basedpyright-langserver`.

Servers now run in the sandbox (coder/sandbox/confine.py); each attack is tried confined and with `[sandbox]
enabled = false` (the defences that do not rely on the sandbox hold alone too)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_support import context, lsp_section, make_repo, need, only, server_env

from coder.lsp.client import LspError
from coder.lsp.manager import LspManager
from coder.lsp.navigate import readable
from coder.lsp.servers import DEFAULT_SERVERS
from coder.sandbox.profile import SandboxConfig
from coder.tools.registry import builtin_tools


def _marker_script(path: Path, marker: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho ran >> {marker}\nexec {sys.executable} \"$@\"\n")
    path.chmod(0o755)


SANDBOX = pytest.mark.parametrize("sandbox", [{}, {"enabled": False}], ids=["confined", "unconfined"])


@SANDBOX
def test_a_venv_interpreter_in_the_workspace_never_runs_on_the_host(tmp_path: Path, sandbox: dict) -> None:
    need("basedpyright-langserver", "pip install basedpyright (or pip install -e '.[dev]')")
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = outside / "venv-python-ran"
    repo = make_repo(tmp_path / "repo", {"main.py": "x = undefined_name\n"})
    _marker_script(repo / ".venv" / "bin" / "python", marker)
    manager = LspManager(repo, lsp_section({**only("basedpyright"), "wait": 30}), env=server_env(tmp_path),
                         sandbox=SandboxConfig(**sandbox))
    try:
        found = manager.diagnostics("main.py", "x = undefined_name\n", time.monotonic() + 60)
    finally:
        manager.close()
    assert any("undefined_name" in d.message for d in found)  # control: the server did run and answer
    assert not marker.exists(), "basedpyright ran the workspace's .venv/bin/python on the host"


@SANDBOX
def test_hover_does_not_read_a_host_file_through_a_link_in_the_workspace(tmp_path: Path, sandbox: dict) -> None:
    need("basedpyright-langserver", "pip install basedpyright (or pip install -e '.[dev]')")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "settings.py").write_text('"""api_token=tok_SECRET123"""\nSECRET_KEY = "HOSTSECRET"\n')
    repo = make_repo(tmp_path / "repo", {"use.py": "import stolen\nimport mine\nprint(stolen.SECRET_KEY)\n"
                                                   "print(mine.VISIBLE)\n",
                                         "mine.py": '"""in the workspace"""\nVISIBLE = "fine"\n'})
    (repo / "stolen.py").symlink_to(outside / "settings.py")
    manager = LspManager(repo, lsp_section(only("basedpyright")), env=server_env(tmp_path),
                         sandbox=SandboxConfig(**sandbox))
    tools = builtin_tools(["code_search"])
    ctx = context(repo, tmp_path, {"navigation_wait": 60}, manager=manager)
    try:
        search = tools["code_search"]
        leak = search.run(search.parse({"query_type": "hover", "query": "SECRET_KEY", "path": "use.py",
                                   "line": 3}), ctx).output
        fine = search.run(search.parse({"query_type": "hover", "query": "VISIBLE", "path": "use.py",
                                   "line": 4}), ctx).output
    finally:
        for tool in tools.values():
            tool.close()
    assert "HOSTSECRET" not in leak and "tok_SECRET123" not in leak, leak
    if sandbox:  # unconfined the server can read the file: coder withholds what it says
        assert "withheld" in leak, leak
    assert "VISIBLE" in fine and "withheld" not in fine, fine  # control: a workspace symbol's hover is shown
    assert readable(repo, (repo / "mine.py").as_uri()) and not readable(repo, (repo / "stolen.py").as_uri())


def test_a_server_found_in_the_workspace_through_path_is_not_started(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = outside / "fake-server-ran"
    repo = make_repo(tmp_path / "repo", {"main.py": "x = 1\n"})
    _marker_script(repo / "basedpyright-langserver", marker)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PATH", "." + os.pathsep + "/usr/bin" + os.pathsep + "/bin")  # a relative entry first
    assert shutil.which("basedpyright-langserver") == "./basedpyright-langserver"  # what a lookup finds
    spec = next(s for s in DEFAULT_SERVERS if s.name == "basedpyright")
    chosen = spec.executable()
    assert chosen is None or (os.path.isabs(chosen) and repo not in Path(chosen).resolve().parents)
    manager = LspManager(repo, lsp_section(only("basedpyright")),
                         env={**server_env(tmp_path), "PATH": os.environ["PATH"]})
    try:
        manager.diagnostics("main.py", "x = 1\n", time.monotonic() + 30)  # the installed server, or none
    except LspError:
        pass
    finally:
        manager.close()
    assert not marker.exists()


def test_a_confined_server_cannot_write_the_workspace_read_outside_it_or_reach_the_network(tmp_path: Path) -> None:
    from coder.sandbox.confine import confined_command

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("HOSTSECRET")
    repo = make_repo(tmp_path / "repo", {"main.py": "x = 1\n"})
    probe = (f"touch {repo}/planted 2>/dev/null && echo WROTE; cat {outside}/secret.txt 2>/dev/null; "
             f"{sys.executable} -c \"import socket; socket.create_connection(('1.1.1.1', 80), 2)\" 2>/dev/null "
             "&& echo NET; echo done")
    command = confined_command(["/bin/sh", "-c", probe], repo, server_env(tmp_path), None)
    assert command[0].endswith("bwrap")
    out = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=60).stdout
    assert out.strip().endswith("done"), out  # control: it ran
    assert "WROTE" not in out and "HOSTSECRET" not in out and "NET" not in out, out
    assert not (repo / "planted").exists()
    assert confined_command(["/bin/true"], repo, {}, SandboxConfig(enabled=False)) == ["/bin/true"]  # the user's choice
