"""The slash commands (coder/commands/) on a real session: real store, real git checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder.commands.line import is_command
from coder.commands.modes import cycle_mode
from coder.commands.slash import completions, run_slash
from coder.policy.base import PermissionAnswer
from coder.trust import decisions as trust

WRITE = {"turns": [
    {"tool_calls": [{"name": "write_file", "input": {"path": "src/app.py", "content": "print('changed')\n"}}]},
    {"text": "changed it"},
]}


def allow_all(request):
    return PermissionAnswer(True)


def opened_session(factory, script=WRITE, mode="ask"):
    f = factory(script, mode=mode)
    opened = f(lambda e: None, allow_all, {})
    return opened


def test_help_lists_every_builtin_and_custom_commands(factory, git_repo: Path, isolated_home: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (git_repo / ".coder" / "commands").mkdir(parents=True)
    (git_repo / ".coder" / "commands" / "fixit.md").write_text(
        "---\ndescription: fix the named bug\nallowed-tools: write_file, bash(pytest*)\n---\n"
        "Fix this bug: $ARGUMENTS\n")
    user_dir = isolated_home / ".config" / "coder" / "commands"
    user_dir.mkdir(parents=True)
    (user_dir / "explain.md").write_text("---\nallowed-tools: bash(make*)\n---\nExplain the code in plain words.\n")
    monkeypatch.setattr(trust, "_DECIDED", {})
    opened = opened_session(factory)
    assert "fixit" not in run_slash(opened, "/help").text  # an untrusted repository's commands are ignored
    trust.remember_decision(git_repo, True)
    text = run_slash(opened, "/help").text
    for name in ("help", "model", "mode", "compact", "cost", "context", "diff", "review", "commit", "undo", "rewind",
                 "sessions", "resume", "clear", "init", "doctor", "quit", "fixit", "explain"):
        assert f"`/{name}" in text, name
    assert "fix the named bug" in text
    result = run_slash(opened, "/fixit the login crash")
    assert result.send == "Fix this bug: the login crash"
    decision = opened.session.parts.policy.decide("write_file", "write", {"path": "x"})
    assert decision.action == "ask"  # a repository's command never pre-allows tools
    assert run_slash(opened, "/explain src/app.py").send == "Explain the code in plain words.\n\nsrc/app.py"
    decision = opened.session.parts.policy.decide("bash", "execute", {"command": "make all"})
    assert decision.action == "allow"  # the user's own command's allowed-tools became a session rule
    assert [n for n, _ in completions(git_repo, "re")] == ["resume", "review", "rewind"]
    (git_repo / ".coder" / "commands" / "broken.md").write_text("---\ndescription: [unclosed\n---\nbody\n")
    (git_repo / ".coder" / "commands" / "help.md").write_text("cannot shadow a built-in\n")
    broken = run_slash(opened, "/broken")
    assert broken.error and "not valid YAML" in broken.text and "broken.md" in broken.text
    assert "this list" in run_slash(opened, "/help").text


def test_unknown_command_and_paths_are_not_commands(factory) -> None:
    opened = opened_session(factory)
    result = run_slash(opened, "/halp")
    assert result.error and "Unknown command `/halp`" in result.text and "/help" in result.text
    assert not is_command("/etc/passwd is odd") and is_command("/help") and is_command("/compact keep tests")


def test_mode_set_cycle_and_refusal_while_busy(factory) -> None:
    opened = opened_session(factory)
    session = opened.session
    assert run_slash(opened, "/mode plan").mode == "plan"
    assert session.parts.policy.mode == "plan"
    bad = run_slash(opened, "/mode yolo")
    assert bad.error and "unknown mode 'yolo'" in bad.text
    assert cycle_mode(session) == "ask" and cycle_mode(session) == "auto-edit" and cycle_mode(session) == "plan"
    busy = run_slash(opened, "/undo", busy=True)
    assert busy.error and "Esc" in busy.text
    assert not run_slash(opened, "/cost", busy=True).error


def test_undo_rewind_diff_cost_context(factory, git_repo: Path) -> None:
    opened = opened_session(factory)
    opened.session.send("change app")
    assert (git_repo / "src" / "app.py").read_text() == "print('changed')\n"
    diff = run_slash(opened, "/diff")
    assert "+print('changed')" in diff.diff
    cost = run_slash(opened, "/cost").text
    assert "2 model request(s)" in cost
    context = run_slash(opened, "/context").text
    assert "tool results" in context and "system prompt" in context and "of 200,000 tokens" in context
    listing = run_slash(opened, "/rewind").text
    assert "| 1 |" in listing and "change app" in listing and "`src/app.py`" in listing
    preview = run_slash(opened, "/undo")
    assert not preview.error and "src/app.py" in preview.text and "/undo yes" in preview.text
    undo = run_slash(opened, "/undo yes")
    assert not undo.error and "src/app.py" in undo.text
    assert (git_repo / "src" / "app.py").read_text() == "def greet(name):\n    return 'hello ' + name\n"
    again = run_slash(opened, "/undo")
    assert again.error and "Nothing to undo" in again.text
    assert not run_slash(opened, "/rewind 1 yes").error  # before message 1: the state /undo left


def test_commit_sessions_resume_clear_quit(factory, git_repo: Path) -> None:
    opened = opened_session(factory)
    opened.session.send("change app")
    result = run_slash(opened, "/commit fix: change the greeting")
    assert not result.error and "committed" not in result.text, result.text  # the CommitEvent says it, once
    assert any(row.type == "commit" for row in opened.store.events(opened.session.id))
    import subprocess

    log = subprocess.run(["git", "log", "--format=%s", "-1"], cwd=git_repo, capture_output=True, text=True).stdout
    assert log.strip() == "fix: change the greeting"
    assert "nothing to commit" in run_slash(opened, "/commit").text.lower()
    sessions = run_slash(opened, "/sessions").text
    assert opened.session.id in sessions and "(this one)" in sessions and "change app" in sessions
    assert run_slash(opened, "/resume").text.startswith("No other session to resume")  # only this one
    other = opened_session(factory)
    offered = run_slash(other, "/resume")
    assert offered.pick is not None and [v for v, _ in offered.pick[2]] == [opened.session.id]
    assert run_slash(other, f"/resume {opened.session.id[:-1]}").resume == opened.session.id
    missing = run_slash(other, "/resume nope")
    assert missing.error and "no session matching 'nope'" in missing.text
    assert run_slash(opened, "/clear").new_session and run_slash(opened, "/quit").quit
    assert run_slash(opened, "/exit").quit


def test_init_writes_agents_md_once(factory, git_repo: Path) -> None:
    (git_repo / "pyproject.toml").write_text("[project]\nname='demo'\n[project.optional-dependencies]\n"
                                            "dev=['pytest']\n")
    (git_repo / "tests").mkdir()
    (git_repo / "tests" / "test_app.py").write_text("def test_x():\n    assert True\n")
    opened = opened_session(factory)
    result = run_slash(opened, "/init")
    assert not result.error, result.text
    text = (git_repo / "AGENTS.md").read_text()
    assert "Python" in text and "python -m pytest -q" in text and "`src/`" in text
    assert "pip install -e '.[dev]'" in text
    again = run_slash(opened, "/init")
    assert again.error and "--force" in again.text
    assert not run_slash(opened, "/init --force").error


def test_doctor_model_compact_review(factory) -> None:
    opened = opened_session(factory)
    doctor = run_slash(opened, "/doctor").text
    assert "**python**" in doctor and "**git**" in doctor
    # a server that is off by default (or not installed) is information, not a pass: the trial read
    # "✓ pyright not installed"
    servers = [line for line in doctor.splitlines() if " off (" in line or " not installed (" in line]
    assert any("typescript-language-server" in line for line in servers), doctor
    assert all(line.lstrip().startswith("- · ") for line in servers), servers
    model = run_slash(opened, "/model")
    assert model.model and model.model.startswith("scripted:") and "context window 200,000" in model.text
    compact = run_slash(opened, "/compact keep the API")
    assert not compact.error and "Nothing needed compacting yet" in compact.text and "200,000 tokens" in compact.text
    review = run_slash(opened, "/review")
    assert "nothing to review" in review.text or "not available" in review.text
