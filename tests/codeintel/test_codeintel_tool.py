"""The `code_search` tool as the engine runs it: contract, every query type, caps, and no blocking."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from coder.base.errors import ToolError
from coder.codeintel.service import SERVICE_KEY, IndexService, wait_until_built
from coder.tools.base import ToolContext
from coder.tools.registry import builtin_tools, load_contracts


def _ctx(repo: Path, tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=repo, cwd=repo, session_id="s1", cancel=threading.Event(),
                       state_dir=tmp_path / "state")


@pytest.fixture
def tool():
    return builtin_tools(["code_search"])["code_search"]


def test_contract_is_read_only_and_lists_modes() -> None:
    contract = load_contracts()["code_search"]
    assert contract.permission == "read"
    assert contract.input_schema["properties"]["query_type"]["enum"] == [
        "text", "definition", "references", "outline", "map", "hover", "calls"]  # the last two: issue 20


def test_every_query_type(git_repo: Path, tmp_path: Path, tool) -> None:
    (git_repo / "src" / "main.py").write_text(
        "from app import greet\n\nclass Runner:\n    def go(self):\n        return greet('x')\n")
    ctx = _ctx(git_repo, tmp_path)
    out = tool.run(tool.parse({"query_type": "definition", "query": "greet"}), ctx)
    assert out.output.splitlines()[:3] == ["1 definition of greet", "src/app.py:1-2 function greet",
                                           "    def greet(name)"]
    out = tool.run(tool.parse({"query_type": "definition", "query": "Runner.go"}), ctx)
    assert "src/main.py:4-5 method Runner.go" in out.output
    out = tool.run(tool.parse({"query_type": "definition", "query": "Runer"}), ctx)
    assert "closest names" in out.output and "Runner" in out.output
    out = tool.run(tool.parse({"query_type": "references", "query": "greet"}), ctx)
    assert "src/main.py\n     1: from app import greet\n     5: return greet('x')" in out.output
    out = tool.run(tool.parse({"query_type": "outline", "path": "src/main.py"}), ctx)
    assert out.output.splitlines() == ["src/main.py: 2 definitions", "     3-5     class Runner",
                                       "     4-5       def go(self)"]
    out = tool.run(tool.parse({"query_type": "text", "query": "greet\\(", "context": 1}), ctx)
    assert out.output.startswith("2 matching lines in 2 files") and "     4- " in out.output
    out = tool.run(tool.parse({"query_type": "map", "tokens": 200}), ctx)
    assert "src/app.py:" in out.output and "def greet(name)" in out.output
    assert isinstance(ctx.services[SERVICE_KEY], IndexService)


def test_results_are_capped(git_repo: Path, tmp_path: Path, tool) -> None:
    (git_repo / "src" / "many.py").write_text("".join(f"def f{i}():\n    return greet({i})\n" for i in range(300)))
    ctx = _ctx(git_repo, tmp_path)
    out = tool.run(tool.parse({"query_type": "text", "query": "greet", "max_results": 5}), ctx)
    assert "stopped at 5" in out.output and out.data["truncated"]
    out = tool.run(tool.parse({"query_type": "references", "query": "greet", "max_results": 7}), ctx)
    assert out.output.startswith("300 references to greet in 1 files (showing 7")
    assert len([line for line in out.output.splitlines() if line.startswith("    ")]) == 7


def test_bad_arguments_are_tool_errors(git_repo: Path, tmp_path: Path, tool) -> None:
    ctx = _ctx(git_repo, tmp_path)
    for args in ({"query_type": "nonsense"}, {"query_type": "definition"}, {"query_type": "text", "query": "("},
                 {"query_type": "outline", "path": "../etc/passwd"}, {"query_type": "outline", "path": "missing.py"},
                 {"query_type": "text", "query": "x", "max_results": "many"}):
        with pytest.raises(ToolError):
            tool.run(tool.parse(args), ctx)


def test_text_search_does_not_wait_for_a_cold_build(git_repo: Path, tmp_path: Path, tool) -> None:
    for i in range(400):
        (git_repo / "src" / f"mod_{i}.py").write_text(f"def fn_{i}(a, b):\n    return a + b\n" * 30)
    ctx = _ctx(git_repo, tmp_path)
    service = IndexService(git_repo)
    ctx.services[SERVICE_KEY] = service
    service.start()
    started = time.monotonic()
    out = tool.run(tool.parse({"query_type": "text", "query": "def greet"}), ctx)
    assert "src/app.py" in out.output and time.monotonic() - started < 5
    assert wait_until_built(service, 120)
    out = tool.run(tool.parse({"query_type": "definition", "query": "fn_399"}), ctx)
    assert "src/mod_399.py:1-2 function fn_399" in out.output


def test_edits_reported_by_tools_update_the_index(git_repo: Path, tmp_path: Path, tool) -> None:
    ctx = _ctx(git_repo, tmp_path)
    found = tool.run(tool.parse({"query_type": "definition", "query": "greet"}), ctx)
    assert "src/app.py:1-2 function greet" in found.output
    (git_repo / "src" / "app.py").write_text("def salute(name):\n    return name\n")
    ctx.services[SERVICE_KEY].note_changed(["src/app.py"])
    index = ctx.services[SERVICE_KEY].index
    assert [h.name for h in index.definitions("salute", fuzzy=False)] == ["salute"]
    assert index.definitions("greet", fuzzy=False) == []
