"""The door enforced at run time (issue 43, item 1; coder/host/audit.py): a process start that does not come
through coder/host fails while coder runs, and in this whole suite for coder's own code.

Every plant is a program that writes a marker into a folder the test owns; each refusal has a control that
starts the same thing from the suite's own code (or without the door) and finds the marker, so the plant is live.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from coder.host import HostSpawnError, audit, run
from coder.lsp.client import LoopThread
from coder.models.providers import PROVIDERS, ProviderSpec, register
from coder.models.registry import create_provider
from coder_testkit.fake_server import FakeServer

REPO = Path(__file__).resolve().parents[2]


def marker_program(folder: Path, name: str, marker: Path) -> Path:
    """An executable `folder/name` that writes `marker` (and prints what a version query would)."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(f"#!/bin/sh\necho \"$0 $*\" >> '{marker}'\necho 9.99\n")
    program.chmod(0o755)
    return program


def stub_library(folder: Path, program: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A third-party library on sys.path (outside coder and the suite) that starts a program when called; a
    module of its own per test (a name imported once stays in sys.modules)."""
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "spawny_door_stub", raising=False)
    (folder / "spawny_door_stub.py").write_text(textwrap.dedent(f"""
        import subprocess

        def build(request=None):
            subprocess.run([{str(program)!r}, "--from-a-library"], check=False)
            return "built"

        def callback(done, finished):
            try:
                build()
                done.append("started")
            except OSError as exc:
                done.append(exc)
            finished.set()
    """))
    return importlib.import_module("spawny_door_stub")


def test_the_door_is_on_in_this_suite() -> None:
    assert audit.installed()
    assert run(["true"], purpose="a test of the door", timeout=60).returncode == 0  # the door's own start


def test_a_library_called_from_coder_cannot_start_a_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "outside" / "marker"
    marker.parent.mkdir()
    program = marker_program(tmp_path / "bin", "planted", marker)
    stub = stub_library(tmp_path / "lib", program, monkeypatch)
    register(ProviderSpec(name="spawnystub", constructor="spawny_door_stub:build", usage="spawnystub:NAME"))
    try:
        with pytest.raises(HostSpawnError) as refused:  # coder's registry imports and calls the library
            create_provider("spawnystub:any")
    finally:
        PROVIDERS.pop("spawnystub", None)
    message = str(refused.value)
    assert "spawny_door_stub.py" in message and "(build)" in message  # the frame outside the door
    assert "coder/models/registry.py" in message  # and the code of coder that led there
    assert not marker.exists()
    assert stub.build() == "built"  # the control: called by the suite itself, it starts the program
    assert marker.read_text().strip().endswith("--from-a-library")


def test_a_library_on_a_thread_coder_started_cannot_start_a_process(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """No frame of coder on the stack: a callback run by an event loop in a thread coder started (the language
    servers' loop) takes that thread's owner."""
    marker = tmp_path / "outside" / "marker"
    marker.parent.mkdir()
    stub = stub_library(tmp_path / "lib", marker_program(tmp_path / "bin", "planted", marker), monkeypatch)
    loop = LoopThread("door-test")
    done: list[object] = []
    finished = threading.Event()
    # the callback itself, not a lambda of this file: no frame of the suite on that thread's stack
    loop.loop.call_soon_threadsafe(stub.callback, done, finished)
    assert finished.wait(60)
    loop.loop.call_soon_threadsafe(loop.loop.stop)
    assert isinstance(done[0], HostSpawnError) and "spawny_door_stub.py" in str(done[0])
    assert not marker.exists()
    mine = threading.Thread(target=stub.callback, args=(done, threading.Event()))  # the suite's
    mine.start()
    mine.join(60)
    assert done[1] == "started" and marker.exists()


PILLOW_EPS = textwrap.dedent("""
    import sys
    if sys.argv[1] == "door":
        from coder.host.audit import install
        install()  # as every entry point of coder does
    from PIL import EpsImagePlugin
    print("ghostscript" if EpsImagePlugin.has_ghostscript() else "no ghostscript")
""")


def test_pillow_would_start_ghostscript_and_a_coder_process_refuses_it(tmp_path: Path) -> None:
    """Pillow's EPS plugin looks for Ghostscript with `gs --version`, a raw PATH lookup: a `gs` the sandbox put
    in an activated `.venv/bin` would run. In a process held to the door it is never started."""
    marker = tmp_path / "outside" / "marker"
    marker.parent.mkdir()
    venv_bin = tmp_path / "workspace" / ".venv" / "bin"
    marker_program(venv_bin, "gs", marker)
    env = {**os.environ, "PATH": f"{venv_bin}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO)}

    def child(mode: str) -> str:
        done = subprocess.run([sys.executable, "-c", PILLOW_EPS, mode], env=env, capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert child("door") == "no ghostscript" and not marker.exists()
    assert child("control") == "ghostscript" and "--version" in marker.read_text()  # Pillow does start it


def test_coder_run_refuses_a_start_by_the_sdk_and_report_mode_lists_it(tmp_path: Path) -> None:
    """End to end: the openai SDK asks `platform.processor()`, which runs `uname -p` by a PATH lookup. With a
    stand-in `uname` first on PATH, `coder run` on the OpenAI route never starts it; `CODER_HOST_DOOR=report`
    lets it start and writes where it came from (how the inventory was taken)."""
    marker = tmp_path / "outside" / "marker"
    marker.parent.mkdir()
    bin_dir = tmp_path / "bin"
    marker_program(bin_dir, "uname", marker)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "hello"}, {"text": "hello again"}]}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    report = tmp_path / "report.jsonl"

    def coder_run(server: FakeServer, **extra: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO),
               "OPENAI_BASE_URL": server.base_url + "/v1", "OPENAI_API_KEY": "test-key", **extra}
        return subprocess.run([sys.executable, "-m", "coder", "run", "--model", "openai:gpt-4.1", "--no-sandbox",
                               "say hello"], cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)

    with FakeServer(script) as server:
        done = coder_run(server)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "hello" in done.stdout and not marker.exists()
        control = coder_run(server, CODER_HOST_DOOR="report", CODER_HOST_DOOR_REPORT=str(report))
    assert control.returncode == 0, control.stderr[-2000:]
    assert "-p" in marker.read_text()  # the plant is live: the SDK does start it
    lines = [json.loads(line) for line in report.read_text().splitlines()]
    assert any("uname -p" in line["what"] and "openai/" in line["where"] for line in lines), lines


ENTRY_POINTS = {  # module -> the function that runs first in its process
    "coder/cli/main.py": "main",  # the app, --plain, coder run, coder acp, the batch's forked agents
    "coder/codeintel/worker.py": "main",  # the parse workers
    "coder/batch/ray_backend.py": "_remote_process",  # a batch task on a Ray worker
}


@pytest.mark.parametrize("module", sorted(ENTRY_POINTS))
def test_every_entry_point_installs_the_door(module: str) -> None:
    tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == ENTRY_POINTS[module])
    calls = [n.func.id for n in ast.walk(function) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert "install" in calls, f"{module}:{function.name} does not hold its process to the door"


def test_a_clicked_link_opens_through_the_door_and_only_for_the_web(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual opens a clicked link with `webbrowser` (the whole environment, outside the door); the app opens it
    with the system's opener through the door instead, without the key, and only http(s) and mailto."""
    from textual.app import App

    from coder.host.links import open_link
    from coder.tui.app import CoderApp

    marker = tmp_path / "outside" / "marker"
    marker.parent.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    opener = bin_dir / "xdg-open"
    opener.write_text(f"#!/bin/sh\necho \"$1 key=${{ANTHROPIC_API_KEY:-none}} display=$DISPLAY\" >> '{marker}'\n")
    opener.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("DISPLAY", ":7")
    assert CoderApp.open_url is not App.open_url  # the app's own, not Textual's webbrowser
    assert open_link("file:///etc/passwd") and open_link("vscode://x/y") and open_link("javascript:alert(1)")
    assert open_link("mailto:a@example.test?attach=/root/.ssh/id_rsa")  # some mail clients attach what it names
    assert open_link("https://docs.example.test/a?b=1") is None
    for _ in range(600):  # the opener runs on its own; its line is the proof it ran
        if marker.exists() and marker.read_text().endswith("\n"):
            break
        threading.Event().wait(0.1)
    assert marker.read_text() == "https://docs.example.test/a?b=1 key=none display=:7\n"
