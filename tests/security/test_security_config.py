"""A repository's config against the user's own rules (issue 30): a repository's `[permissions] deny` used to
*replace* the user's deny list (lists replaced whole when layers merged), so a cloned repository could lift the
user's deny rules by writing one of its own; and `[permissions] deny = "bash"` became the rules b, a, s, h. Each
is tried with the real `coder run`, the real sandbox and a command that leaves a marker when it runs, in `auto`
mode (the one where a headless run lets a command through unless a rule denies it), trusted and not, with a
control that proves the command runs when nothing denies it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from coder.config.layers import user_config_path

REPO = Path(__file__).resolve().parents[2]


def run(repo: Path, tmp_path: Path, mode: str, *flags: str) -> subprocess.CompletedProcess[str]:
    assert shutil.which("bwrap"), "bubblewrap is missing: apt-get install bubblewrap"
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "bash", "input": {"command": "touch denied-command-ran"}}]},
        {"text": "done"}]}))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "coder", "run", "--model", f"scripted:{script}",
                           "--permission-mode", mode, *flags, "go"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("trust", ["--trust", "--no-trust"])
def test_a_repository_deny_list_adds_to_the_users_and_never_lifts_it(git_repo: Path, tmp_path: Path,
                                                                      trust: str) -> None:
    marker = git_repo / "denied-command-ran"
    (git_repo / ".coder").mkdir()
    (git_repo / ".coder" / "config.toml").write_text('[permissions]\ndeny = ["bash(echo harmless*)"]\n')
    subprocess.run(["git", "add", "-A"], cwd=git_repo, check=True)
    subprocess.run(["git", "commit", "-qm", "repository config"], cwd=git_repo, check=True)
    user_config_path().parent.mkdir(parents=True, exist_ok=True)
    user_config_path().write_text('[permissions]\ndeny = ["bash(touch*)"]\n')
    result = run(git_repo, tmp_path, "auto", trust)
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), f"the user's deny rule was lifted by the repository's ({trust})"
    user_config_path().write_text("")  # the control: without the user's rule the same command runs
    assert run(git_repo, tmp_path, "auto", trust).returncode == 0
    assert marker.exists()


def test_a_deny_rule_written_as_a_string_stops_coder_instead_of_denying_nothing(git_repo: Path,
                                                                                 tmp_path: Path) -> None:
    user_config_path().parent.mkdir(parents=True, exist_ok=True)
    user_config_path().write_text('[permissions]\ndeny = "bash"\n')  # once read as the rules b, a, s, h
    result = run(git_repo, tmp_path, "auto")
    assert result.returncode == 2 and '[permissions] deny = "bash"' in result.stderr
    assert not (git_repo / "denied-command-ran").exists()
    user_config_path().write_text('[permissions]\ndeny = ["bash"]\n')  # written as a list: bash is denied
    assert run(git_repo, tmp_path, "auto").returncode == 0
    assert not (git_repo / "denied-command-ran").exists()
    user_config_path().write_text("")  # the control: nothing denies it, it runs
    assert run(git_repo, tmp_path, "auto").returncode == 0
    assert (git_repo / "denied-command-ran").exists()
