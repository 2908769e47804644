"""`coder run` end to end in a temp git repository: the scripted provider in-process, and the same script through
the fake server with the real anthropic SDK; resume after SIGKILL; limits and interrupts as exit codes."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_support import REPO, coder, write_script

from coder_testkit.fake_server import FakeServer

VIEW_EDIT_RUN = [
    {"text": "Looking at the code.", "tool_calls": [
        {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "src/app.py"}}]},
    {"text": "Fixing the greeting.", "tool_calls": [
        {"name": "str_replace_based_edit_tool", "input": {
            "command": "str_replace", "path": "src/app.py", "old_str": "'hello ' + name",
            "new_str": "f'Hello, {name}!'"}}]},
    {"text": "Checking it.", "tool_calls": [
        {"name": "bash", "input": {"command": "cd src && python3 -c 'import app; print(app.greet(\"Ada\"))'"}}]},
    {"text": "The greeting now reads 'Hello, Ada!'."},
]


def run_json(*args: str, cwd: Path, env: dict[str, str] | None = None) -> dict:
    result = coder("run", "--output-format", "json", "--permission-mode", "auto", *args, cwd=cwd, env=env,
                   timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_scripted_view_edit_run(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", VIEW_EDIT_RUN)
    data = run_json("--model", f"scripted:{script}", "fix the greeting", cwd=git_repo)
    assert data["exit_reason"] == "done" and data["turns"] == 4
    assert data["files_changed"] == ["src/app.py"]
    assert data["final_text"] == "The greeting now reads 'Hello, Ada!'."
    assert "f'Hello, {name}!'" in (git_repo / "src" / "app.py").read_text()
    events = coder("sessions", "export", data["session_id"], cwd=git_repo).stdout.splitlines()
    finished = [json.loads(e) for e in events if json.loads(e)["type"] == "tool_call_finished"]
    assert [f["tool"] for f in finished] == ["str_replace_based_edit_tool"] * 2 + ["bash"]
    assert "Hello, Ada!" in finished[2]["output"] and not finished[2]["is_error"]


def test_same_script_through_fake_server_and_real_sdk(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", VIEW_EDIT_RUN)
    record = tmp_path / "requests.jsonl"
    with FakeServer(script, record=record) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test-key"}
        data = run_json("--model", "anthropic:claude-sonnet-4-6", "fix the greeting", cwd=git_repo, env=env)
        requests = server.requests
    assert data["exit_reason"] == "done" and data["turns"] == 4 and data["files_changed"] == ["src/app.py"]
    assert data["final_text"] == "The greeting now reads 'Hello, Ada!'."
    assert len(requests) == 4 and all(r.get("stream") for r in requests)
    assert data["usage"]["cache_read_tokens"] > 0  # the stable prefix was read from the (emulated) cache
    assert requests[0]["messages"][0]["content"][0]["text"] == "fix the greeting"
    last = requests[-1]["messages"][-1]["content"][0]
    assert last["type"] == "tool_result" and "Hello, Ada!" in str(last["content"])


def test_stream_json_events(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", VIEW_EDIT_RUN)
    result = coder("run", "--output-format", "stream-json", "--permission-mode", "auto", "--model",
                   f"scripted:{script}", "go", cwd=git_repo)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert all("type" in e for e in events)
    assert events[0]["type"] == "session_start" and events[-2]["type"] == "session_end"
    assert events[-1]["type"] == "result" and events[-1]["exit_reason"] == "done"
    finished = [e for e in events if e["type"] == "tool_call_finished"]
    assert {"tool", "input", "output", "is_error"} <= set(finished[0])


def test_max_turns_exit_1(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"when": ".", "repeat": True, "tool_calls": [{"name": "bash", "input": {"command": "true"}}]}])
    result = coder("run", "--output-format", "json", "--permission-mode", "auto", "--max-turns", "2", "--model",
                   f"scripted:{script}", "loop", cwd=git_repo)
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["exit_reason"] == "max_turns" and data["turns"] == 2


def test_headless_ask_is_denied_not_blocking(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "bash", "input": {"command": "touch made-by-agent"}}]}, {"text": "ok"}])
    result = coder("run", "--output-format", "stream-json", "--permission-mode", "ask", "--model",
                   f"scripted:{script}", "touch", cwd=git_repo, timeout=60)
    assert result.returncode == 0
    assert not (git_repo / "made-by-agent").exists()
    denied = [json.loads(x) for x in result.stdout.splitlines() if json.loads(x)["type"] == "tool_call_denied"]
    assert denied and "headless" in denied[0]["reason"]


def _popen(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "coder", *args], cwd=cwd, env=full_env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def _wait_for(proc: subprocess.Popen[str], kind: str, tool: str | None = None) -> list[dict]:
    seen: list[dict] = []
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        event = json.loads(line)
        seen.append(event)
        if event["type"] == kind and (tool is None or event.get("tool") == tool):
            return seen
    raise AssertionError(f"no {kind} event; saw {[e['type'] for e in seen]}")


def _own_sleep(seconds: int = 60) -> str:
    """A `sleep` command line no other process on the machine has (other runs of the suite share it): six
    decimals, the last not 0, so no other's is a prefix of it."""
    return f"sleep {seconds}.{secrets.randbelow(90000) * 10 + 100001}"


def _wait_until_running(proc: subprocess.Popen[str], command: str) -> None:
    """Until `command` runs (in the sandbox: its pid namespace is still visible from here)."""
    deadline = time.monotonic() + 60
    while subprocess.run(["pgrep", "-f", command], capture_output=True).returncode != 0:
        assert proc.poll() is None and time.monotonic() < deadline, f"{command!r} never started"
        time.sleep(0.05)


def test_resume_after_sigkill(git_repo: Path, tmp_path: Path) -> None:
    sleep = _own_sleep()
    script = write_script(tmp_path / "s.json", [
        {"text": "First a note.", "tool_calls": [{"name": "bash", "input": {"command": "echo one > one.txt"}}]},
        {"text": "Now a long job.", "tool_calls": [{"name": "bash", "input": {"command": sleep, "timeout": 90}}]},
        {"text": "never reached in the first process"}])
    proc = _popen(["run", "--output-format", "stream-json", "--permission-mode", "auto", "--model",
                   f"scripted:{script}", "do the two steps"], git_repo)
    seen = _wait_for(proc, "tool_call_approved", "bash")
    seen += _wait_for(proc, "tool_call_approved", "bash")
    _wait_until_running(proc, sleep)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    session_id = seen[0]["session_id"]
    stored = [json.loads(x) for x in coder("sessions", "export", session_id, cwd=git_repo).stdout.splitlines()]
    kinds = [e["type"] for e in stored]
    assert kinds[:2] == ["session_start", "user_message"]
    assert kinds.count("tool_call_finished") == 1 and kinds.count("assistant_message") == 2
    assert (git_repo / "one.txt").read_text() == "one\n"

    record = tmp_path / "resume.jsonl"
    resume_script = write_script(tmp_path / "r.json", [{"text": "Resumed and finished."}])
    with FakeServer(resume_script, record=record) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "k"}
        data = run_json("--model", "anthropic:claude-sonnet-4-6", "--resume", session_id, cwd=git_repo, env=env)
        body = server.requests[0]
    assert data["session_id"] == session_id and data["final_text"] == "Resumed and finished."
    texts = json.dumps(body["messages"])
    assert "do the two steps" in texts and "one.txt" in texts
    interrupted = body["messages"][-1]["content"][0]
    assert interrupted["type"] == "tool_result" and interrupted["is_error"]
    assert "stopped before" in str(interrupted["content"])


def test_sigint_exits_130_and_session_is_resumable(git_repo: Path, tmp_path: Path) -> None:
    sleep = _own_sleep()
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "bash", "input": {"command": sleep, "timeout": 90}}]}, {"text": "later"}])
    proc = _popen(["run", "--output-format", "stream-json", "--permission-mode", "auto", "--model",
                   f"scripted:{script}", "sleep"], git_repo)
    seen = _wait_for(proc, "tool_call_approved", "bash")
    _wait_until_running(proc, sleep)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.monotonic() - started < 15
    events = [json.loads(x) for x in out.splitlines()]
    assert events[-2]["type"] == "session_end" and events[-2]["reason"] == "interrupted"
    assert events[-1]["type"] == "result" and events[-1]["exit_code"] == 130
    # the stored model is the same script; a resumed scripted session continues where it stopped
    data = run_json("--resume", seen[0]["session_id"], "go on", cwd=git_repo)
    assert data["final_text"] == "later" and data["turns"] == 2


def test_wall_time_stops_a_running_tool_and_leaves_no_process(git_repo: Path, tmp_path: Path) -> None:
    marker = _own_sleep(4242)
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "bash", "input": {"command": marker, "timeout": 600}}]}, {"text": "late"}])
    started = time.monotonic()
    result = coder("run", "--output-format", "json", "--permission-mode", "auto", "--max-wall-time", "3",
                   "--model", f"scripted:{script}", "sleep", cwd=git_repo, timeout=300)
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["exit_reason"] == "wall_time"
    assert time.monotonic() - started < 120  # the command's own timeout is 600 s
    deadline = time.monotonic() + 30  # killed when coder ended; gone once the kernel has reaped it
    while (leftovers := subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.strip()):
        assert time.monotonic() < deadline, f"processes left behind: {leftovers}"
        time.sleep(0.1)


def test_continue_goes_on_with_the_latest_session_here(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "first answer"}, {"text": "second answer"}])
    first = run_json("--model", f"scripted:{script}", "one", cwd=git_repo)
    second = run_json("--continue", "two", cwd=git_repo)
    assert second["session_id"] == first["session_id"] and second["final_text"] == "second answer"
    assert second["turns"] == 2
