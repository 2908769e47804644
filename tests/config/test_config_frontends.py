"""A wrong value stops every frontend at start-up, before any session: the real `coder` command, exit code 2, one
line on stderr naming the file, line, section and key, no traceback, nothing stored, nothing done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_config_values import ISSUE  # the issue's 18 wrong values, with what each line must say

from coder.config.layers import user_config_path

REPO = Path(__file__).resolve().parents[2]

EDIT = [{"tool_calls": [{"name": "str_replace_based_edit_tool",
                         "input": {"command": "create", "path": "done.txt", "file_text": "the agent worked\n"}}]},
        {"text": "Created done.txt."}]


def coder(*args: str, cwd: Path, env: dict[str, str] | None = None,
          stdin: str = "") -> subprocess.CompletedProcess[str]:
    """The real command line of this checkout."""
    full = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "coder", *args], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=120, input=stdin)


def write_script(path: Path, turns: list[dict]) -> Path:
    path.write_text(json.dumps({"turns": turns}))
    return path


def user_config(text: str) -> Path:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def assert_stopped(result, path: Path, says: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"coder: {path}:") and says in lines[0], lines[0]
    assert lines[0][len(f"coder: {path}:"):].split(":", 1)[0].isdigit(), lines[0]  # then the line of the key


@pytest.mark.parametrize(("text", "says"), ISSUE, ids=[text.replace("\n", " ") for text, _ in ISSUE])
def test_the_issues_values_stop_coder_run_before_the_agent_works(git_repo: Path, tmp_path: Path, text: str,
                                                                 says: str) -> None:
    """The issue's 18 wrong values, each in the user's config of a real `coder run --commit`: exit 2, one line
    naming the file, the line, the section and the key, before the agent works and before a session is stored."""
    path = user_config(text + "\n")
    script = write_script(tmp_path / "s.json", EDIT)
    result = coder("run", "--model", f"scripted:{script}", "--permission-mode", "auto", "--commit", "write it",
                   cwd=git_repo)
    assert_stopped(result, path, says)
    assert not (git_repo / "done.txt").exists()  # before the agent's work, not after it (`--commit` used to)
    listed = coder("sessions", "list", cwd=git_repo)  # works with a broken config: it reads none
    assert listed.returncode == 0 and "no sessions" in listed.stdout, listed.stdout  # none was stored


def test_the_same_run_with_a_good_config_does_the_work(git_repo: Path, tmp_path: Path) -> None:
    """The control for the test above: the same command, with the same keys written right, works and commits."""
    user_config('[vcs]\nkeep_sessions = 5\n[edit]\nsyntax_guard = false\n[permissions]\ndeny = ["bash"]\n')
    script = write_script(tmp_path / "s.json", EDIT)
    result = coder("run", "--model", f"scripted:{script}", "--permission-mode", "auto", "--commit", "write it",
                   cwd=git_repo)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert (git_repo / "done.txt").read_text() == "the agent worked\n"
    assert "done.txt" in subprocess.run(["git", "show", "--name-only", "HEAD"], cwd=git_repo, capture_output=True,
                                        text=True, check=True).stdout


@pytest.mark.parametrize("argv", [
    [],  # the app (the plain REPL here: stdin is not a terminal)
    ["--plain"],
    ["acp"],
    ["review"],
    ["config"],
    ["batch", "issues.jsonl"],
    ["swebench", "run", "--dataset", "princeton-nlp/SWE-bench_Lite"],
], ids=lambda a: " ".join(a) or "coder")
def test_every_frontend_stops_at_start_up(git_repo: Path, argv: list[str]) -> None:
    path = user_config('max_turns = 10\n[vcs]\nhooks = "Sandbox"\n')
    assert_stopped(coder(*argv, cwd=git_repo, stdin="hello\n"), path, '[vcs] hooks = "Sandbox": expected one of')


def test_a_repository_mistake_names_the_repository_file(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / ".coder").mkdir()
    repo_file = git_repo / ".coder" / "config.toml"
    repo_file.write_text("[context]\ncompact_after = 3\n")
    script = write_script(tmp_path / "s.json", EDIT)
    result = coder("run", "--model", f"scripted:{script}", "hi", cwd=git_repo)
    assert_stopped(result, repo_file, "[context] compact_after: unknown key (did you mean compact_at?")


def test_coder_config_says_where_each_value_was_set(git_repo: Path, tmp_path: Path) -> None:
    path = user_config('max_turns = 10\n\n[sandbox]\ntimeout = 30\n')
    (git_repo / ".coder").mkdir()
    (git_repo / ".coder" / "config.toml").write_text("max_turns = 5\n[providers.openai]\nbase_url = 'http://x'\n")
    result = coder("config", cwd=git_repo, env={"CODER_MAX_COST": "2"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"max_turns       = 5   # repository {git_repo}/.coder/config.toml:1" in lines  # lowered: allowed
    assert f"sandbox.timeout = 30.0   # user {path}:4" in lines
    assert "max_cost        = 2.0   # environment" in lines
    assert any(line.startswith("ignored: ") and "[providers]" in line for line in lines)  # never from a repository
    assert not any(line.startswith("max_wall_time") for line in lines)  # built-in: only with --all
    every = coder("config", "--all", "--json", cwd=git_repo)
    rows = {row["key"]: row for row in json.loads(every.stdout)["settings"]}
    assert rows["max_wall_time"] == {"key": "max_wall_time", "value": 3600.0, "from": "built-in"}
    assert rows["vcs.hooks"]["value"] == "sandbox"
    one = coder("config", "sandbox.timeout", cwd=git_repo)
    assert one.stdout.strip() == f"sandbox.timeout = 30.0   # user {path}:4"
    assert coder("config", "sandbox.nope", cwd=git_repo).returncode == 2
