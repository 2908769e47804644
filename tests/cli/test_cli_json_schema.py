"""`coder run --json-schema FILE`: the real command line with a scripted model (issue 23)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import coder, write_script

SCHEMA = {"type": "object", "required": ["files", "ok"], "additionalProperties": False,
          "properties": {"files": {"type": "array", "items": {"type": "string"}}, "ok": {"type": "boolean"}}}
VALID = '{"files": ["src/app.py"], "ok": true}'


def schema_file(tmp_path: Path, schema: object = SCHEMA) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    return path


def result_of(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def test_invalid_then_valid_answer(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": 'Here you go: {"files": "src/app.py"}'},  # JSON, but not valid against the schema
        {"text": "```json\n" + VALID + "\n```"},
    ])
    run = coder("run", "--model", f"scripted:{script}", "--json-schema", str(schema_file(tmp_path)),
                "--output-format", "json", "list the files", cwd=git_repo)
    assert run.returncode == 0, run.stderr
    result = result_of(run.stdout)
    assert result["structured_output"] == {"files": ["src/app.py"], "ok": True}
    assert result["exit_reason"] == "done" and result["turns"] == 2


def test_the_model_is_told_the_schema_and_the_errors(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [
        {"text": '{"files": []}'},
        {"when": "does not satisfy the required JSON Schema[\\s\\S]*'ok' is a required property", "text": VALID},
        {"text": "the retry did not carry the validation errors"},
    ])
    run = coder("run", "--model", f"scripted:{script}", "--json-schema", str(schema_file(tmp_path)),
                "list the files", cwd=git_repo)
    # text format: the validated JSON is what stdout carries
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"files": ["src/app.py"], "ok": True}


def test_still_invalid_exits_1(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": '{"files": 3}'}, {"text": '{"ok": "yes"}'}])
    run = coder("run", "--model", f"scripted:{script}", "--json-schema", str(schema_file(tmp_path)),
                "--output-format", "json", "list the files", cwd=git_repo)
    assert run.returncode == 1
    result = result_of(run.stdout)
    assert result["structured_output"] is None
    assert result["exit_code"] == 1 and result["exit_reason"] == "invalid_output"
    assert "$.ok: 'yes' is not of type 'boolean'" in result["error"]
    assert result["turns"] == 2


def test_bad_schema_is_a_usage_error(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": VALID}])
    bad = schema_file(tmp_path, {"type": "object", "properties": {"ok": {"type": "no-such-type"}}})
    run = coder("run", "--model", f"scripted:{script}", "--json-schema", str(bad), "x", cwd=git_repo)
    assert run.returncode == 2
    assert "not a valid JSON Schema" in run.stderr and "properties/ok/type" in run.stderr
    assert "Traceback" not in run.stderr
    garbled = tmp_path / "garbled.json"
    garbled.write_text("{not json")
    run = coder("run", "--model", f"scripted:{script}", "--json-schema", str(garbled), "x", cwd=git_repo)
    assert run.returncode == 2 and "not JSON" in run.stderr and "Traceback" not in run.stderr
    run = coder("run", "--model", f"scripted:{script}", "--json-schema", str(tmp_path / "missing.json"), "x",
                cwd=git_repo)
    assert run.returncode == 2 and "cannot be read" in run.stderr and "Traceback" not in run.stderr
