"""The syntax guard with the real tree-sitter grammars: new breakage refused, old breakage tolerated."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder.edit.errors import SyntaxGuardError
from coder.edit.ops import Editor
from coder.edit.syntax import problems

CASES = {
    "m.py": ("def f(x):\n    return x\n", "return x", "return (x"),
    "m.js": ("function f(x) {\n  return x;\n}\n", "return x;", "return (x;"),
    "m.ts": ("export function f(x: number): number {\n  return x;\n}\n", "x: number)", "x: number"),
    "m.go": ("package m\n\nfunc F(x int) int {\n\treturn x\n}\n", "return x\n}", "return x\n"),
}


def test_grammars_are_installed() -> None:
    for name in CASES:
        assert problems(name, CASES[name][0]) == [], (
            f"no tree-sitter grammar for {name}: pip install tree-sitter-python tree-sitter-javascript "
            "tree-sitter-typescript tree-sitter-go")


@pytest.mark.parametrize("name", sorted(CASES))
def test_breaking_edit_is_refused_and_file_kept(tmp_path: Path, name: str) -> None:
    source, old, new = CASES[name]
    (tmp_path / name).write_text(source)
    with pytest.raises(SyntaxGuardError) as err:
        Editor(tmp_path).str_replace(name, old, new)
    assert "syntax errors" in str(err.value) and "line" in str(err.value)
    assert (tmp_path / name).read_text() == source


def test_already_broken_file_is_not_guarded(tmp_path: Path) -> None:
    (tmp_path / "b.py").write_text("def f(:\n    pass\nx = 1\n")
    Editor(tmp_path).str_replace("b.py", "x = 1", "x = (")
    assert (tmp_path / "b.py").read_text().endswith("x = (\n")


def test_guard_off_and_unknown_languages(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text("x = 1\n")
    Editor(tmp_path, syntax_guard=False).str_replace("c.py", "x = 1", "x = (")
    (tmp_path / "d.toml").write_text("a = 1\n")
    Editor(tmp_path).str_replace("d.toml", "a = 1", "a = [")
    assert (tmp_path / "d.toml").read_text() == "a = [\n"


def test_new_file_with_errors_is_created_with_a_note(tmp_path: Path) -> None:
    outcome = Editor(tmp_path).create("new.py", "def broken(:\n")
    assert "syntax errors" in outcome.message
    assert (tmp_path / "new.py").exists()


def test_error_shows_the_broken_lines(tmp_path: Path) -> None:
    (tmp_path / "e.py").write_text("a = 1\nb = 2\nc = 3\nd = 4\n")
    with pytest.raises(SyntaxGuardError) as err:
        Editor(tmp_path).str_replace("e.py", "c = 3", "c = 3 +")
    text = str(err.value)
    assert "     3\tc = 3 +" in text
