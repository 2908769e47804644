"""Servers that crash, never answer, or never report: the edit is done all the same, the wait is bounded, the
result says what happened, and a dead server is restarted once, then left alone."""

from __future__ import annotations

import time
from pathlib import Path

from lsp_support import broken, context, make_repo

from coder.tools.registry import builtin_tools

EDIT = {"command": "str_replace", "path": "a.py", "old_str": "x = 1", "new_str": "x = undefined_name"}


def _edit(tmp_path: Path, lsp: dict, **changes: str):
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    tool = builtin_tools(["str_replace_based_edit_tool"])["str_replace_based_edit_tool"]
    ctx = context(repo, tmp_path, lsp)
    started = time.monotonic()
    result = tool.run(tool.parse(dict(EDIT, **changes)), ctx)
    return repo, tool, ctx, result, time.monotonic() - started


def test_a_server_that_never_answers_costs_the_wait_and_is_stopped(tmp_path: Path) -> None:
    repo, tool, ctx, result, took = _edit(tmp_path, broken("mute", wait=1.5, start_timeout=0.5))
    assert not result.is_error
    assert (repo / "a.py").read_text() == "x = undefined_name\n"  # the edit is done
    # the edit waited at most its wait: the start failed by then, or (a loaded machine: tearing down a sandboxed
    # start can take seconds) it is still going and the edit did not wait for it
    assert ("(no diagnostics for a.py: broken could not start: did not answer `initialize` in time" in result.output
            or "(no diagnostics for a.py: broken is still starting" in result.output), result.output
    assert "the edit itself is done)" in result.output
    # bounded: an edit that waited on the mute server would hang to the test's timeout; 30 s leaves a loaded
    # machine room for the sandboxed start and its teardown (the wait itself is 1.5 s)
    assert took < 30.0
    manager = ctx.services["lsp"]
    pids = manager.pids()
    slot = manager._slots["broken"]
    deadline = time.monotonic() + 20
    while slot.failed is None and time.monotonic() < deadline:  # the start's own timeout ends it
        if slot.starting is not None and slot.starting.done():
            break
        time.sleep(0.05)
    # the edit that finds the start failed stops what is left of it (up to a second); the ones after it
    # neither start it again nor wait
    tool.run(tool.parse({"command": "str_replace", "path": "a.py", "old_str": "undefined_name", "new_str": "2"}), ctx)
    again = tool.run(tool.parse({"command": "str_replace", "path": "a.py", "old_str": "x = 2",
                              "new_str": "x = 3"}), ctx)
    # not tried again: a second start would wait its start_timeout (500 ms) at least
    assert "could not start" in again.output and again.data["diagnostics_ms"] < 400
    tool.close()
    assert all(not Path(f"/proc/{pid}/cmdline").exists() or not Path(f"/proc/{pid}/cmdline").read_bytes()
               for pid in pids)  # killed (gone, or a zombie with an empty command line)
    # and none is left at all: under load the spawn itself may outlast start_timeout (then `pids` is empty),
    # so every process of this test's server is looked for by its command line
    marker = str(repo).encode()
    left = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
            cwd = str((proc / "cwd").resolve()).encode() if b"broken_server.py" in cmdline else b""
        except OSError:
            continue
        if b"broken_server.py" in cmdline and b"mute" in cmdline and cwd.startswith(marker):
            left.append(proc.name)
    assert not left, f"the mute server outlived the session: {left}"


def test_a_server_that_crashes_is_restarted_once_then_left_alone(tmp_path: Path) -> None:
    repo, tool, ctx, result, _ = _edit(tmp_path, broken("crash-on-open"))
    assert not result.is_error and (repo / "a.py").read_text() == "x = undefined_name\n"
    assert "no diagnostics for a.py: broken exited with code 3" in result.output
    assert "crashing on didOpen" in result.output  # the server's own last words
    second = tool.run(tool.parse({"command": "str_replace", "path": "a.py", "old_str": "undefined_name",
                               "new_str": "2"}), ctx)
    assert "broken exited with code 3" in second.output  # restarted, crashed again
    assert ctx.services["lsp"]._slots["broken"].restarts == 1
    third = tool.run(tool.parse({"command": "str_replace", "path": "a.py", "old_str": "x = 2",
                              "new_str": "x = 3"}), ctx)
    assert "not restarted again this session" in third.output
    tool.close()


def test_a_server_that_never_reports_diagnostics_is_skipped_with_a_note(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    tool = builtin_tools(["str_replace_based_edit_tool"])["str_replace_based_edit_tool"]
    ctx = context(repo, tmp_path, broken("silent", wait=1.0))
    viewed = tool.run(tool.parse({"command": "view", "path": "a.py"}), ctx)  # starts the server in the background
    assert "x = 1" in viewed.output and "diagnostics" not in viewed.output
    manager = ctx.services["lsp"]
    deadline = time.monotonic() + 15
    while manager.status().get("broken") == "starting" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert manager.status()["broken"].startswith("running")
    started = time.monotonic()
    result = tool.run(tool.parse(EDIT), ctx)
    assert not result.is_error
    assert "broken did not report diagnostics in time" in result.output
    assert time.monotonic() - started < 2.5
    tool.close()


def test_a_command_that_exits_at_once_is_reported(tmp_path: Path) -> None:
    _, tool, _, result, _ = _edit(tmp_path, broken("exit"))
    assert "broken could not start" in result.output or "broken exited with code 7" in result.output
    tool.close()
