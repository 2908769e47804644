"""apply_patch (Codex format): parsing, tolerant hunks, all-or-nothing across files, precise errors."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from coder.base.resources import data_dir
from coder.edit.errors import PatchError, SyntaxGuardError
from coder.edit.patch import parse_patch
from coder.edit.patch_apply import apply_patch
from coder.tools.base import ToolContext, ToolContract
from coder.tools.edit_tool import EditTool
from coder.tools.patch_tool import ApplyPatchTool

APP = ("import os\n\n\ndef load(path):\n    with open(path) as fh:\n        return fh.read()\n\n\n"
       "def save(path, data):\n    with open(path, 'w') as fh:\n        fh.write(data)\n")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "app.py").write_text(APP)
    (root / "pkg" / "old.py").write_text("x = 1\n")
    (root / "notes.txt").write_text("keep me\n")
    return root


def test_parse_all_operations() -> None:
    patch = parse_patch("*** Begin Patch\n*** Add File: a.txt\n+hello\n*** Delete File: b.txt\n"
                        "*** Update File: c.py\n*** Move to: d.py\n@@ def f():\n-    x = 1\n+    x = 2\n"
                        "*** End of File\n*** End Patch\n")
    kinds = [(op.kind, op.path, op.move_to) for op in patch.ops]
    assert kinds == [("add", "a.txt", None), ("delete", "b.txt", None), ("update", "c.py", "d.py")]
    chunk = patch.ops[2].chunks[0]
    assert (chunk.header, chunk.old, chunk.new, chunk.eof) == ("def f():", ["    x = 1"], ["    x = 2"], True)


def test_parse_accepts_heredoc_wrapper_and_reports_bad_lines() -> None:
    wrapped = "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n"
    assert parse_patch(wrapped).ops[0].kind == "delete"
    with pytest.raises(PatchError, match="patch line 4"):
        parse_patch("*** Begin Patch\n*** Update File: a.py\n@@\n?? what\n*** End Patch")
    with pytest.raises(PatchError, match="must start with"):
        parse_patch("--- a/x\n+++ b/x\n")


def test_add_update_delete_move_in_one_patch(ws: Path) -> None:
    patch = """*** Begin Patch
*** Add File: pkg/new.py
+def hello():
+    return "hi"
*** Update File: pkg/app.py
@@ def save(path, data):
     with open(path, 'w') as fh:
-        fh.write(data)
+        fh.write(data)
+        fh.flush()
*** Delete File: notes.txt
*** Update File: pkg/old.py
*** Move to: pkg/renamed.py
@@
-x = 1
+x = 2
*** End Patch
"""
    outcome = apply_patch(patch, ws)
    assert sorted(outcome.files_changed) == ["notes.txt", "pkg/app.py", "pkg/new.py", "pkg/old.py", "pkg/renamed.py"]
    assert (ws / "pkg" / "new.py").read_text() == 'def hello():\n    return "hi"\n'
    flushed = APP.replace("fh.write(data)\n", "fh.write(data)\n        fh.flush()\n")
    assert (ws / "pkg" / "app.py").read_text() == flushed
    assert not (ws / "notes.txt").exists() and not (ws / "pkg" / "old.py").exists()
    assert (ws / "pkg" / "renamed.py").read_text() == "x = 2\n"
    assert "+        fh.flush()" in outcome.diff


def test_failure_in_a_later_file_changes_nothing(ws: Path) -> None:
    patch = ("*** Begin Patch\n*** Update File: pkg/app.py\n@@\n-import os\n+import sys\n"
             "*** Add File: pkg/other.py\n+y = 1\n"
             "*** Update File: pkg/old.py\n@@\n-this line is not there\n+nope\n*** End Patch")
    with pytest.raises(PatchError) as err:
        apply_patch(patch, ws)
    assert "pkg/old.py, hunk 1" in str(err.value) and "No match" in str(err.value)
    assert (ws / "pkg" / "app.py").read_text() == APP
    assert not (ws / "pkg" / "other.py").exists()


def test_hunks_apply_in_order_with_tolerant_context(ws: Path) -> None:
    patch = ("*** Begin Patch\n*** Update File: pkg/app.py\n"
             "@@\n with open(path) as fh:\n-    return fh.read()\n+    return fh.read().strip()\n"
             "@@\n     with open(path, 'w') as fh:  \n-        fh.write(data)\n+        fh.write(data + '\\n')\n"
             "*** End Patch")
    outcome = apply_patch(patch, ws)
    text = (ws / "pkg" / "app.py").read_text()
    assert "        return fh.read().strip()\n" in text and "fh.write(data + '\\n')" in text
    assert "indentation" in outcome.message and "trailing whitespace" in outcome.message


def test_ambiguous_hunk_is_refused_with_lines(ws: Path) -> None:
    patch = "*** Begin Patch\n*** Update File: pkg/app.py\n@@\n-    with open(path\n+    with open(p\n*** End Patch"
    # partial lines never match: context is whole lines
    with pytest.raises(PatchError):
        apply_patch(patch, ws)
    dup = ws / "dup.py"
    dup.write_text("a = 1\nb = 2\n\na = 1\nb = 2\n")
    with pytest.raises(PatchError) as err:
        apply_patch("*** Begin Patch\n*** Update File: dup.py\n@@\n a = 1\n-b = 2\n+b = 3\n*** End Patch", ws)
    assert "lines 1, 4" in str(err.value) and "@@" in str(err.value)
    assert dup.read_text() == "a = 1\nb = 2\n\na = 1\nb = 2\n"


def test_header_and_end_of_file_disambiguate(ws: Path) -> None:
    dup = ws / "dup.py"
    dup.write_text("def a():\n    return 1\n\ndef b():\n    return 1\n")
    apply_patch("*** Begin Patch\n*** Update File: dup.py\n@@ def b():\n-    return 1\n+    return 2\n"
                "*** End Patch", ws)
    assert dup.read_text() == "def a():\n    return 1\n\ndef b():\n    return 2\n"
    apply_patch("*** Begin Patch\n*** Update File: dup.py\n@@\n-    return 1\n+    return 0\n*** End Patch", ws)
    assert dup.read_text().startswith("def a():\n    return 0\n")
    dup.write_text("x = 1\nx = 1\n")
    apply_patch("*** Begin Patch\n*** Update File: dup.py\n@@\n-x = 1\n+x = 9\n*** End of File\n*** End Patch", ws)
    assert dup.read_text() == "x = 1\nx = 9\n"


def test_crlf_and_bom_kept_through_patch_and_move(ws: Path) -> None:
    win = ws / "win.txt"
    win.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    apply_patch("*** Begin Patch\n*** Update File: win.txt\n*** Move to: moved.txt\n@@\n one\n-two\n+2\n"
                "*** End Patch", ws)
    assert (ws / "moved.txt").read_bytes() == b"\xef\xbb\xbfone\r\n2\r\n"


def test_add_existing_delete_missing_and_outside_are_refused(ws: Path) -> None:
    with pytest.raises(PatchError, match="already exists"):
        apply_patch("*** Begin Patch\n*** Add File: notes.txt\n+other\n*** End Patch", ws)
    with pytest.raises(PatchError, match="does not exist"):
        apply_patch("*** Begin Patch\n*** Delete File: ghost.txt\n*** End Patch", ws)
    with pytest.raises(Exception, match="outside the workspace"):
        apply_patch("*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch", ws)
    assert (ws / "notes.txt").read_text() == "keep me\n"


def test_syntax_guard_blocks_the_whole_patch(ws: Path) -> None:
    patch = ("*** Begin Patch\n*** Add File: pkg/fine.py\n+ok = 1\n*** Update File: pkg/app.py\n@@\n"
             "-def load(path):\n+def load(path:\n*** End Patch")
    with pytest.raises(SyntaxGuardError) as err:
        apply_patch(patch, ws)
    assert "line 4" in str(err.value) and "no file was changed" in str(err.value)
    assert not (ws / "pkg" / "fine.py").exists()


def test_patch_tool_and_undo_through_the_edit_tool(ws: Path, tmp_path: Path) -> None:
    ctx = ToolContext(ws, ws, "s", threading.Event(), tmp_path / "state")
    patch_tool = ApplyPatchTool(ToolContract.load(data_dir("tools") / "apply_patch.json"))
    edit_tool = EditTool(ToolContract.load(data_dir("tools") / "str_replace_based_edit_tool.json"))
    patch = "*** Begin Patch\n*** Update File: pkg/old.py\n@@\n-x = 1\n+x = 5\n*** End Patch"
    result = patch_tool.run(patch_tool.parse({"patch": patch}), ctx)
    assert not result.is_error and result.files_changed == ["pkg/old.py"]
    assert "+x = 5" in result.data["diff"]
    undo = edit_tool.run(edit_tool.parse({"command": "undo_edit", "path": "pkg/old.py"}), ctx)
    assert not undo.is_error and (ws / "pkg" / "old.py").read_text() == "x = 1\n"
    bad = patch_tool.run(patch_tool.parse({"patch": "nonsense"}), ctx)
    assert bad.is_error and "Begin Patch" in bad.output
