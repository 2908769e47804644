"""The persistent shell's protocol: markers, exit codes, state that persists, syntax errors, timeouts,
background jobs, output cleaning, restart, and the unsandboxed mode."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from coder.base.errors import ConfigError
from coder.config.layers import settings
from coder.sandbox.profile import SandboxConfig
from coder.sandbox.shell import PersistentShell
from coder.sandbox.text import clean_output
from coder.tools.base import ToolContext
from coder.tools.bash.tool import UNSANDBOXED_NOTE, BashTool
from coder.tools.params import ToolInputError
from coder.tools.registry import builtin_tools, load_contracts


@pytest.fixture
def shell(git_repo: Path, tmp_path: Path):
    assert shutil.which("bwrap"), "bubblewrap is missing: apt-get install bubblewrap"
    sh = PersistentShell(git_repo, SandboxConfig())
    sh.start()
    yield sh
    sh.close()


def _tool(workspace: Path, state: Path, sandbox: dict[str, Any] | None = None) -> tuple[BashTool, ToolContext]:
    tool = BashTool(load_contracts()["bash"])
    return tool, ToolContext(workspace, workspace, "t", threading.Event(), state, settings({"sandbox": sandbox or {}}))


def test_exit_codes_come_from_the_marker(shell: PersistentShell) -> None:
    assert shell.run("true", 5).exit_code == 0
    assert shell.run("false", 5).exit_code == 1
    assert shell.run("(exit 42)", 5).exit_code == 42
    # output that imitates a marker does not confuse the reader
    fake = shell.run("printf '\\036deadbeef:99:0:/\\036\\n'; echo real; (exit 7)", 5)
    assert fake.exit_code == 7 and "real" in fake.output
    no_newline = shell.run("printf 'no newline at end'", 5)
    assert no_newline.output == "no newline at end"


def test_cd_export_functions_persist(shell: PersistentShell, git_repo: Path) -> None:
    shell.run("cd src && export GREETING=hi && greet() { echo \"$GREETING $1\"; }", 5)
    result = shell.run("pwd; greet there", 5)
    assert result.output.split("\n")[:2] == [str(git_repo / "src"), "hi there"]
    assert result.cwd == str(git_repo / "src")


def test_heredocs_and_multi_line_scripts(shell: PersistentShell) -> None:
    script = ("cat > /tmp/x.py <<'EOF'\nprint('from heredoc', 1 + 1)\nEOF\npython3 /tmp/x.py\n"
              "for i in 1 2 3; do\n  echo line $i\ndone\n")
    result = shell.run(script, 10)
    assert result.output == "from heredoc 2\nline 1\nline 2\nline 3\n"
    long_line = "echo " + "x" * 10_000  # longer than a pty's line buffer
    assert shell.run(long_line, 5).output.strip() == "x" * 10_000


def test_syntax_error_runs_nothing_and_does_not_wedge(shell: PersistentShell, git_repo: Path) -> None:
    result = shell.run("touch created.txt\necho 'unclosed", 5)
    assert result.exit_code == 2
    assert "unexpected EOF" in result.output
    assert not (git_repo / "created.txt").exists()
    result = shell.run("if true; then echo missing-fi", 5)
    assert result.exit_code == 2 and "syntax error" in result.output
    assert shell.run("echo fine", 5).output == "fine\n"


def test_timeout_interrupts_and_keeps_state(shell: PersistentShell) -> None:
    shell.run("export KEEP=yes", 5)
    started = time.monotonic()
    result = shell.run("echo before; sleep 600", 1)
    assert time.monotonic() - started < 60
    assert result.timed_out and result.output.startswith("before")
    assert any("timed out after 1s" in n and "kept its state" in n for n in result.notes)
    assert shell.run("echo $KEEP", 5).output == "yes\n"


def test_busy_loop_in_the_shell_itself_is_interrupted(shell: PersistentShell) -> None:
    result = shell.run("while :; do :; done", 1)
    assert result.timed_out
    assert shell.run("echo ok", 5).output == "ok\n"


def test_sigint_ignoring_command_is_killed(shell: PersistentShell) -> None:
    result = shell.run("trap '' INT; python3 -c 'import signal,time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
                       "time.sleep(60)'", 1)
    assert result.timed_out
    assert any("SIGKILL" in n or "restarted" in n for n in result.notes)
    assert shell.run("echo ok", 5).output == "ok\n"


def test_idle_timeout(shell: PersistentShell) -> None:
    result = shell.run("echo start; sleep 30", 20, idle_timeout=1)
    assert result.timed_out and "produced no output for 1s" in result.notes[0]


def test_cancel_event_interrupts(shell: PersistentShell) -> None:
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    result = shell.run("sleep 30", 20, cancel=cancel)
    assert "interrupted by the user" in result.notes[0]
    assert shell.run("echo ok", 5).output == "ok\n"


def test_background_jobs_do_not_block(shell: PersistentShell) -> None:
    started = time.monotonic()
    result = shell.run("sleep 600 & echo launched", 120)
    assert result.output == "launched\n"
    assert time.monotonic() - started < 60  # a call that waited for the job would take its 120 s timeout
    assert "sleep 600" in shell.run("jobs", 5).output


def test_ansi_cr_and_invalid_utf8(shell: PersistentShell) -> None:
    result = shell.run("printf '\\033[1;31mred\\033[0m plain\\n'; printf 'progress 10%%\\rprogress 100%%\\n'; "
                       "printf 'bad \\377\\376 bytes\\n'", 5)
    assert result.output == "red plain\nprogress 100%\nbad \ufffd\ufffd bytes\n"
    assert clean_output(b"\x1b]0;title\x07ok\x1b[2K\n") == "ok\n"


def test_pagers_and_editors_are_disabled(shell: PersistentShell, git_repo: Path) -> None:
    started = time.monotonic()
    result = shell.run("git log --oneline | cat; git log -1 --format=%s; echo $PAGER $GIT_PAGER $TERM", 120)
    assert "initial" in result.output and "cat cat dumb" in result.output
    assert time.monotonic() - started < 60  # a pager waiting for keys would hold the call to its 120 s timeout


def test_restart_through_the_tool(git_repo: Path, tmp_path: Path) -> None:
    tool, ctx = _tool(git_repo, tmp_path / "state")
    try:
        tool.run(tool.parse({"command": "export X=1"}), ctx)
        assert tool.run(tool.parse({"command": "echo ${X:-unset}"}), ctx).output == "1\n"
        restarted = tool.run(tool.parse({"restart": True}), ctx)
        assert restarted.data["restarted"] is True and "restarted" in restarted.output
        assert tool.run(tool.parse({"command": "echo ${X:-unset}"}), ctx).output == "unset\n"
        both = tool.run(tool.parse({"command": "echo again", "restart": True}), ctx)
        assert "again" in both.output and "restarted first" in both.output
    finally:
        tool.close()


def test_tool_result_shape_and_errors(git_repo: Path, tmp_path: Path) -> None:
    tool, ctx = _tool(git_repo, tmp_path / "state", {"max_timeout": 2})
    try:
        nothing_to_run = "command: nothing to run: give a `command` (or `restart: true` to restart the shell)"
        for nothing, line in [({}, nothing_to_run),
                              ({"command": "ls", "timeout": -1}, "timeout = -1: must be greater than 0")]:
            with pytest.raises(ToolInputError) as refused:
                tool.parse(nothing)
            assert str(refused.value) == f"Invalid input for bash: {line}"
        result = tool.run(tool.parse({"command": "exit_code_test() { return 3; }; exit_code_test"}), ctx)
        assert result.data == {**result.data, "exit_code": 3, "timed_out": False, "truncated": False}
        assert "[exit code: 3]" in result.output
        assert tool.run(tool.parse({"command": "true"}), ctx).output == "(no output)"
        capped = tool.run(tool.parse({"command": "sleep 5", "timeout": 100}), ctx)
        assert "capped at 2s" in capped.output and capped.data["timed_out"] is True
        long = tool.run(tool.parse({"command": "seq 1 50000"}), ctx)
        assert long.data["truncated"] is True and "lines cut" in long.output
        assert ctx.services["shell"].sandboxed
    finally:
        tool.close()
    assert "shell" in ctx.services and not ctx.services["shell"].alive


def test_bad_sandbox_config_is_a_readable_error_before_any_command(git_repo: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[sandbox\] timeoutt: unknown key \(did you mean timeout\?"):
        _tool(git_repo, tmp_path / "state", {"timeoutt": 5})


def test_unsandboxed_mode_says_so(git_repo: Path, tmp_path: Path) -> None:
    tool, ctx = _tool(git_repo, tmp_path / "state", {"enabled": False})
    try:
        result = tool.run(tool.parse({"command": "cd src; echo $HOME; ls /proc | wc -l"}), ctx)
        assert result.output.count("unsandboxed") == 1 and UNSANDBOXED_NOTE in result.output
        assert result.data["sandboxed"] is False
        assert int(result.output.split("\n")[1]) > 20  # the host's /proc, many processes
        assert tool.run(tool.parse({"command": "pwd"}), ctx).output.startswith(str(git_repo / "src"))
    finally:
        tool.close()


def test_registry_builds_the_bash_tool() -> None:
    tools = builtin_tools(["bash"])
    contract = tools["bash"].contract
    assert contract.permission == "execute" and contract.anthropic_type == "bash_20250124"
    assert set(contract.input_schema["properties"]) == {"command", "timeout", "restart"}


def test_a_shell_never_closed_leaves_nothing_behind(git_repo: Path) -> None:
    import gc
    import os

    sh = PersistentShell(git_repo, SandboxConfig())
    sh.start()
    control, pid = sh.control_dir, sh.child.pid
    groups = list(sh.cgroups.dirs) if sh.cgroups else []
    assert sh.run("echo hi", 5).output == "hi\n"
    del sh
    gc.collect()
    assert not control.exists()
    assert not os.path.exists(f"/proc/{pid}")
    assert not any(d.exists() for d in groups)


def test_the_shell_terminal_is_as_wide_as_the_users(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 32: commands in the sandbox formatted their output for 200 columns whatever the user's terminal was.
    The user's terminal here is COLUMNS/LINES (what `shutil.get_terminal_size` reads first); a resize between
    commands reaches the next one."""
    monkeypatch.setenv("COLUMNS", "97")
    monkeypatch.setenv("LINES", "31")
    sh = PersistentShell(git_repo, SandboxConfig())
    sh.start()
    try:
        assert sh.run("stty size <&1", 30).output.strip() == "31 97"
        monkeypatch.setenv("COLUMNS", "132")
        assert sh.run("stty size <&1", 30).output.strip() == "31 132"
    finally:
        sh.close()
