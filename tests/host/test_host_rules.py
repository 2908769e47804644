"""The door's rules, each tried with real processes, each with a control that shows what it prevents.

A workspace here is a folder the test registers (`register_workspace`), as a session does for the one it serves;
the registrations are undone after each test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coder.host import (
    HostSpawnError,
    ProcessLimits,
    Text,
    TimeoutExpired,
    python_module,
    register_workspace,
    run,
    start,
    stop_all,
    which,
)
from coder.host import spawn as door
from coder.host.pty import spawn_pty
from coder.host.python import isolated_launcher

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def forget_workspaces():
    before = dict(door._WORKSPACES)
    yield
    door._WORKSPACES.clear()
    door._WORKSPACES.update(before)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    register_workspace(ws)
    return ws


def _plant_program(folder: Path, name: str, marker: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(f"#!/bin/sh\necho planted >> {marker}\n")
    program.chmod(0o755)


def test_a_program_on_a_workspace_path_entry_is_never_run(workspace: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "marker"
    _plant_program(workspace / ".venv" / "bin", "git", marker)
    path = f"{workspace / '.venv' / 'bin'}:{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)
    import shutil

    assert shutil.which("git") == str(workspace / ".venv" / "bin" / "git")  # control: PATH alone picks the plant
    out = run(["git", "--version"], purpose="test", timeout=30, text=True)
    assert out.stdout.startswith("git version") and not marker.exists()
    assert which("git") != str(workspace / ".venv" / "bin" / "git")


def test_relative_path_entries_and_relative_programs_are_refused(workspace: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "marker"
    _plant_program(workspace / "bin", "rg", marker)
    monkeypatch.setenv("PATH", f"bin:{os.environ['PATH']}")
    with pytest.raises(HostSpawnError):
        run(["bin/rg", "--version"], purpose="test", timeout=30, workdir=workspace)
    out = run(["rg", "--version"], purpose="test", timeout=30, workdir=workspace, text=True)
    assert "ripgrep" in out.stdout and not marker.exists()
    control = subprocess.run(["rg", "--version"], cwd=workspace, capture_output=True)  # PATH's `bin` = the plant
    assert control.returncode == 0 and marker.exists()


def test_cwd_is_neutral_unless_named_and_the_environment_is_scrubbed(workspace: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t0ken")
    out = run(["sh", "-c", "pwd; env"], purpose="test", timeout=30, text=True).stdout.splitlines()
    assert out[0] == "/"
    assert not any(line.startswith(("ANTHROPIC_API_KEY=", "MY_SERVICE_TOKEN=")) for line in out)
    assert any(line.startswith("HOME=") for line in out)  # control: an environment was passed
    named = run(["pwd"], purpose="test", timeout=30, workdir=workspace, text=True).stdout.strip()
    assert named == str(workspace.resolve())


def test_stdin_is_closed_and_a_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    assert run(["cat"], purpose="test", timeout=30).stdout == b""  # would wait on our stdin otherwise
    pidfile = tmp_path / "grandchild"
    started = time.monotonic()
    with pytest.raises(TimeoutExpired):
        run(["sh", "-c", f"sleep 300 & echo $! > {pidfile}; wait"], purpose="test", timeout=2)
    assert time.monotonic() - started < 60
    pid = int(pidfile.read_text())
    for _ in range(200):  # reaped by init once killed: gone within a moment
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the grandchild outlived the timeout")


@pytest.mark.parametrize("text", [False, True])
def test_a_program_that_ended_is_done_though_another_process_holds_its_pipes(tmp_path: Path, text: bool) -> None:
    """A process outside the program's group that holds its output pipes (here one it started in a session of its
    own; in the suite, one forked elsewhere in the process as the pipes were made) kept `run` waiting for the pipes
    to close: past the timeout, and then, with the group killed, until that process ended (a burner run's
    `git config --list`: 300 s). The program's end is the end: what it wrote, its exit status."""
    pidfile = tmp_path / "holder"
    command = f"setsid sleep 120 & echo $! > {pidfile}; echo done; exit 3"
    try:
        result = run(["bash", "-c", command], purpose="test", timeout=60, text=text)
    finally:
        with contextlib.suppress(ProcessLookupError, ValueError, FileNotFoundError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
    assert result.returncode == 3 and result.stdout == ("done\n" if text else b"done\n"), result


def test_a_fifo_in_the_workspace_is_never_given_by_name(workspace: Path) -> None:
    fifo = workspace / "pyproject.toml"
    os.mkfifo(fifo)
    with pytest.raises(HostSpawnError, match="FIFO"):
        run(["cat", "pyproject.toml"], purpose="test", timeout=30, workdir=workspace)
    with pytest.raises(HostSpawnError):
        run(["cat", f"--file={fifo}"], purpose="test", timeout=30)
    (workspace / "link").symlink_to(fifo)
    with pytest.raises(HostSpawnError):
        run(["cat", str(workspace / "link")], purpose="test", timeout=30)
    # text that happens to be a FIFO's name is text
    assert run(["echo", Text("pyproject.toml")], purpose="test", timeout=30, workdir=workspace).returncode == 0
    with pytest.raises(subprocess.TimeoutExpired):  # control: the plain program blocks on it
        subprocess.run(["cat", "pyproject.toml"], cwd=workspace, timeout=2, capture_output=True)


def test_our_python_never_imports_from_the_working_directory(tmp_path: Path) -> None:
    """A repository holding a `coder/` package: `python -m` in it imports the repository's (control); the door's
    isolated entry point imports ours, even when the working directory is that repository."""
    repo = tmp_path / "repo"
    marker = tmp_path / "marker"
    (repo / "coder" / "host").mkdir(parents=True)
    plant = f"open({str(marker)!r}, 'a').write('imported\\n')\n"
    (repo / "coder" / "__init__.py").write_text(plant)
    (repo / "coder" / "host" / "__init__.py").write_text(plant)
    (repo / "coder" / "host" / "env.py").write_text(plant)
    control = subprocess.run([sys.executable, "-m", "coder.host.env"], cwd=repo, capture_output=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    assert control.returncode == 0 and marker.exists()
    marker.unlink()
    register_workspace(repo)
    argv = python_module("coder.host.env")
    assert argv[1] == "-I" and str(repo) not in argv[4].split(os.pathsep)
    out = run(argv, purpose="test", timeout=60, workdir=repo, text=True)
    assert out.returncode == 0, out.stderr
    assert not marker.exists()


def test_the_fork_servers_launcher_puts_our_import_path_first() -> None:
    """multiprocessing starts its fork server as `<launcher> -B -c CODE` and the server imports its preload before
    it takes the parent's sys.path: with `-I` alone an installed coder (another checkout's) was preloaded. The
    launcher gives CODE this process's import path first, past the interpreter flags (control: -m is untouched)."""
    launcher = isolated_launcher()
    probe = "import sys, coder; print(sys.flags.isolated, sys.flags.dont_write_bytecode, coder.__file__)"
    out = run([launcher, "-B", "-c", probe, "arg"], purpose="test", timeout=60, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "1", str(REPO / "coder" / "__init__.py")]
    control = run([launcher, "-m", "json.tool", "--help"], purpose="test", timeout=60, text=True)
    assert control.returncode == 0 and "json.tool" in control.stdout


def test_limits_are_set_by_the_wrapper_not_in_python(tmp_path: Path) -> None:
    limits = ProcessLimits({"core": 0, "fsize": 2 * 1024 * 1024, "nproc": 4000})
    report = ["/bin/bash", "-c", "ulimit -c; ulimit -f; ulimit -u"]  # bash counts file size in KiB
    out = run(report, purpose="test", timeout=30, text=True, env={"PATH": os.defpath})
    assert out.stdout.split()[1] != "2048"  # control: not set by default
    proc = start(report, purpose="test", env={"PATH": os.defpath}, limits=limits, text=True)
    stdout, _ = proc.communicate(timeout=30)
    core, fsize, nproc = stdout.split()
    assert (core, fsize) == ("0", "2048")
    assert nproc != "unlimited" and int(nproc) <= 4000
    big = start(["sh", "-c", f"head -c 3M /dev/zero > {tmp_path / 'big'}; echo rc=$?"], purpose="test",
                env={"PATH": os.defpath}, limits=limits, text=True, stderr=subprocess.STDOUT)
    out_big, _ = big.communicate(timeout=30)
    assert "File too large" in out_big and (tmp_path / "big").stat().st_size <= 2 * 1024 * 1024


def test_pty_child_has_the_terminal_and_its_own_session(tmp_path: Path) -> None:
    child = spawn_pty(["/bin/sh", "-c", "tty; ps -o sid= -p $$; echo end"], purpose="test", workdir=None,
                      env={"PATH": os.defpath}, dimensions=(30, 100))
    data = b""
    while b"end" not in data:
        try:
            chunk = os.read(child.child_fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    child.wait()
    child.close()
    lines = data.decode().split()
    assert lines[0].startswith("/dev/pts/"), data
    assert int(lines[1]) == child.pid  # its own session, the pty its controlling terminal
    assert child.exitstatus == 0


def test_stop_all_ends_every_running_host_process() -> None:
    proc = start(["sleep", "300"], purpose="test", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.poll() is None
    assert stop_all() >= 1
    assert proc.wait(timeout=30) == -signal.SIGKILL


def test_doctor_says_when_coder_itself_runs_from_the_workspace(tmp_path: Path) -> None:
    from coder.engine.doctor import _install_check

    assert _install_check(tmp_path).ok
    venv_like = Path(sys.executable).resolve().parent.parent  # a workspace holding the interpreter, as a .venv
    check = _install_check(venv_like)
    assert not check.ok and "inside this workspace" in check.detail and check.fix
