"""Fixtures of the model-layer tests: scripts on disk and a running fake server.

A helper module rather than a conftest.py: several test folders import `conftest` by name, and one more
`conftest` module on the path would make those imports ambiguous. Test files import the fixtures from here."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coder.models.types import ToolSpec
from coder_testkit.fake_server import FakeServer

#: the shell tool as the Anthropic route declares it (with its server tool type)
BASH = ToolSpec("bash", "Run a shell command.", {"type": "object", "properties": {"command": {"type": "string"}},
                                                 "required": ["command"]}, anthropic_type="bash_20250124")

BASH_THEN_DONE: dict[str, Any] = {
    "turns": [
        {"text": "Let me look at the files.", "tool_calls": [{"name": "bash", "input": {"command": "ls -la"}}]},
        {"thinking": "The listing shows a Python project.", "text": "All done: it is a Python project."},
    ]
}


@pytest.fixture
def script_file(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(BASH_THEN_DONE))
    return path


@pytest.fixture
def fake(script_file: Path) -> Iterator[FakeServer]:
    with FakeServer(script_file) as server:
        yield server
