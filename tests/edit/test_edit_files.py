"""Files on disk: line endings, BOM, encodings, final newline and mode survive edits; bad files get precise
errors and stay untouched."""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

import pytest

from coder.edit.errors import EditError, FileFormatError, PathError
from coder.edit.ops import Editor


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def test_crlf_stays_crlf_and_only_the_edited_line_changes(ws: Path) -> None:
    path = ws / "win.py"
    path.write_bytes(b"def f():\r\n    a = 1\r\n    return a\r\n")
    Editor(ws).str_replace("win.py", "    a = 1\n    return a", "    a = 2\n    b = 3\n    return a")
    assert path.read_bytes() == b"def f():\r\n    a = 2\r\n    b = 3\r\n    return a\r\n"


def test_mixed_line_endings_outside_the_edit_are_kept(ws: Path) -> None:
    path = ws / "mixed.txt"
    path.write_bytes(b"one\r\ntwo\nthree\r\nfour\n")
    Editor(ws).str_replace("mixed.txt", "three", "THREE")
    assert path.read_bytes() == b"one\r\ntwo\nTHREE\r\nfour\n"


def test_utf8_bom_and_missing_final_newline_are_kept(ws: Path) -> None:
    path = ws / "bom.py"
    path.write_bytes(codecs.BOM_UTF8 + "x = 'é'\ny = 2".encode())
    Editor(ws).str_replace("bom.py", "y = 2", "y = 'ü'")
    assert path.read_bytes() == codecs.BOM_UTF8 + "x = 'é'\ny = 'ü'".encode()


def test_utf16_file_is_edited_in_utf16(ws: Path) -> None:
    path = ws / "u16.txt"
    path.write_bytes(codecs.BOM_UTF16_LE + "alpha\r\nbeta\r\n".encode("utf-16-le"))
    Editor(ws).str_replace("u16.txt", "beta", "gamma")
    assert path.read_bytes() == codecs.BOM_UTF16_LE + "alpha\r\ngamma\r\n".encode("utf-16-le")


def test_mode_is_kept(ws: Path) -> None:
    path = ws / "run.sh"
    path.write_text("#!/bin/sh\necho hi\n")
    path.chmod(0o751)
    Editor(ws).str_replace("run.sh", "echo hi", "echo bye")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert path.read_text() == "#!/bin/sh\necho bye\n"


def test_invalid_utf8_is_refused_with_position(ws: Path) -> None:
    path = ws / "latin.txt"
    raw = b"ok line\ncaf\xe9 au lait\n"
    path.write_bytes(raw)
    with pytest.raises(FileFormatError) as err:
        Editor(ws).str_replace("latin.txt", "ok", "fine")
    assert "line 2, column 4" in str(err.value) and "0xe9" in str(err.value)
    assert path.read_bytes() == raw


def test_binary_file_is_refused(ws: Path) -> None:
    path = ws / "blob.bin"
    path.write_bytes(b"\x00\x01\x02abc")
    with pytest.raises(FileFormatError) as err:
        Editor(ws).str_replace("blob.bin", "abc", "def")
    assert "binary" in str(err.value)
    assert path.read_bytes() == b"\x00\x01\x02abc"


def test_50_mb_file_is_refused_without_reading_it(ws: Path) -> None:
    path = ws / "huge.log"
    with path.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: 50 MB on paper
    with pytest.raises(FileFormatError) as err:
        Editor(ws).str_replace("huge.log", "a", "b")
    assert "50.0 MB" in str(err.value) and "limit" in str(err.value)
    assert path.stat().st_size == 50 * 1024 * 1024


def test_read_only_file_is_refused(ws: Path) -> None:
    path = ws / "ro.txt"
    path.write_text("keep\n")
    path.chmod(0o444)
    with pytest.raises(PathError) as err:
        Editor(ws).str_replace("ro.txt", "keep", "lose")
    assert "read-only" in str(err.value) and "0444" in str(err.value)
    assert path.read_text() == "keep\n"


def test_paths_with_spaces_and_unicode(ws: Path) -> None:
    folder = ws / "my docs" / "résumé"
    folder.mkdir(parents=True)
    editor = Editor(ws)
    outcome = editor.create("my docs/résumé/naïve file.md", "# Title\n")
    assert outcome.display == "my docs/résumé/naïve file.md"
    editor.str_replace("my docs/résumé/naïve file.md", "# Title", "# Titre ✓")
    assert (folder / "naïve file.md").read_text() == "# Titre ✓\n"


@pytest.mark.parametrize("bad", ["", "   ", "../outside.txt", "/etc/passwd", "sub/../../x"])
def test_paths_outside_or_empty_are_refused(ws: Path, bad: str) -> None:
    with pytest.raises(PathError):
        Editor(ws).create(bad, "x")
    assert not (ws.parent / "outside.txt").exists()


def test_symlink_escaping_the_workspace_is_refused(ws: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret\n")
    (ws / "link.txt").symlink_to(secret)
    with pytest.raises(PathError) as err:
        Editor(ws).str_replace("link.txt", "secret", "leaked")
    assert "outside the workspace" in str(err.value)
    assert secret.read_text() == "secret\n"


def test_symlink_inside_the_workspace_edits_the_target_and_keeps_the_link(ws: Path) -> None:
    (ws / "real.txt").write_text("a\n")
    (ws / "alias.txt").symlink_to("real.txt")
    Editor(ws).str_replace("alias.txt", "a", "b")
    assert (ws / "alias.txt").is_symlink() and (ws / "real.txt").read_text() == "b\n"


def test_device_fifo_and_directory_are_refused(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    (ws / "folder").mkdir()
    editor = Editor(ws)
    with pytest.raises(PathError, match="device, socket or pipe"):
        editor.str_replace("pipe", "a", "b")
    with pytest.raises(PathError, match="directory"):
        editor.str_replace("folder", "a", "b")
    with pytest.raises(PathError, match="directory"):
        editor.create("folder", "x", overwrite=True)


def test_missing_file_suggests_similar_names(ws: Path) -> None:
    (ws / "settings.py").write_text("x = 1\n")
    with pytest.raises(PathError) as err:
        Editor(ws).str_replace("setings.py", "x", "y")
    assert "does not exist" in str(err.value) and "settings.py" in str(err.value)


def test_git_internals_are_not_written(ws: Path) -> None:
    (ws / ".git").mkdir()
    with pytest.raises(PathError, match=".git"):
        Editor(ws).create(".git/config", "[core]\n")


def test_create_refuses_existing_unless_overwrite_and_keeps_crlf(ws: Path) -> None:
    path = ws / "a.txt"
    path.write_bytes(b"old\r\n")
    editor = Editor(ws)
    with pytest.raises(EditError, match="already exists"):
        editor.create("a.txt", "new\n")
    editor.create("a.txt", "new\nfile\n", overwrite=True)
    assert path.read_bytes() == b"new\r\nfile\r\n"
    editor.create("deep/er/b.txt", "made\n")
    assert (ws / "deep" / "er" / "b.txt").read_text() == "made\n"


def test_insert_and_tolerant_match_keep_crlf_and_bom(ws: Path) -> None:
    path = ws / "w.py"
    path.write_bytes(codecs.BOM_UTF8 + b"def f():\r\n    a = 1\r\n    return a\r\n")
    editor = Editor(ws)
    editor.insert("w.py", 1, "    # doc\n")
    editor.str_replace("w.py", "     3\ta = 1\n     4\treturn a", "a = 2\nreturn a")  # pasted from view, dedented
    assert path.read_bytes() == codecs.BOM_UTF8 + b"def f():\r\n    # doc\r\n    a = 2\r\n    return a\r\n"


def test_undo_restores_exact_bytes(ws: Path) -> None:
    path = ws / "u.txt"
    raw = b"\xef\xbb\xbfone\r\ntwo\nthree"
    path.write_bytes(raw)
    editor = Editor(ws)
    editor.str_replace("u.txt", "two", "2")
    editor.insert("u.txt", 0, "zero")
    editor.undo("u.txt")
    editor.undo("u.txt")
    assert path.read_bytes() == raw
