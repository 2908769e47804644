"""Adding a tool is its contract, its module and one registration (issue 18): the policy, the frontends and the
context manager learn what a call does from the tool itself (`Tool.facts`), never from its name. A tool the rest
of the code has never heard of is registered here, and each of them treats it right with no other change."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from coder.base.resources import data_dir
from coder.config.sections import PermissionsSettings
from coder.context.history import observations
from coder.context.masking import MaskTier, keys_of
from coder.frontend.calls import input_summary, tool_title
from coder.models.types import Message, TextBlock, ToolResultBlock, ToolUseBlock
from coder.policy.rules import policy_from_config
from coder.tools import registry
from coder.tools.base import CallFacts, Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params

NAME = "write_note"


@dataclass(frozen=True)
class NoteParams(Params):
    """The new tool's params, as its contract (below) says."""

    name: str
    text: str


class NoteTool(Tool[NoteParams]):
    """The new tool's module: writes `notes/<name>.md`, and says so."""

    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def facts(self, params: NoteParams) -> CallFacts:
        path = f"notes/{params.name}.md"
        return CallFacts(f"note {path}", params.text[:200], paths=(path,), writes=True,
                         maskable=self.contract.maskable)

    def run(self, params: NoteParams, ctx: ToolContext) -> ToolResult:
        raise AssertionError("never run here")


@pytest.fixture
def registered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The three steps: a contract beside the others, the module above, one line in BUILTIN_IMPLEMENTATIONS."""
    tools = tmp_path / "tools"
    shutil.copytree(data_dir("tools"), tools)
    (tools / f"{NAME}.json").write_text(json.dumps({
        "name": NAME, "description": "Write a note.", "permission": "write",
        "input_schema": {"type": "object", "properties": {"name": {"type": "string"}, "text": {"type": "string"}},
                         "required": ["name", "text"]}}))
    monkeypatch.setattr(registry, "data_dir", lambda name: tools)
    monkeypatch.setitem(registry.BUILTIN_IMPLEMENTATIONS, NAME, f"{__name__}:NoteTool")
    registry._reference_tools.cache_clear()
    yield
    registry._reference_tools.cache_clear()


def _note(name: str) -> dict[str, str]:
    return {"name": name, "text": "remember the milk"}


def test_the_policy_asks_the_new_tool(registered: None, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    policy = policy_from_config(PermissionsSettings(), "ask", ["edit(notes/ok*)"], ["edit(notes/secret.md)"], ws)
    assert policy.decide(NAME, "write", _note("secret")).action == "deny"  # an edit rule covers its write
    assert policy.decide(NAME, "write", _note("ok")).action == "allow"
    ask = policy.decide(NAME, "write", _note("todo"))
    assert ask.action == "ask" and ask.suggested_rule == "edit(notes/todo.md)"
    outside = policy.decide(NAME, "write", _note("../../elsewhere"))
    assert outside.action == "deny" and "outside the workspace" in outside.reason
    none = PermissionsSettings()
    assert policy_from_config(none, "plan", [], [], ws).decide(NAME, "write", _note("x")).action == "deny"
    assert policy_from_config(none, "auto-edit", [], [], ws).decide(NAME, "write", _note("x")).action == "allow"
    # control: an unregistered tool of the same input says nothing of files, so no edit rule covers it
    assert policy.decide("unknown_tool", "execute", _note("secret")).action == "ask"


def test_the_frontends_and_the_builtin_set_know_the_new_tool(registered: None) -> None:
    assert tool_title(NAME, _note("todo")) == "note notes/todo.md"
    assert input_summary(NAME, _note("todo")) == "remember the milk"
    assert NAME in registry.builtin_tools() and NAME in registry.builtin_tools([NAME], for_subagent=True)
    assert tool_title("unknown_tool", _note("todo")) == "unknown_tool: todo"  # control: the generic title


def test_the_context_manager_masks_by_the_new_tool_s_facts(registered: None, tmp_path: Path) -> None:
    """A view of a note followed by the new tool writing it: the view is stale (masked), as after an edit."""
    editor = registry.builtin_by_protocol("text_editor_")
    calls = [(editor, {"command": "view", "path": "notes/todo.md"}, "old text\n" * 60),
             (NAME, _note("todo"), "Wrote notes/todo.md.")]
    calls += [(NAME, _note(f"other{i}"), f"Wrote notes/other{i}.md.") for i in range(5)]
    history = [Message.user_text("task")]
    for i, (name, args, out) in enumerate(calls):
        history.append(Message("assistant", [TextBlock("next"), ToolUseBlock(f"t{i}", name, args)]))
        history.append(Message("user", [ToolResultBlock(f"t{i}", out)]))
    assert keys_of(observations(history)[1]).writes == {"file:notes/todo.md"}
    masked = MaskTier(tmp_path, recent_turns=2, min_chars=100).run(history, {})
    assert set(masked) == {"t0"} and "stale output masked" in masked["t0"]
