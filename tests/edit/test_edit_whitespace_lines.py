"""Issue 30 item 4: a line of new_str is written as the model sent it unless a stated rule says otherwise. Here the
lines are whitespace-only ones in new_str while old_str carries `cat -n` line-number prefixes (copied from `view`):
once the prefixes are taken off, old_str is the file's text exactly, so the edit is certain and the result must
be the file with new_str in place, every whitespace-only line with its own whitespace (the rules that do change a
line of new_str are in coder/edit/merge.py's docstring; none of them applies to these lines).

The property runs the real editor on a real file, with new_str prefixed like old_str or not, and whitespace-only
lines that new_str adds, or that it writes where old_str shows a blank line of other whitespace."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from coder.edit.ops import Editor

DEEP = int(os.environ.get("CODER_EDIT_EXAMPLES", "0"))  # as in test_edit_property_mistakes: fresh draws in bulk
NAMES = ["total", "count", "items", "value", "result", "config", "path", "data"]
BLANKS = ["", " ", "    ", "        ", "\t"]


@st.composite
def source(draw: st.DrawFn) -> list[str]:
    """A Python-like file with blank and whitespace-only lines among distinct statements."""
    lines: list[str] = []
    for f in range(draw(st.integers(1, 3))):
        lines.append(f"def {draw(st.sampled_from(NAMES))}_{f}():")
        for s in range(draw(st.integers(3, 8))):
            lines.append(f"    {draw(st.sampled_from(NAMES))}_{f}_{s} = {draw(st.integers(0, 9))}")
            if draw(st.integers(0, 2)) == 0:
                lines.append(draw(st.sampled_from(BLANKS)))
        lines.append("")
    return lines


@st.composite
def edits(draw: st.DrawFn) -> tuple[list[str], int, int, list[str]]:
    """(file lines, first, end, meant): the block first..end (first and last lines not blank) becomes `meant`,
    which adds whitespace-only lines or changes the whitespace of the block's blank lines."""
    lines = draw(source())
    text_rows = [i for i, x in enumerate(lines) if x.strip()]
    a = draw(st.sampled_from(text_rows[:-1]))
    b = draw(st.sampled_from([i for i in text_rows if i > a]))
    block = lines[a: b + 1]
    meant = list(block)
    for _ in range(draw(st.integers(1, 3))):
        blank_rows = [k for k, x in enumerate(meant) if not x.strip()]
        if blank_rows and draw(st.booleans()):
            k = draw(st.sampled_from(blank_rows))
            meant[k] = draw(st.sampled_from([x for x in BLANKS if x != meant[k]]))
        else:
            k = draw(st.integers(1, len(meant) - 1))
            meant.insert(k, draw(st.sampled_from(BLANKS[1:])))
    if draw(st.booleans()):
        k = draw(st.sampled_from([k for k, x in enumerate(meant) if x.strip()]))
        meant[k] = meant[k] + "  # changed"
    return lines, a, b + 1, meant


def numbered(lines: list[str], first: int) -> str:
    """As `view` shows them (`cat -n`): the line number right-aligned in six columns, a tab, the line."""
    return "\n".join(f"{first + k + 1:6}\t{line}" for k, line in enumerate(lines))


@settings(max_examples=DEEP or 200, deadline=None, derandomize=not DEEP, database=None)
@given(case=edits(), prefixed_new=st.booleans())
def test_whitespace_only_lines_of_new_str_keep_their_whitespace(case: tuple[list[str], int, int, list[str]],
                                                                prefixed_new: bool) -> None:
    lines, first, end, meant = case
    text = "\n".join(lines)
    assume(meant != lines[first:end])  # (the draws can undo each other)
    assume(text.count("\n".join(lines[first:end])) == 1)  # a block that is not unique has no unique intent
    old = numbered(lines[first:end], first)
    new = numbered(meant, first) if prefixed_new else "\n".join(meant)
    with tempfile.TemporaryDirectory(prefix="edit-ws-") as ws:
        path = Path(ws) / "mod.txt"
        path.write_text(text)
        Editor(Path(ws)).str_replace("mod.txt", old, new)
        got = path.read_text()
    assert got == "\n".join(lines[:first] + meant + lines[end:])


def test_the_reported_case_a_blank_line_written_as_the_indented_one_new_str_has(tmp_path: Path) -> None:
    """old_str copied from `view` shows an empty line where new_str (and the commit) has four spaces."""
    (tmp_path / "mod.txt").write_text("def f():\n    a = 1\n\n    return a\n")
    Editor(tmp_path).str_replace("mod.txt", "     1\tdef f():\n     2\t    a = 1\n     3\t\n     4\t    return a",
                                 "def f():\n    a = 1\n    \n    return a")
    assert (tmp_path / "mod.txt").read_text() == "def f():\n    a = 1\n    \n    return a\n"


def test_blank_lines_old_str_and_new_str_show_alike_stay_the_files(tmp_path: Path) -> None:
    """The control: a blank line the model copied unchanged (its copy lost the file's spaces) is the file's line."""
    (tmp_path / "mod.txt").write_text("def f():\n    a = 1\n    \n    return a\n")
    Editor(tmp_path).str_replace("mod.txt", "     1\tdef f():\n     2\t    a = 1\n     3\t\n     4\t    return a",
                                 "     1\tdef f():\n     2\t    a = 2\n     3\t\n     4\t    return a")
    assert (tmp_path / "mod.txt").read_text() == "def f():\n    a = 2\n    \n    return a\n"
