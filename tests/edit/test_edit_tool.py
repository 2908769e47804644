"""The str_replace_based_edit_tool through its contract, as the engine calls it."""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path
from typing import Any

import pytest

from coder.base.resources import data_dir
from coder.config.layers import settings
from coder.tools.base import ToolContext, ToolContract, ToolResult
from coder.tools.edit_tool import EditTool
from coder.tools.params import ToolInputError


def make_ctx(repo: Path, tmp_path: Path, **config: Any) -> ToolContext:
    return ToolContext(workspace=repo, cwd=repo, session_id="s", cancel=threading.Event(),
                       state_dir=tmp_path / "state", config=settings(config))


@pytest.fixture
def tool() -> EditTool:
    return EditTool(ToolContract.load(data_dir("tools") / "str_replace_based_edit_tool.json"))


@pytest.fixture
def ctx(git_repo: Path, tmp_path: Path) -> ToolContext:
    return make_ctx(git_repo, tmp_path)


def call(tool: EditTool, ctx: ToolContext, **args: Any) -> ToolResult:
    return tool.run(tool.parse(args), ctx)


def test_contract_declares_write_with_view_as_read() -> None:
    data = json.loads((data_dir("tools") / "str_replace_based_edit_tool.json").read_text())
    assert data["permission"] == "write" and data["read_commands"] == ["view"]
    assert data["anthropic_type"] == "text_editor_20250728"
    props = data["input_schema"]["properties"]
    assert {"command", "path", "old_str", "new_str", "insert_line", "view_range", "file_text", "edits"} <= set(props)


def test_view_file_with_line_numbers_and_range(tool: EditTool, ctx: ToolContext) -> None:
    result = call(tool, ctx, command="view", path="src/app.py")
    assert not result.is_error
    assert result.output == "     1\tdef greet(name):\n     2\t    return 'hello ' + name"
    ranged = call(tool, ctx, command="view", path="src/app.py", view_range=[2, -1])
    assert ranged.output == "     2\t    return 'hello ' + name"
    bad = call(tool, ctx, command="view", path="src/app.py", view_range=[5, 6])
    assert bad.is_error and "has 2 lines" in bad.output


def test_view_directory_two_levels_skipping_ignored(tool: EditTool, ctx: ToolContext) -> None:
    repo = ctx.workspace
    (repo / ".gitignore").write_text("build/\n*.log\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.js").write_text("x")
    (repo / "debug.log").write_text("x")
    (repo / "src" / "pkg" / "deep").mkdir(parents=True)
    (repo / "src" / "pkg" / "deep" / "mod.py").write_text("x")
    result = call(tool, ctx, command="view", path=".")
    assert "src/app.py" in result.output and "src/pkg/" in result.output
    assert "README.md" in result.output
    assert "build" not in result.output and "debug.log" not in result.output
    assert "mod.py" not in result.output  # third level


def test_view_directory_outside_git_honours_gitignore(tool: EditTool, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "node_modules" / "x").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "lib" / "a.js").write_text("x")
    (root / ".gitignore").write_text("node_modules/\n")
    result = call(tool, make_ctx(root, tmp_path), command="view", path=".")
    assert "lib/a.js" in result.output and "node_modules" not in result.output


def test_view_large_file_shows_outline(tool: EditTool, ctx: ToolContext) -> None:
    body = "".join(f"def func_{i}(x):\n    return x + {i}\n\n" for i in range(700))
    (ctx.workspace / "big.py").write_text("class Big:\n    pass\n\n" + body)
    result = call(tool, ctx, command="view", path="big.py")
    assert result.data["truncated"] is True
    assert "class Big  (lines 1-2)" in result.output
    assert "function func_200  (lines 604-605)" in result.output
    assert "and 401 more definitions" in result.output
    assert "view_range" in result.output


def test_view_of_a_broken_image_says_so(tool: EditTool, ctx: ToolContext) -> None:
    """A file that starts like a PNG but is not one: a clear error, no image (a real one is shown: tests/images)."""
    (ctx.workspace / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    result = call(tool, ctx, command="view", path="logo.png")
    assert result.is_error and "not an image coder can read" in result.output and not result.images


def test_view_invalid_utf8_shows_it_with_a_note(tool: EditTool, ctx: ToolContext) -> None:
    (ctx.workspace / "l1.txt").write_bytes(b"caf\xe9\n")
    result = call(tool, ctx, command="view", path="l1.txt")
    assert not result.is_error and "caf\ufffd" in result.output and "not valid UTF-8" in result.output


def test_str_replace_reports_snippet_diff_and_files_changed(tool: EditTool, ctx: ToolContext) -> None:
    result = call(tool, ctx, command="str_replace", path="src/app.py", old_str="'hello '", new_str="'hi '")
    assert not result.is_error
    assert result.files_changed == ["src/app.py"]
    assert "-    return 'hello ' + name\n+    return 'hi ' + name" in result.data["diff"]
    assert "     2\t    return 'hi ' + name" in result.output


def test_fallback_strategy_is_reported(tool: EditTool, ctx: ToolContext) -> None:
    result = call(tool, ctx, command="str_replace", path="src/app.py",
                  old_str="    return 'hello ' + name  ", new_str="    return 'hey ' + name")
    assert not result.is_error, result.output
    assert result.data["strategies"] == ["trailing-whitespace"]
    assert "trailing whitespace" in result.output


def test_errors_are_results_not_exceptions(tool: EditTool, ctx: ToolContext) -> None:
    for args, fragment in [
        ({"command": "str_replace", "path": "", "old_str": "a", "new_str": "b"}, "path is empty"),
        ({"command": "str_replace", "path": "src", "old_str": "a", "new_str": "b"}, "directory"),
        ({"command": "str_replace", "path": "nope.py", "old_str": "a", "new_str": "b"}, "does not exist"),
        ({"command": "str_replace", "path": "src/app.py", "old_str": "x", "new_str": "x"}, "identical"),
        ({"command": "insert", "path": "src/app.py", "insert_line": 9, "insert_text": "x"}, "out of range"),
        ({"command": "undo_edit", "path": "src/app.py"}, "no edit"),
    ]:
        result = tool.run(tool.parse(args), ctx)
        assert result.is_error, args
        assert fragment in result.output, (args, result.output)
    for args, line in [  # what the params cannot hold is refused at the door, before the tool
        ({"command": "str_replace", "path": "src/app.py", "new_str": "x"},
         "old_str: `str_replace` needs old_str (or edits: a list of {old_str, new_str})"),
        ({"command": "frobnicate", "path": "src/app.py"},
         'command = "frobnicate": expected one of "view", "create", "str_replace", "insert", "undo_edit"'),
    ]:
        with pytest.raises(ToolInputError) as refused:
            tool.parse(args)
        assert str(refused.value) == f"Invalid input for str_replace_based_edit_tool: {line}"
    assert (ctx.workspace / "src" / "app.py").read_text() == "def greet(name):\n    return 'hello ' + name\n"


def test_insert_top_middle_end_and_without_final_newline(tool: EditTool, ctx: ToolContext) -> None:
    path = ctx.workspace / "n.txt"
    path.write_text("a\nb")
    assert not call(tool, ctx, command="insert", path="n.txt", insert_line=0, insert_text="top").is_error
    assert not call(tool, ctx, command="insert", path="n.txt", insert_line=2, new_str="mid\n").is_error
    assert not call(tool, ctx, command="insert", path="n.txt", insert_line=4, insert_text="end").is_error
    assert path.read_text() == "top\na\nmid\nb\nend"


def test_undo_several_levels_then_nothing(tool: EditTool, ctx: ToolContext) -> None:
    path = ctx.workspace / "src" / "app.py"
    original = path.read_text()
    call(tool, ctx, command="str_replace", path="src/app.py", old_str="hello", new_str="one")
    call(tool, ctx, command="str_replace", path="src/app.py", old_str="one", new_str="two")
    call(tool, ctx, command="create", path="new.txt", file_text="x\n")
    assert "two" in path.read_text()
    assert not call(tool, ctx, command="undo_edit", path="src/app.py").is_error
    assert "one" in path.read_text()
    assert not call(tool, ctx, command="undo_edit", path="src/app.py").is_error
    assert path.read_text() == original
    assert call(tool, ctx, command="undo_edit", path="src/app.py").is_error
    assert not call(tool, ctx, command="undo_edit", path="new.txt").is_error
    assert not (ctx.workspace / "new.txt").exists()


def test_undo_refuses_to_discard_changes_made_since(tool: EditTool, ctx: ToolContext) -> None:
    path = ctx.workspace / "src" / "app.py"
    call(tool, ctx, command="str_replace", path="src/app.py", old_str="hello", new_str="hey")
    path.write_text(path.read_text() + "# added by a formatter\n")
    result = call(tool, ctx, command="undo_edit", path="src/app.py")
    assert result.is_error and "changed since your last edit" in result.output
    assert path.read_text().endswith("# added by a formatter\n")


def test_multi_edit_is_all_or_nothing(tool: EditTool, ctx: ToolContext) -> None:
    path = ctx.workspace / "m.py"
    path.write_text("a = 1\nb = 2\nc = 3\n")
    bad = call(tool, ctx, command="str_replace", path="m.py",
               edits=[{"old_str": "a = 1", "new_str": "a = 10"}, {"old_str": "zzz = 9", "new_str": "q"}])
    assert bad.is_error and "edit #2 of 2" in bad.output and "none was applied" in bad.output
    assert path.read_text() == "a = 1\nb = 2\nc = 3\n"
    good = call(tool, ctx, command="str_replace", path="m.py",
                edits=[{"old_str": "a = 1", "new_str": "a = 10"}, {"old_str": "a = 10\nb", "new_str": "a = 10\nbb"},
                       {"old_str": " = ", "new_str": "=", "replace_all": True}])
    assert not good.is_error, good.output
    assert path.read_text() == "a=10\nbb=2\nc=3\n"


def test_changed_on_disk_since_view(tool: EditTool, ctx: ToolContext) -> None:
    path = ctx.workspace / "s.py"
    path.write_text("def f():\n    x = 1\n    y = 2\n    return x\n")
    call(tool, ctx, command="view", path="s.py")
    path.write_text("def f():\n    x = 1\n    y = 3\n    return x\n")  # someone else's change
    tolerant = call(tool, ctx, command="str_replace", path="s.py", old_str="x = 1  \ny = 3", new_str="x = 5\ny = 3")
    assert tolerant.is_error and "changed on disk since you viewed it" in tolerant.output
    assert "-    y = 2" in tolerant.output and "+    y = 3" in tolerant.output
    insert = call(tool, ctx, command="insert", path="s.py", insert_line=1, insert_text="    # hi")
    assert insert.is_error and "changed on disk" in insert.output
    overwrite = call(tool, ctx, command="create", path="s.py", file_text="boom\n", overwrite=True)
    assert overwrite.is_error
    assert path.read_text() == "def f():\n    x = 1\n    y = 3\n    return x\n"
    exact = call(tool, ctx, command="str_replace", path="s.py", old_str="    y = 3", new_str="    y = 4")
    assert not exact.is_error and "changed on disk since you viewed it" in exact.output
    assert "y = 4" in path.read_text()


def test_unviewed_file_can_be_edited(tool: EditTool, ctx: ToolContext) -> None:
    result = call(tool, ctx, command="str_replace", path="README.md", old_str="# demo", new_str="# Demo")
    assert not result.is_error


def test_syntax_guard_can_be_turned_off(tool: EditTool, git_repo: Path, tmp_path: Path) -> None:
    args = {"command": "str_replace", "path": "src/app.py", "old_str": "(name):", "new_str": "(name:"}
    guarded = tool.run(tool.parse(args), make_ctx(git_repo, tmp_path))
    assert guarded.is_error and "syntax errors" in guarded.output
    unguarded = tool.run(tool.parse(args), make_ctx(git_repo, tmp_path, edit={"syntax_guard": False}))
    assert not unguarded.is_error


def test_concurrent_edits_in_threads_lose_nothing(tool: EditTool, ctx: ToolContext) -> None:
    path = ctx.workspace / "c.txt"
    path.write_text("".join(f"line {i}\n" for i in range(16)))
    results: list[ToolResult] = []

    def worker(i: int) -> None:
        results.append(call(tool, ctx, command="str_replace", path="c.txt", old_str=f"line {i}\n",
                            new_str=f"LINE {i}\n"))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(not r.is_error for r in results)
    assert path.read_text() == "".join(f"LINE {i}\n" for i in range(16))


def _process_worker(root: str, i: int, queue: Any) -> None:
    from coder.edit.errors import EditError
    from coder.edit.ops import Editor

    editor = Editor(Path(root))
    try:
        for k in range(5):
            editor.str_replace("p.txt", f"p{i}-{k}\n", f"P{i}-{k}\n")
        queue.put("ok")
    except EditError as exc:  # pragma: no cover - reported to the parent
        queue.put(str(exc))


def test_concurrent_edits_from_processes_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "p.txt").write_text("".join(f"p{i}-{k}\n" for i in range(4) for k in range(5)))
    mp = multiprocessing.get_context("fork")
    queue = mp.Queue()
    procs = [mp.Process(target=_process_worker, args=(str(root), i, queue)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    answers = [queue.get(timeout=5) for _ in procs]
    assert answers == ["ok"] * 4
    assert (root / "p.txt").read_text() == "".join(f"P{i}-{k}\n" for i in range(4) for k in range(5))


def test_view_of_a_file_over_the_size_limit_shows_its_head(tool: EditTool, git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "big.txt").write_text("".join(f"row {i}\n" for i in range(500)))
    ctx = make_ctx(git_repo, tmp_path, edit={"max_bytes": 1000})
    result = tool.run(tool.parse({"command": "view", "path": "big.txt"}), ctx)
    assert not result.is_error and result.data["truncated"]
    assert "too large" in result.output and "     1\trow 0" in result.output
    edit = tool.run(tool.parse({"command": "str_replace", "path": "big.txt", "old_str": "row 1\n",
                             "new_str": "x\n"}), ctx)
    assert edit.is_error and "limit" in edit.output


def test_create_under_a_file_is_an_error_result(tool: EditTool, ctx: ToolContext) -> None:
    result = call(tool, ctx, command="create", path="README.md/inner.txt", file_text="x")
    assert result.is_error and "README.md" in result.output
    assert (ctx.workspace / "README.md").read_text() == "# demo\n"


def test_failed_match_on_a_changed_file_says_it_changed(tool: EditTool, ctx: ToolContext) -> None:
    path = ctx.workspace / "src" / "app.py"
    call(tool, ctx, command="view", path="src/app.py")
    path.write_text("def greet(person):\n    return 'hello ' + person\n")
    result = call(tool, ctx, command="str_replace", path="src/app.py", old_str="def greet(name):",
                  new_str="def g(name):")
    assert result.is_error and "changed on disk since you viewed it" in result.output and "No match" in result.output
