"""Exit codes and one-paragraph errors for user mistakes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from cli_support import coder, write_script


def test_no_key_no_model_names_the_fixes(git_repo: Path) -> None:
    result = coder("run", "hello", cwd=git_repo)
    assert result.returncode == 2, result.stderr
    for needle in ("ANTHROPIC_API_KEY", "--model", "coder doctor"):
        assert needle in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_model_prefix(git_repo: Path) -> None:
    result = coder("run", "--model", "bogus:thing", "hello", cwd=git_repo)
    assert result.returncode == 2 and "bogus" in result.stderr and "Traceback" not in result.stderr


def test_unreadable_script(git_repo: Path, tmp_path: Path) -> None:
    result = coder("run", "--model", f"scripted:{tmp_path / 'missing.json'}", "hello", cwd=git_repo)
    assert result.returncode == 2 and "missing.json" in result.stderr and "Traceback" not in result.stderr


def test_cwd_not_a_directory(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    result = coder("run", "--model", f"scripted:{script}", "--cwd", str(tmp_path / "nope"), "hello")
    assert result.returncode == 2 and "not a directory" in result.stderr


def test_broken_config_names_file(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / ".coder").mkdir()
    (git_repo / ".coder" / "config.toml").write_text("max_turns = 'many'\n")
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    result = coder("run", "--model", f"scripted:{script}", "hello", cwd=git_repo)
    assert result.returncode == 2
    assert ".coder/config.toml" in result.stderr and "max_turns" in result.stderr


def test_no_task(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    result = coder("run", "--model", f"scripted:{script}", cwd=git_repo)
    assert result.returncode == 2 and "no task given" in result.stderr


def test_prompt_file_missing(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    result = coder("run", "--model", f"scripted:{script}", "--prompt-file", str(tmp_path / "p.md"), cwd=git_repo)
    assert result.returncode == 2 and "p.md" in result.stderr


def test_version_and_help_import_nothing_heavy() -> None:
    probe = (
        "import sys\n"
        "from coder.cli.main import main\n"
        "for argv in (['--version'], ['--help'], ['run', '--help']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = [m for m in ('anthropic', 'openai', 'textual', 'tree_sitter', 'git', 'mcp', 'httpx', 'pydantic',"
        " 'prompt_toolkit', 'yaml', 'pexpect') if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("HEAVY="), out[-500:]


def test_text_run_outside_git_still_works(tmp_path: Path) -> None:
    work = tmp_path / "plain"
    work.mkdir()
    script = write_script(tmp_path / "s.json", [{"text": "hello from the script"}])
    result = coder("run", "--model", f"scripted:{script}", "--output-format", "json", "hi", cwd=work)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["final_text"] == "hello from the script" and data["exit_reason"] == "done"
    listed = coder("sessions", "list", "--all", cwd=work)
    assert data["session_id"] in listed.stdout


def test_flags_before_the_subcommand_are_kept(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "bash", "input": {"command": "touch made_here"}}]}, {"text": "ok"}])
    result = coder("--deny", "bash", "--model", f"scripted:{script}", "run", "--permission-mode", "auto", "go",
                   cwd=git_repo)
    assert result.returncode == 0, result.stderr
    assert not (git_repo / "made_here").exists()
    assert "denied bash" in result.stderr  # a headless denial is visible


def test_prompt_and_prompt_file_and_empty_task(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    prompt = tmp_path / "p.md"
    prompt.write_text("   \n")
    both = coder("run", "--model", f"scripted:{script}", "--prompt-file", str(prompt), "task", cwd=git_repo)
    assert both.returncode == 2 and "not both" in both.stderr
    empty = coder("run", "--model", f"scripted:{script}", "--prompt-file", str(prompt), cwd=git_repo)
    assert empty.returncode == 2 and "is empty" in empty.stderr


def test_json_output_on_usage_error(git_repo: Path) -> None:
    result = coder("run", "--output-format", "json", "--model", "bogus:x", "hi", cwd=git_repo)
    assert result.returncode == 2
    data = json.loads(result.stdout)
    assert data["exit_reason"] == "usage_error" and data["exit_code"] == 2 and "bogus" in data["error"]


def test_unwritable_or_damaged_store(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    damaged = tmp_path / "state"
    damaged.mkdir()
    (damaged / "sessions.db").write_text("garbage" * 100)
    result = coder("run", "--model", f"scripted:{script}", "hi", cwd=git_repo, env={"CODER_STATE_DIR": str(damaged)})
    assert result.returncode == 2 and "damaged" in result.stderr and "Traceback" not in result.stderr
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    result = coder("run", "--model", f"scripted:{script}", "hi", cwd=git_repo,
                   env={"CODER_STATE_DIR": str(blocked / "sub")})
    assert result.returncode == 2 and "cannot be written" in result.stderr


def test_resume_from_another_workspace_is_refused(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}, {"text": "again"}])
    first = json.loads(coder("run", "--output-format", "json", "--model", f"scripted:{script}", "hi",
                             cwd=git_repo).stdout)
    other = tmp_path / "other"
    other.mkdir()
    result = coder("run", "--resume", first["session_id"], "more", cwd=other)
    assert result.returncode == 2 and str(git_repo) in result.stderr


def test_bad_hook_config_leaves_no_running_session(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    (git_repo / ".coder").mkdir(exist_ok=True)
    (git_repo / ".coder" / "config.toml").write_text("[[hooks.before_tool]]\nmatch = 'bash'\n")
    result = coder("run", "--trust", "--model", f"scripted:{script}", "hi", cwd=git_repo)
    assert result.returncode == 2 and "command" in result.stderr
    assert "running" not in coder("sessions", "list", cwd=git_repo).stdout


def test_an_image_flag_on_a_text_file_says_what_images_it_takes(git_repo: Path, tmp_path: Path) -> None:
    """Issue 47: `--image README.md` printed Pillow's message, which names a Python object (`<_io.BytesIO object at
    0x7f...>`)."""
    (git_repo / "README.md").write_text("# not a picture\n")
    script = write_script(tmp_path / "s.json", [{"text": "hi"}])
    result = coder("run", "--model", f"scripted:{script}", "--image", "README.md", "look", cwd=git_repo)
    assert result.returncode == 2
    assert "--image README.md: not an image coder can read (it takes PNG, JPEG" in result.stderr
    assert "object at 0x" not in result.stderr and "<_io" not in result.stderr
