"""Issue 17's promise as a property: an edit whose old_str / new_str carry the mistakes models make is
applied byte-identical to what the model meant, or refused with the file untouched; never anything else.

Files are drawn in the shape of real code (Python with 4-space blocks, or brace code indented with tabs;
blank lines between functions, comments, whitespace-only lines), written with CRLF or LF, with or without a
BOM and a final newline. Each edit changes, adds or removes a line (or a blank line and a line) in a unique
block; then the mistakes of tests/edit/edit_mistakes.py are made alone (one test per kind) and combined.
The editor runs on a real file through `Editor.str_replace` (a .txt name, so the syntax guard cannot turn a
wrong merge into a refusal and hide it).

Deterministic in CI (derandomized, bounded examples, a few seconds). For a deeper search with fresh random
draws: `CODER_EDIT_EXAMPLES=5000 python3 -m pytest tests/edit/test_edit_property_mistakes.py -n 0`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from edit_mistakes import KINDS, Edit, damage, encode, expected
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coder.edit.errors import EditError
from coder.edit.ops import Editor

DEEP = int(os.environ.get("CODER_EDIT_EXAMPLES", "0"))


def _settings(examples: int) -> settings:
    return settings(max_examples=DEEP or examples, derandomize=not DEEP, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


NAMES = ["total", "count", "items", "value", "result", "config", "path", "name", "data", "index", "size"]
CALLS = ["append", "update", "get", "write", "close", "join", "split", "strip", "format", "lower"]


@st.composite
def statement(draw: st.DrawFn) -> str:
    a, b = draw(st.sampled_from(NAMES)), draw(st.sampled_from(NAMES))
    return draw(st.sampled_from([f"{a} = {b} + {draw(st.integers(0, 99))}", f"{a}.{draw(st.sampled_from(CALLS))}({b})",
                                 f"return {a}", f"# {a} then {b}", f"{a} += 1", f"log('{a}', {b})"]))


@st.composite
def python_file(draw: st.DrawFn) -> list[str]:
    lines: list[str] = []
    for f in range(draw(st.integers(2, 4))):
        lines.append(f"def {draw(st.sampled_from(NAMES))}_{f}({draw(st.sampled_from(NAMES))}):")
        depth = 1
        for _ in range(draw(st.integers(2, 7))):
            if draw(st.integers(0, 4)) == 0:
                lines.append("    " * depth + f"if {draw(st.sampled_from(NAMES))}:")
                depth += 1
            lines.append("    " * depth + draw(statement()))
            if depth > 1 and draw(st.booleans()):
                depth -= 1
            if draw(st.integers(0, 4)) == 0:
                lines.append(draw(st.sampled_from(["", "    " * depth])))  # blank or whitespace-only
        lines += [""] * draw(st.integers(1, 2))
    return lines


@st.composite
def brace_file(draw: st.DrawFn) -> list[str]:
    lines: list[str] = []
    for f in range(draw(st.integers(2, 4))):
        lines.append(f"func {draw(st.sampled_from(NAMES))}{f}() {{")
        depth = 1
        for _ in range(draw(st.integers(2, 6))):
            if draw(st.integers(0, 4)) == 0:
                lines.append("\t" * depth + f"if {draw(st.sampled_from(NAMES))} {{")
                depth += 1
            lines.append("\t" * depth + draw(statement()))
            if depth > 1 and draw(st.booleans()):
                depth -= 1
                lines.append("\t" * depth + "}")
            if draw(st.integers(0, 5)) == 0:
                lines.append("")
        while depth > 1:
            depth -= 1
            lines.append("\t" * depth + "}")
        lines.append("}")
        lines += [""] * draw(st.integers(1, 2))
    return lines


class Draws:
    """edit_mistakes' Chooser over hypothesis' draw."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def choice(self, items):  # type: ignore[no-untyped-def]
        return self.draw(st.sampled_from(list(items)))


@st.composite
def edit(draw: st.DrawFn) -> Edit | None:
    lines = draw(st.one_of(python_file(), brace_file()))
    if not draw(st.booleans()):  # no final newline
        while lines and not lines[-1]:
            lines.pop()
    else:
        lines.append("")  # the final newline: the text ends with "\n"
    size = draw(st.integers(2, 7))
    first = draw(st.integers(0, max(0, len(lines) - size - 1)))
    block = lines[first: first + size]
    text = "\n".join(lines)
    if not any(x.strip() for x in block) or text.count("\n".join(block)) != 1:
        return None
    k = draw(st.integers(0, len(block) - 1))
    indent = block[k][: len(block[k]) - len(block[k].lstrip())]
    meant = list(block)
    change = draw(st.sampled_from(["replace", "add", "remove", "blank_and_line", "remove_blank"]))
    if change == "replace" and block[k].strip():
        meant[k] = indent + draw(statement())
    elif change == "add":
        meant.insert(k + 1, indent + draw(statement()))
    elif change == "remove" and len(block) > 2:
        del meant[k]
    elif change == "remove_blank" and "" in block[1:-1]:
        meant.remove("")
    else:
        meant[k + 1:k + 1] = ["", indent + draw(statement())]
    return Edit(lines, first, first + size, meant) if meant != block else None


def check(case: Edit | None, kinds: list[str], draw: st.DrawFn, crlf: bool, bom: bool) -> str:
    """Run the damaged edit on a real file; assert exact-or-refused. Returns "applied", "refused" or "skip"."""
    if case is None:
        return "skip"
    old, new, done = damage(case, kinds, Draws(draw))
    if not done or old == new or not old.strip():
        return "skip"
    text = "\n".join(case.lines)
    before = encode(text, crlf, bom)
    want = encode(expected(text, case, old, new), crlf, bom)
    with tempfile.TemporaryDirectory(prefix="edit-prop-") as ws:
        path = Path(ws) / "mod.txt"
        path.write_bytes(before)
        try:
            Editor(Path(ws)).str_replace("mod.txt", old, new)
        except EditError:
            assert path.read_bytes() == before, "a refused edit changed the file"
            return "refused"
        got = path.read_bytes()
    assert got == want, f"applied wrongly ({done}):\nold_str={old!r}\nnew_str={new!r}\ngot  ={got!r}\nwant ={want!r}"
    return "applied"


@pytest.mark.slow  # 40 generated edits for each of the 11 kinds
@pytest.mark.parametrize("kind", KINDS)
def test_each_mistake_alone_lands_exactly_or_is_refused(kind: str) -> None:
    outcomes: list[str] = []

    @_settings(40)
    @given(case=edit(), data=st.data(), crlf=st.booleans(), bom=st.booleans())
    def probe(case: Edit | None, data: st.DataObject, crlf: bool, bom: bool) -> None:
        outcomes.append(check(case, [kind], data.draw, crlf, bom))

    probe()
    assert "applied" in outcomes  # the kind is tolerated at all, not only refused


@pytest.mark.slow  # 300 generated edits
def test_mistakes_combined_land_exactly_or_are_refused() -> None:
    outcomes: list[str] = []

    @_settings(300)
    @given(case=edit(), kinds=st.lists(st.sampled_from(KINDS), min_size=2, max_size=4, unique=True),
           data=st.data(), crlf=st.booleans(), bom=st.booleans())
    def probe(case: Edit | None, kinds: list[str], data: st.DataObject, crlf: bool, bom: bool) -> None:
        outcomes.append(check(case, kinds, data.draw, crlf, bom))

    probe()
    applied = outcomes.count("applied")
    assert applied > outcomes.count("refused")  # tolerant, not a refusal machine
