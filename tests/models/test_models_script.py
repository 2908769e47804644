"""Script semantics: sequence, tool calls, when / repeat, exhaustion, and clear errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder.base.errors import ModelConfigError
from coder.models.script import (
    EXHAUSTED_TEXT,
    ScriptCursor,
    anthropic_match_text,
    load_script,
    openai_match_text,
)


def cursor(data: dict) -> ScriptCursor:
    return ScriptCursor(load_script(data))


def test_turns_are_served_in_order_with_stop_reasons_and_deterministic_ids() -> None:
    c = cursor({"turns": [
        {"text": "look", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}, {"name": "view", "input": {}}]},
        {"text": "done"},
    ]})
    first = c.next()
    assert first.turn.final_stop_reason == "tool_use"
    assert first.tool_ids == ["toolu_0001_0", "toolu_0001_1"]
    second = c.next()
    assert second.turn.text == "done" and second.turn.final_stop_reason == "end_turn"
    assert c.remaining == 0


def test_exhausted_script_says_so_and_ends_the_turn() -> None:
    c = cursor({"turns": [{"text": "only"}]})
    c.next()
    for _ in range(2):
        answer = c.next()
        assert answer.exhausted
        assert answer.turn.text == EXHAUSTED_TEXT
        assert answer.turn.final_stop_reason == "end_turn"


def test_when_turn_answers_matching_request_once_without_shifting_the_sequence() -> None:
    c = cursor({"turns": [
        {"text": "main 1"},
        {"when": "Summari[sz]e", "text": "the summary"},
        {"text": "main 2"},
    ]})
    assert c.next("system", "hello").turn.text == "main 1"
    assert c.next("You summarize conversations.", "Summarize this").turn.text == "the summary"
    # one-shot: the second compressor request falls through to the main sequence
    assert c.next("sys", "Summarize again").turn.text == "main 2"
    assert c.next("sys", "x").exhausted


def test_repeat_when_turn_answers_every_match_and_matches_system_prompt() -> None:
    c = cursor({"turns": [
        {"text": "main"},
        {"when": "^You are a code reviewer", "repeat": True, "text": "VERDICT: pass"},
    ]})
    for _ in range(3):
        assert c.next("You are a code reviewer. Check the diff.", "diff here").turn.text == "VERDICT: pass"
    assert c.next("You are coder.", "task").turn.text == "main"


def test_advance_false_peeks_without_consuming() -> None:
    c = cursor({"turns": [{"text": "a"}, {"text": "b"}, {"when": "x", "text": "w"}]})
    assert c.next(advance=False).turn.text == "a"
    assert c.next().turn.text == "a"
    assert c.next("", "x", advance=False).turn.text == "w"
    assert c.next("", "x").turn.text == "w"
    assert c.next("", "x").turn.text == "b"


def test_match_text_uses_last_user_message_including_tool_results() -> None:
    body = {"system": [{"type": "text", "text": "SYS"}], "messages": [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "OUTPUT"},
                                     {"type": "text", "text": "more"}]},
    ]}
    system, last = anthropic_match_text(body)
    assert system == "SYS" and "OUTPUT" in last and "more" in last and "first" not in last
    system, last = openai_match_text({"messages": [
        {"role": "system", "content": "S"}, {"role": "user", "content": "u1"},
        {"role": "assistant", "content": None, "tool_calls": []}, {"role": "tool", "content": "T"},
        {"role": "user", "content": "u2"}]})
    assert system == "S" and last == "T\nu2"


def test_yaml_scripts_load(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("turns:\n  - text: hello\n    tool_calls:\n      - name: bash\n        input: {command: pwd}\n"
                    "  - when: review\n    repeat: true\n    text: ok\n")
    script = load_script(path)
    assert script.turns[0].tool_calls[0].input == {"command": "pwd"}
    assert script.turns[1].repeat and script.turns[1].when is not None


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{not json", "not valid JSON"),
        ('{"steps": []}', "\"turns\""),
        ('{"turns": [{"txt": "typo"}]}', "unknown keys ['txt']"),
        ('{"turns": [{"text": "x", "when": "("}]}', "regular expression"),
        ('{"turns": [{"tool_calls": [{"input": {}}]}]}', "needs a \"name\""),
        ('{"turns": [{"tool_calls": [{"name": "bash", "input": "ls"}]}]}', "must be an object"),
        ('{"turns": [{}]}', "turn 1 is empty"),
        ('{"turns": [{"text": "x", "stop_reason": "nope"}]}', "stop_reason"),
    ],
)
def test_malformed_scripts_name_the_file_and_the_reason(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ModelConfigError) as info:
        load_script(path)
    assert str(path) in str(info.value)
    assert needle in str(info.value)


def test_unreadable_script_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(ModelConfigError, match="Cannot read the script file .*missing.json"):
        load_script(missing)
    bad_yaml = tmp_path / "bad.yml"
    bad_yaml.write_text("turns: [unclosed")
    with pytest.raises(ModelConfigError, match="not valid YAML"):
        load_script(bad_yaml)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ModelConfigError, match="not UTF-8"):
        load_script(binary)


def test_explicit_tool_ids_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": [{"tool_calls": [{"id": "toolu_mine", "name": "bash", "input": {}}]}]}))
    assert ScriptCursor(load_script(path)).next().tool_ids == ["toolu_mine"]
