"""The real SDK against the fake server's faults through `coder run`; and `coder doctor`."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import coder, write_script

from coder_testkit.fake_server import FakeServer


def test_transient_faults_end_in_success(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "bash", "input": {"command": "echo ok"}}]}, {"text": "recovered"}])
    faults = ["429@1:retry-after=0.1", "529@2", "cut@3", "500@4"]
    (git_repo / ".coder").mkdir(exist_ok=True)
    (git_repo / ".coder" / "config.toml").write_text("[providers.anthropic]\nretry_base_delay = 0.05\n")
    with FakeServer(script, faults=faults) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "k"}
        result = coder("run", "--output-format", "json", "--permission-mode", "auto", "--model",
                       "anthropic:claude-sonnet-4-6", "go", cwd=git_repo, env=env, timeout=120)
        attempts = len(server.requests)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["final_text"] == "recovered" and data["turns"] == 2
    assert attempts == 6  # four faulted attempts retried, two answered


def test_api_that_keeps_failing_exit_1_session_saved(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "never"}])
    (git_repo / ".coder").mkdir(exist_ok=True)
    (git_repo / ".coder" / "config.toml").write_text(
        "[providers.anthropic]\nretry_base_delay = 0.01\nmax_retries = 2\n")
    with FakeServer(script, faults=["500@*"]) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "k"}
        result = coder("run", "--output-format", "json", "--model", "anthropic:claude-sonnet-4-6", "go",
                       cwd=git_repo, env=env, timeout=120)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    data = json.loads(result.stdout)
    assert data["exit_reason"] == "error" and "500" in data["error"]
    assert len(data["error"].splitlines()) <= 3
    stored = coder("sessions", "export", data["session_id"], cwd=git_repo).stdout
    kinds = [json.loads(x)["type"] for x in stored.splitlines()]
    assert kinds[0] == "session_start" and "user_message" in kinds and "error" in kinds


def test_doctor_reports_every_check_without_secrets(git_repo: Path) -> None:
    result = coder("doctor", "--json", cwd=git_repo, env={"ANTHROPIC_API_KEY": "sk-ant-very-secret"})
    checks = {c["name"]: c for c in json.loads(result.stdout)}
    for name in ("python", "git", "bubblewrap", "sandbox", "ripgrep", "ANTHROPIC_API_KEY", "config"):
        assert name in checks, name
    assert checks["sandbox"]["ok"], checks["sandbox"]
    assert checks["ANTHROPIC_API_KEY"]["detail"] == "set"
    assert "sk-ant-very-secret" not in result.stdout
    assert result.returncode == 0, result.stdout


def test_rejected_key_is_a_configuration_error(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "never"}])
    with FakeServer(script, faults=["401@*"]) as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "wrong"}
        result = coder("run", "--model", "anthropic:claude-sonnet-4-6", "go", cwd=git_repo, env=env, timeout=60)
        attempts = len(server.requests)
    assert result.returncode == 2 and "HTTP 401" in result.stderr and "ANTHROPIC_API_KEY" in result.stderr
    assert attempts == 1  # not retried: a bad key does not get better
    assert result.stderr.count("HTTP 401") == 1  # reported once (not "401": a session id made at 14:01 has it)
