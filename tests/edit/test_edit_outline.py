"""The outline shown for large files: the code index's outline, and the edit package's own fallback."""

from __future__ import annotations

from coder.edit.outline import _regex_outline, _tree_sitter_outline, outline

PY = "class A:\n    def m(self):\n        pass\n\n\ndef f():\n    return 1\n"
GO = "package p\n\ntype T struct{}\n\nfunc (t T) M() int {\n\treturn 1\n}\n\nfunc F() {}\n"
TS = "export class C {\n  m(): void {}\n}\nexport const g = () => 1;\nfunction h() {}\n"


def names(items: list) -> list[tuple[str, int, int]]:
    return [(i.name.split(".")[-1], i.line, i.end_line) for i in items]


def test_outline_python_with_depth() -> None:
    items = outline("a.py", PY)
    assert names(items) == [("A", 1, 3), ("m", 2, 3), ("f", 6, 7)]
    assert [i.depth for i in items] == [0, 1, 0]


def test_fallback_tree_sitter_outline_for_three_languages() -> None:
    assert names(_tree_sitter_outline("a.py", PY) or []) == [("A", 1, 3), ("m", 2, 3), ("f", 6, 7)]
    assert names(_tree_sitter_outline("a.go", GO) or []) == [("T", 3, 3), ("M", 5, 7), ("F", 9, 9)]
    assert names(_tree_sitter_outline("a.ts", TS) or []) == [("C", 1, 3), ("m", 2, 2), ("g", 4, 4), ("h", 5, 5)]


def test_regex_outline_for_files_without_grammar() -> None:
    assert names(_regex_outline("def a():\n  pass\nclass B:\n")) == [("a", 1, 1), ("B", 3, 3)]
