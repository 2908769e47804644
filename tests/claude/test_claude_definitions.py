"""Claude Code's agents, commands and permission rules from a real `.claude/` folder and `~/.claude/settings.json`,
in Claude Code's own formats: the agent runs as a coder subagent with its tools mapped, the command expands as a
coder command, and the rules become coder's where they mean the same (reported where they cannot); a
repository's allow rules never widen what the user allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
from claude_support import finished, open_on, write_json, write_script

from coder.base import events as ev
from coder.base.errors import ConfigError
from coder.commands.custom import discover
from coder.ext.agents import load_agents

REVIEWER = """---
name: code-reviewer
description: Expert code review specialist. Use after writing code.
tools: Read, Grep, Glob
model: sonnet
---
You are a senior code reviewer. Report problems, never change files.
"""
FIXER = """---
name: fixer
description: Fixes small bugs.
---
You fix bugs.
"""
COMMAND = """---
allowed-tools: Bash(git status:*), Bash(git diff:*), WebFetch(domain:example.com)
argument-hint: [issue-number] [priority]
description: Fix a GitHub issue
---
Fix issue #$1 with priority $2. Context: $ARGUMENTS
"""


def test_claude_agents_and_commands_count_only_when_trusted(git_repo: Path) -> None:
    (git_repo / ".claude" / "agents").mkdir(parents=True)
    (git_repo / ".claude" / "agents" / "code-reviewer.md").write_text(REVIEWER)
    (git_repo / ".claude" / "commands" / "frontend").mkdir(parents=True)
    (git_repo / ".claude" / "commands" / "frontend" / "fix-issue.md").write_text(COMMAND)
    (Path.home() / ".claude" / "agents").mkdir(parents=True)
    (Path.home() / ".claude" / "agents" / "fixer.md").write_text(FIXER)

    untrusted = load_agents(git_repo, trusted=False)
    assert "code-reviewer" not in untrusted and "fix-issue" not in discover(git_repo, set(), trusted=False)
    agents = load_agents(git_repo, trusted=True)
    reviewer = agents["code-reviewer"]
    assert reviewer.tools == ["str_replace_based_edit_tool", "code_search"] and reviewer.permission_mode == "plan"
    assert reviewer.model is None and reviewer.prompt.startswith("You are a senior code reviewer.")
    fixer = agents["fixer"]  # no `tools`: every tool a child may have, and a mode that can write
    assert "bash" in fixer.tools and "task" not in fixer.tools and fixer.permission_mode == "auto"

    command = discover(git_repo, set(), trusted=True)["fix-issue"]
    assert command.summary == "Fix a GitHub issue (project:frontend)"
    assert command.expand("123 high") == "Fix issue #123 with priority high. Context: 123 high"
    assert command.allowed_tools == []  # a repository's command never pre-allows anything
    (Path.home() / ".claude" / "commands").mkdir(parents=True)
    (Path.home() / ".claude" / "commands" / "fix-issue.md").write_text(COMMAND)
    mine = discover(git_repo, set(), trusted=False)["fix-issue"]
    assert mine.allowed_tools == ["bash(git status:*)", "bash(git diff:*)"]  # WebFetch has no coder rule


def test_a_claude_agent_runs_as_a_subagent(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / ".claude" / "agents").mkdir(parents=True)
    (git_repo / ".claude" / "agents" / "code-reviewer.md").write_text(REVIEWER)
    model = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "tool_search", "input": {"query": "select:task"}}]},  # task is loaded on demand
        {"tool_calls": [{"name": "task", "input": {"agent": "code-reviewer", "prompt": "Review src/app.py",
                                                   "description": "review"}}]},
        {"tool_calls": [{"name": "str_replace_based_edit_tool",
                         "input": {"command": "create", "path": "child.txt", "file_text": "x"}}]},
        {"text": "Review: greet() concatenates strings; fine."},
        {"text": "The reviewer found nothing serious."},
    ])
    opened, seen = open_on(git_repo, model)
    outcome = opened.session.send("review my code")
    opened.finish("done")
    task = next(e for e in finished(seen) if e.tool == "task")
    assert not task.is_error and task.output.startswith("Review: greet() concatenates strings")
    assert task.data["agent"] == "code-reviewer" and task.data["mode"] == "plan"
    assert not (git_repo / "child.txt").exists()  # its tools only read: plan mode denied the write
    assert outcome.final_text == "The reviewer found nothing serious."


def test_permission_rules_from_claude_settings(git_repo: Path, tmp_path: Path) -> None:
    write_json(Path.home() / ".claude" / "settings.json", {"permissions": {
        "allow": ["Bash(npm run test:*)", "Grep", "mcp__github"],
        "deny": ["Read(./secrets/**)", "WebFetch(domain:example.com)", "WebSearch"]}})
    write_json(git_repo / ".claude" / "settings.json", {"permissions": {
        "allow": ["Bash(curl:*)", "Edit(src/**)"], "ask": ["Bash(git push:*)"], "deny": ["Bash(rm:*)"]}})
    opened, seen = open_on(git_repo, write_script(tmp_path / "s.json", [{"text": "ok"}]), mode="ask")
    policy = opened.session.parts.policy

    def decide(tool: str, args: dict) -> str:
        known = opened.session.parts.tools[tool]
        params = known.parse(args)
        return policy.decide(tool, known.permission_for(params, opened.session.parts.tool_ctx), args,
                             known.facts(params)).action

    assert decide("bash", {"command": "npm run test -- --watch=false"}) == "allow"  # the user's allow
    assert decide("bash", {"command": "npm run build"}) == "ask"
    assert decide("bash", {"command": "curl https://example.com"}) == "ask"  # the repository's allow: ignored
    assert decide("str_replace_based_edit_tool", {"command": "create", "path": "src/x.py", "file_text": ""}) == "ask"
    assert decide("bash", {"command": "git push origin main"}) == "ask"  # the repository's ask narrows
    assert decide("bash", {"command": "ls && rm -rf src"}) == "deny"  # the repository's deny narrows
    assert decide("str_replace_based_edit_tool", {"command": "view", "path": "secrets/key.pem"}) == "deny"
    assert decide("str_replace_based_edit_tool", {"command": "view", "path": "src/app.py"}) == "allow"
    assert {str(r) for r in policy.allow} >= {"bash(npm run test:*)", "code_search", "mcp__github__*"}
    notes = " ".join(e.message for e in seen if isinstance(e, ev.ErrorEvent))
    assert "WebFetch(domain:example.com)" in notes and "cannot match a specifier of WebFetch" in notes
    assert "web_search" in {str(r) for r in policy.deny}  # a bare Claude Code name: the tool that does its job
    assert ".claude/settings.json: 2 allow rule(s) not applied (bash(curl:*), edit(src/**))" in notes
    opened.finish("done")


def test_a_broken_user_settings_file_is_an_error_before_the_session(git_repo: Path, tmp_path: Path) -> None:
    (Path.home() / ".claude").mkdir()
    (Path.home() / ".claude" / "settings.json").write_text('{"hooks": {"PreToolUse": "not a list"}}')
    with pytest.raises(ConfigError, match=r'~/.claude/settings.json:1: hooks.PreToolUse = "not a list": expected a '
                                          r"list of objects$"):
        open_on(git_repo, write_script(tmp_path / "s.json", [{"text": "ok"}]))
