"""Property tests (hypothesis): a unique exact match is always applied exactly; a tolerant match of a
uniformly shifted block lands exactly; a failed edit never changes or half-writes the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from coder.edit.errors import EditError
from coder.edit.matcher import find_replacement
from coder.edit.ops import Editor

WORDS = st.sampled_from(["x", "y = 1", "return x", "if a:", "call(b)", "# note", "pass", "z += 2", "}", "{"])
LINE = st.tuples(st.integers(0, 3), WORDS).map(lambda t: "    " * t[0] + t[1])
TEXT = st.lists(LINE, min_size=1, max_size=40).map(lambda lines: "\n".join(lines) + "\n")
SETTINGS = settings(max_examples=150, deadline=None, database=None, derandomize=True,  # the same cases every run
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.slow  # 150 generated edits
@SETTINGS
@given(content=TEXT, data=st.data(), new=st.text(alphabet="abc \n=()", max_size=30))
def test_unique_exact_match_is_applied_exactly(content: str, data: st.DataObject, new: str) -> None:
    start = data.draw(st.integers(0, len(content) - 1))
    end = data.draw(st.integers(start + 1, len(content)))
    old = content[start:end]
    assume(content.count(old) == 1 and content.find(old, content.find(old) + 1) == -1 and old != new)
    rep = find_replacement(content, old, new)
    assert rep.strategy == "exact"
    assert rep.apply(content) == content[:start] + new + content[end:]


@pytest.mark.slow  # 150 generated edits
@SETTINGS
@given(lines=st.lists(LINE, min_size=6, max_size=30, unique=True), data=st.data(),
       shift=st.sampled_from(["", "  ", "    ", "\t"]))
def test_shifted_unique_block_lands_exactly(lines: list[str], data: st.DataObject, shift: str) -> None:
    content = "\n".join("    " + line for line in lines) + "\n"  # every line indented at least once
    first = data.draw(st.integers(0, len(lines) - 3))
    block = ["    " + line for line in lines[first: first + 3]]
    changed = data.draw(st.integers(0, 2))
    new_block = list(block)
    new_block[changed] = block[changed] + "  # changed"
    # the model's copy: indentation shifted by dropping the common 4 spaces and adding `shift`
    old = "\n".join(shift + line[4:] for line in block)
    new = "\n".join(shift + line[4:] for line in new_block)
    assume(shift != "    ")  # that is an exact match, covered above
    # nor may the shifted copy occur exactly elsewhere (inside a deeper block: `if a:` within `        if a:`);
    # str_replace applies a unique exact match where it is, and that is not this property
    assume(old not in content)
    expected = content.replace("\n".join(block), "\n".join(new_block), 1)
    try:
        rep = find_replacement(content, old, new)
    except EditError:
        return  # a refusal is allowed (e.g. the shifted block is ambiguous); a wrong application is not
    assert rep.apply(content) == expected


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.mark.slow  # 150 generated edits
@SETTINGS
@given(content=TEXT, old=st.text(alphabet="xyz =1\n", min_size=0, max_size=12),
       new=st.text(alphabet="xyz( \n", max_size=12), crlf=st.booleans())
def test_failed_edit_leaves_file_byte_identical(workspace: Path, content: str, old: str, new: str,
                                                 crlf: bool) -> None:
    path = workspace / "f.txt"
    raw = (content.replace("\n", "\r\n") if crlf else content).encode()
    path.write_bytes(raw)
    editor = Editor(workspace)
    try:
        editor.str_replace("f.txt", old, new)
    except EditError:
        assert path.read_bytes() == raw
    else:
        after = path.read_bytes()
        if crlf:  # line endings of the file survive any successful edit
            assert b"\n" not in after.replace(b"\r\n", b"")
    assert [p.name for p in workspace.iterdir()] == ["f.txt"]  # no temp file left behind


def test_crash_during_write_leaves_original(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = workspace / "a.py"
    path.write_text("x = 1\ny = 2\n")

    def failing_rename(src: str, dst: str, **dir_fds: int) -> None:  # fault injection: the disk fails at the rename
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", failing_rename)
    with pytest.raises(EditError) as err:
        Editor(workspace).str_replace("a.py", "y = 2", "y = 3")
    assert "No space left" in str(err.value)
    assert path.read_text() == "x = 1\ny = 2\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["a.py"]
