"""Prompts have one template syntax, `{{name}}`, and it is strict (issue 18): a template and its caller must agree
on the variables when the template is loaded, so a typo fails here instead of reaching the model as text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from coder.base.errors import PromptError
from coder.base.resources import data_dir, parse_template, prompt, template
from coder.batch.instance_run import INSTANCE_VARIABLES
from coder.batch.testbed import ENV_NOTE_VARIABLES
from coder.engine.builder import SYSTEM_PROMPT_VARIABLES, render_system_prompt
from coder.engine.verify import NUDGE_VARIABLES, RAN_VARIABLES

#: every template of prompts/ and the variables its caller fills (the callers name the same sets)
TEMPLATES = {
    "system.md": set(SYSTEM_PROMPT_VARIABLES),
    "compact.md": {"kept_turns", "focus"},
    "compact_extend.md": {"kept_turns", "focus"},
    "commit_message.md": {"task", "diff"},
    "subagent.md": {"agent_prompt", "workspace", "cwd"},
    "review_checklist_user.md": {"task", "guidance", "context", "diff"},
    "review_review_user.md": {"task", "checklist", "context", "diff"},
    "review_confirm_user.md": {"task", "finding", "context", "diff"},
    "swebench_instance.md": set(INSTANCE_VARIABLES),
    "swebench_environment.md": set(ENV_NOTE_VARIABLES),
    "verify_nudge.md": set(NUDGE_VARIABLES),
    "verify_ran.md": set(RAN_VARIABLES),
}


def test_every_prompt_loads_with_the_variables_its_caller_fills() -> None:
    names = {p.relative_to(data_dir("prompts")).as_posix() for p in data_dir("prompts").rglob("*.md")}
    for name in sorted(names):
        loaded = template(name, TEMPLATES.get(name, ()))  # raises PromptError on any disagreement
        assert loaded.variables == TEMPLATES.get(name, set())


def test_one_syntax_only() -> None:
    """The old `$name` (string.Template) and `{name}` (str.replace) placeholders are gone from every prompt."""
    for path in data_dir("prompts").rglob("*.md"):
        text = re.sub(r"\{\{\s*\w+\s*\}\}", "", path.read_text(encoding="utf-8"))
        assert not re.search(r"\$[A-Za-z_]\w*|\{[A-Za-z_]\w*\}", text), path


def test_missing_unknown_and_malformed_variables_fail_at_load() -> None:
    with pytest.raises(PromptError, match="missing diff"):
        template("commit_message.md", ("task",))
    with pytest.raises(PromptError, match="unknown tsak"):
        template("commit_message.md", ("task", "diff", "tsak"))
    with pytest.raises(PromptError, match="malformed placeholder"):
        parse_template("x.md", "see {{ two words }}", ())
    with pytest.raises(PromptError, match="missing focus, kept_turns"):
        prompt("compact.md")  # a template with variables cannot be read as plain text by mistake


def test_render_takes_exactly_the_declared_values_in_one_pass() -> None:
    loaded = template("commit_message.md", ("task", "diff"))
    with pytest.raises(PromptError, match="missing diff"):
        loaded.render(task="x")
    with pytest.raises(PromptError, match="unknown extra"):
        loaded.render(task="x", diff="y", extra="z")
    text = loaded.render(task="fix {{diff}}", diff="-a\n+b {json} $HOME")
    assert "fix {{diff}}" in text and "+b {json} $HOME" in text  # values are never expanded again


def test_the_system_prompt_is_filled(tmp_path: Path) -> None:
    text = render_system_prompt(tmp_path, tmp_path, True, "bubblewrap", "use tabs")
    assert str(tmp_path) in text and "use tabs" in text and "{{" not in text
