"""The door of a tool call (coder/tools/params.py, coder/tools/external.py): an input that does not fit is one line
per problem the model reads, nothing runs; what another agent's tool taught the models is taken as meant; a stored
or streamed input that no longer parses is described by its name, never a crash; a Claude Code hook's rewrite
comes back through the same door."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from coder.base import events as ev
from coder.context.base import PassthroughContext, Pinned
from coder.engine.session import Session
from coder.engine.session_parts import Limits, SessionParts
from coder.models.scripted import ScriptedProvider
from coder.policy.base import ModePolicy
from coder.tools.base import ClaudeCall, Tool, ToolContext, ToolContract, parse_call
from coder.tools.external import CommandTool, ExternalTool
from coder.tools.params import ToolInputError, written
from coder.tools.registry import builtin_tools, describe


def tools() -> dict[str, Tool[Any]]:
    return builtin_tools()


def refused(name: str, raw: object) -> str:
    with pytest.raises(ToolInputError) as caught:
        parse_call(tools()[name], raw)
    return str(caught.value)


def test_every_problem_is_one_line_naming_the_key_and_the_value() -> None:
    text = refused("str_replace_based_edit_tool", {"command": "delete", "path": 3, "view_range": [1],
                                                   "insert_line": "5"})
    assert text.splitlines() == [
        "Invalid input for str_replace_based_edit_tool (4 problems):",
        'command = "delete": expected one of "view", "create", "str_replace", "insert", "undo_edit"',
        "path = 3: expected a string",
        'insert_line = "5": expected a whole number (write it without quotes)',
        "view_range = [1]: must be [start, end] (end -1 = to the end)",
    ]
    assert refused("bash", {"command": "ls", "timeout": "30"}) == \
        'Invalid input for bash: timeout = "30": expected a number (write it without quotes)'
    assert refused("bash", {"command": "ls", "timeout": 0}) == \
        "Invalid input for bash: timeout = 0: must be greater than 0"
    assert refused("code_search", {"query": "x"}) == \
        "Invalid input for code_search: query_type: missing (it is required)"
    assert refused("code_search", {"query_type": "text", "query": "x", "max_results": 500}) == \
        "Invalid input for code_search: max_results = 500: must be at most 200"
    assert refused("todo", {"todos": [{"id": "1", "text": "a", "status": "later"}]}) == \
        ('Invalid input for todo: todos[0].status = "later": expected one of "pending", "in_progress", "done"')


def test_rules_over_several_keys_are_said_at_the_door_too() -> None:
    assert refused("str_replace_based_edit_tool", {"command": "create", "path": "a.py"}) == \
        "Invalid input for str_replace_based_edit_tool: file_text: `create` needs the whole content of the new file " \
        "in file_text"
    assert "insert_line (0 = before the first line)" in refused("str_replace_based_edit_tool",
                                                                 {"command": "insert", "path": "a.py", "new_str": "x"})
    assert "nothing to run" in refused("bash", {})
    assert "the plan is empty" in refused("exit_plan", {"plan": "  "})
    assert "ids must be unique" in refused("todo", {"todos": [{"id": "1", "text": "a", "status": "done"},
                                                              {"id": "1", "text": "b", "status": "done"}]})


def test_what_is_not_an_input_at_all() -> None:
    assert refused("bash", [1]) == "Invalid input for bash: the input must be a JSON object, not [1]"
    assert refused("bash", {"_invalid_json": '{"command": "ls'}) == \
        "Invalid input for bash: the input is not valid JSON: '{\"command\": \"ls'"


def test_what_the_contract_allows_besides_its_keys() -> None:
    """Keys the contract does not declare are left out (Claude Code's `description` of its Bash); null is absent."""
    call = parse_call(tools()["bash"], {"command": "ls", "description": "list", "timeout": None})
    assert call.params.command == "ls" and call.params.timeout is None
    assert call.input == {"command": "ls", "description": "list", "timeout": None}  # the wire keeps what was written


def test_other_agents_words_are_taken_as_meant() -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"
    call = parse_call(tools()["apply_patch"], {"input": patch})  # Codex's apply_patch names the text `input`
    assert call.params.patch == patch and call.tool.facts(call.params).paths == ("a.txt",)
    todo = parse_call(tools()["todo"], {"todos": [{"text": "read", "status": "completed"},
                                                  {"id": "b", "text": "write", "status": "In-Progress"}]})
    assert [(i.id, i.status) for i in todo.params.todos] == [("1", "done"), ("b", "in_progress")]


def test_describe_parses_a_stored_input_and_falls_back_to_the_name() -> None:
    assert describe("bash", {"command": "pytest -q"}).shell == "pytest -q"
    broken = describe("bash", {"command": 5})  # a call the door refused, as a stored event keeps it
    assert broken.shell is None and broken.title == 'bash: {"command": 5}'
    old_view = describe("str_replace_based_edit_tool", {"command": "view", "path": "a.py", "view_range": "1-5"})
    assert old_view.paths == ("a.py",) and old_view.title.startswith("str_replace_based_edit_tool: ")
    assert not describe("todo", {"todos": "not a list"}).maskable  # the contract's word on masking holds
    assert describe("todo", {"todos": [{"id": "1", "text": "a", "status": "completed"}]}).title == "todo: 1/1 done"
    assert describe("bash", [1]).title == "bash: {}"  # not even an object
    assert describe("no_such_tool", {"x": "y"}).title == "no_such_tool: y"


CLAUDE_CALLS = [
    ("bash", {"command": "pytest -q", "timeout": 30}),
    ("bash", {"command": "ls", "restart": True}),
    ("str_replace_based_edit_tool", {"command": "view", "path": "src/a.py", "view_range": [3, 9]}),
    ("str_replace_based_edit_tool", {"command": "create", "path": "a.py", "file_text": "x = 1\n"}),
    ("str_replace_based_edit_tool", {"command": "str_replace", "path": "a.py", "old_str": "1", "new_str": "2",
                                     "replace_all": True}),
    ("str_replace_based_edit_tool", {"command": "str_replace", "path": "a.py",
                                     "edits": [{"old_str": "a", "new_str": "b"}, {"old_str": "c", "new_str": "d"}]}),
    ("str_replace_based_edit_tool", {"command": "insert", "path": "a.py", "insert_line": 2, "insert_text": "y\n"}),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch"}),
    ("code_search", {"query_type": "text", "query": "def main", "path": "src", "glob": "*.py",
                     "case_insensitive": True}),
    ("code_search", {"query_type": "definition", "query": "main"}),
    ("task", {"prompt": "find it", "description": "a search", "agent": "explore"}),
    ("todo", {"todos": [{"id": "1", "text": "a", "status": "done"}]}),
]


@pytest.mark.parametrize("name, raw", CLAUDE_CALLS)
def test_a_claude_code_hook_that_changes_nothing_gives_back_the_same_call(name: str, raw: dict[str, Any],
                                                                         tmp_path: Path) -> None:
    """`claude_call` then `from_claude` of its own shape: the input parses back to the same params."""
    call = parse_call(tools()[name], raw)
    theirs = call.tool.claude_call(call.params, tmp_path)
    again = parse_call(call.tool, call.tool.from_claude(theirs, call.params, tmp_path))
    assert again.params == call.params, (theirs, again.input)


def test_a_hooks_rewrite_takes_its_values_and_goes_through_the_door(tmp_path: Path) -> None:
    bash = parse_call(tools()["bash"], {"command": "rm -rf build", "timeout": 30})
    assert bash.tool.claude_call(bash.params, tmp_path) == \
        ClaudeCall("Bash", {"command": "rm -rf build", "description": "", "timeout": 30000})
    rewrite = ClaudeCall("Bash", {"command": "rm -rf build/tmp", "timeout": 5000})
    safer = parse_call(bash.tool, bash.tool.from_claude(rewrite, bash.params, tmp_path))
    assert (safer.params.command, safer.params.timeout) == ("rm -rf build/tmp", 5.0)
    edit = parse_call(tools()["str_replace_based_edit_tool"], {"command": "create", "path": "a.py", "file_text": "1"})
    moved = edit.tool.from_claude(ClaudeCall("Write", {"file_path": str(tmp_path / "b.py"), "content": 7}),
                                  edit.params, tmp_path)
    with pytest.raises(ToolInputError, match=r"file_text = 7: expected a string"):  # a hook's wrong type
        parse_call(edit.tool, moved)


def test_written_leaves_the_defaults_out() -> None:
    params = parse_call(tools()["code_search"], {"query_type": "map", "max_results": 50, "tokens": 2048}).params
    assert written(params) == {"query_type": "map", "tokens": 2048}


# ---- tools whose schema arrives at run time -----------------------------------------------------------------------

SCHEMA = {"type": "object", "required": ["path"], "properties": {
    "path": {"type": "string"}, "depth": {"type": "integer", "minimum": 0},
    "tags": {"type": "array", "items": {"type": "string"}}}, "additionalProperties": False}


def external(schema: dict[str, Any]) -> ExternalTool:
    return CommandTool(ToolContract("lint", "Lint.", schema, "execute"), "true {path}", "args", 10, True)


def test_an_external_tools_input_is_checked_against_its_schema_by_jsonschema() -> None:
    tool = external(SCHEMA)
    assert parse_call(tool, {"path": "a.py", "tags": ["x"]}).params == {"path": "a.py", "tags": ["x"]}
    with pytest.raises(ToolInputError) as caught:
        parse_call(tool, {"depth": -1, "tags": ["x", 2], "colour": "red"})
    assert str(caught.value).splitlines() == [
        "Invalid input for lint (4 problems):",
        "'path' is a required property",
        "Additional properties are not allowed ('colour' was unexpected)",
        "depth: -1 is less than the minimum of 0",
        "tags[1]: 2 is not of type 'string'",
    ]
    with pytest.raises(ToolInputError, match="not valid JSON"):
        parse_call(tool, {"_invalid_json": "{"})


def test_a_schema_jsonschema_cannot_use_checks_nothing() -> None:
    """An MCP server's schema that is no JSON Schema, or names a $ref nobody can resolve: the server answers."""
    assert parse_call(external({"type": "object", "properties": {"x": {"type": 5}}}), {"x": 1}).params == {"x": 1}
    unresolved = {"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}
    assert parse_call(external(unresolved), {"x": 1}).params == {"x": 1}


# ---- through the engine: refused at the door, nothing runs, nobody is asked ------------------------------------------

class Asked:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, request: ev.PermissionRequest) -> Any:
        self.calls.append(request.tool)
        raise AssertionError("the policy asked about a call the door refused")


def test_the_engine_answers_a_call_that_does_not_fit_before_hooks_policy_or_tool(tmp_path: Path) -> None:
    script = {"turns": [{"tool_calls": [{"name": "str_replace_based_edit_tool",
                                         "input": {"command": "create", "path": 3, "file_text": None}}]},
                        {"text": "ok"}]}
    seen: list[ev.Event] = []
    ctx = ToolContext(tmp_path, tmp_path, "s1", threading.Event(), tmp_path / "state")
    asked = Asked()
    parts = SessionParts("s1", ScriptedProvider(script), tools(), ModePolicy("ask"), PassthroughContext(), ctx,
                         "system", Pinned(), Limits(), seen.append, asked)
    assert Session(parts).send("go").reason == "done"
    finished = next(e for e in seen if isinstance(e, ev.ToolCallFinished))
    assert finished.is_error and finished.output == \
        "Invalid input for str_replace_based_edit_tool: path = 3: expected a string"
    assert not asked.calls and not any(isinstance(e, (ev.ToolCallApproved, ev.PermissionRequest)) for e in seen)
    assert list(tmp_path.iterdir()) == []  # nothing was written (no state folder either: no tool ran)
