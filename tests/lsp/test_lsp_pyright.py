"""Diagnostics after edits and precise navigation with the real basedpyright server, on a real temp git repo.

One server serves the whole module (it takes a few seconds to start); each test edits its own file."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lsp_support import context, lsp_section, make_repo, need, only, server_env

from coder.lsp.manager import LspManager
from coder.tools.registry import builtin_tools

SHAPES = '''class Circle:
    def area(self):
        return 3.14


class Square:
    def area(self):
        return 4.0


def total(shapes):
    return sum(s.area() for s in shapes)
'''

USE = '''from shapes import Circle, total

c = Circle()
print(c.area(), total([c]))
'''


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    need("basedpyright-langserver", "pip install basedpyright (or pip install -e '.[dev]')")
    base = tmp_path_factory.mktemp("pyright")
    repo = make_repo(base / "repo", {"shapes.py": SHAPES, "use.py": USE, "old_error.py": "x = undefined_a\n",
                                     "patched.py": "def f(a, b):\n    return a\n\n\nf(1, 2)\n",
                                     "bad.py": "value = 1\n"})
    manager = LspManager(repo, lsp_section(only("basedpyright")), env=server_env(base))
    tools = builtin_tools(["str_replace_based_edit_tool", "apply_patch", "code_search"])
    yield repo, manager, tools, base
    pids = manager.pids()
    for tool in tools.values():
        tool.close()  # every tool closes the shared manager; twice is harmless
    assert manager.closed
    for pid in pids:  # shut down: the process group is gone
        deadline = time.monotonic() + 30
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def _ctx(served, **lsp):
    repo, manager, _, base = served
    return context(repo, base, {"wait": 20, **lsp}, manager=manager)


def test_an_undefined_name_comes_back_in_the_same_result(served) -> None:
    repo, _, tools, _ = served
    edit = tools["str_replace_based_edit_tool"]
    result = edit.run(edit.parse({"command": "str_replace", "path": "use.py", "old_str": "print(c.area(), total([c]))",
                       "new_str": "print(c.area(), totl([c]))"}), _ctx(served))
    assert not result.is_error
    assert "Edited use.py" in result.output
    assert "Diagnostics from basedpyright" in result.output
    assert 'use.py:4:17: error: "totl" is not defined' in result.output
    assert result.data["diagnostics"][0]["code"] == "reportUndefinedVariable"
    # the fix comes back clean: nothing appended
    fixed = edit.run(edit.parse({"command": "str_replace", "path": "use.py", "old_str": "totl([c])",
                              "new_str": "total([c])"}), _ctx(served))
    assert "Diagnostics" not in fixed.output and fixed.data["diagnostics"] == []


def test_old_errors_are_not_blamed_on_the_edit(served) -> None:
    repo, _, tools, _ = served
    edit = tools["str_replace_based_edit_tool"]
    result = edit.run(edit.parse({"command": "insert", "path": "old_error.py", "insert_line": 0,
                       "insert_text": "import os\n\nprint(os.sep)\n"}), _ctx(served))
    assert not result.is_error
    assert '"undefined_a" is not defined' not in result.output  # there before the edit, only moved down
    assert result.data["diagnostics"] == []
    again = edit.run(edit.parse({"command": "insert", "path": "old_error.py", "insert_line": 3,
                      "insert_text": "y = undefined_a\n"}), _ctx(served))
    assert again.output.count('"undefined_a" is not defined') == 1  # the second occurrence is new


def test_a_patch_with_a_wrong_argument_count_is_reported(served) -> None:
    _, _, tools, _ = served
    patch = "*** Begin Patch\n*** Update File: patched.py\n@@\n-f(1, 2)\n+f(1)\n*** End Patch"
    result = tools["apply_patch"].run(tools["apply_patch"].parse({"patch": patch}), _ctx(served))
    assert not result.is_error
    assert 'patched.py:5:1: error: Argument missing for parameter "b"' in result.output
    patcher = tools["apply_patch"]
    added = patcher.run(patcher.parse({"patch": "*** Begin Patch\n*** Add File: added.py\n+print(nowhere)\n"
                                                "*** End Patch"}), _ctx(served))
    assert 'added.py:1:7: error: "nowhere" is not defined' in added.output  # a new file: all its errors are new


def test_warnings_only_when_configured_and_ignored_codes_stay_out(served) -> None:
    _, _, tools, _ = served
    edit = tools["str_replace_based_edit_tool"]
    result = edit.run(edit.parse({"command": "str_replace", "path": "bad.py", "old_str": "value = 1",
                       "new_str": "import not_a_module_anywhere\nvalue = 1"}), _ctx(served))
    assert "Diagnostics" not in result.output  # reportMissingImports: the host's environment's business
    shown = edit.run(edit.parse({"command": "str_replace", "path": "bad.py", "old_str": "value = 1",
                      "new_str": "value = 1\nimport not_a_module_either"}), _ctx(served, ignore=[]))
    assert 'Import "not_a_module_either" could not be resolved' in shown.output


def test_references_through_the_server_tell_same_named_methods_apart(served) -> None:
    repo, _, tools, _ = served
    search = tools["code_search"]
    ctx = _ctx(served)
    by_server = search.run(search.parse({"query_type": "references", "query": "Circle.area"}), ctx)
    assert "(answered by basedpyright)" in by_server.output
    assert "use.py" in by_server.output
    lines = [line for line in by_server.output.splitlines() if line.strip()[:1].isdigit()]
    # the index counts every `area` (both classes' and the generic s.area()); the server only Circle's use
    assert any("c.area()" in line for line in lines)
    assert by_server.data["count"] == 1
    by_name = search.run(search.parse({"query_type": "references", "query": "Circle.area"}),
                         context(repo, served[3], {"enabled": False}))
    assert "answered by" not in by_name.output
    assert "s.area()" in by_name.output


def test_definition_from_a_use_site_hover_and_calls(served) -> None:
    _, _, tools, _ = served
    search = tools["code_search"]
    ctx = _ctx(served)
    found = search.run(search.parse({"query_type": "definition", "query": "total", "path": "use.py", "line": 4}), ctx)
    assert "shapes.py:11" in found.output and "(answered by basedpyright)" in found.output
    hover = search.run(search.parse({"query_type": "hover", "query": "total"}), ctx)
    assert "def total(shapes" in hover.output and "-> int" in hover.output  # the inferred return type
    calls = search.run(search.parse({"query_type": "calls", "query": "total"}), ctx)
    assert "called by 1:" in calls.output and "use.py:4" in calls.output
    assert calls.data["server"] == "basedpyright"
