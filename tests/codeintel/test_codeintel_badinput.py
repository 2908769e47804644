"""Every "Bad input" of the issue: handled with a note or a count, never a crash."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from coder.base.errors import UsageError
from coder.codeintel.build import parse_file
from coder.codeintel.files import _walk_files, list_files
from coder.codeintel.index import CodeIndex
from coder.codeintel.outline import outline_source
from coder.codeintel.textsearch import search
from coder.fs.beneath import WorkspaceFS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from repo_support import git


def test_syntax_errors_index_what_parses(tmp_path: Path) -> None:
    src = b"def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass Fine:\n    def m(self): pass\n"
    names = [s.name for s in outline_source("x.py", src)]
    assert "ok" in names and "Fine.m" in names


def test_bad_files_in_a_repository(git_repo: Path) -> None:
    src = git_repo / "src"
    (src / "notes.xyz").write_text("def hidden(): pass\nneedle in text\n")
    (src / "big.py").write_bytes(b"x = 1\n" * (30 * 1024 * 1024 // 6))  # 30 MB
    (src / "blob.py").write_bytes(b"\x00\x01\x02ELF" * 1000)
    (src / "latin.py").write_bytes("def caf\xe9():\n    pass\n# \xff\xfe\n".encode("latin-1"))
    (src / "gen.min.js").write_text("function a(){}")
    os.symlink(src, src / "loop")  # a symlink loop: src/loop -> src
    os.symlink(src / "app.py", src / "alias.py")
    index = CodeIndex.open(git_repo)
    stats = index.refresh()
    info = index.stats()
    assert info["skipped"]["huge"] == 1 and info["skipped"]["binary"] == 1
    assert stats.skipped["symlink"] >= 1 and stats.skipped["generated"] == 1
    assert stats.skipped["unknown language"] >= 1
    hits = index.definitions("caf", fuzzy=False)  # invalid UTF-8: the parser stops the name at the bad byte
    assert [h.path for h in hits] == ["src/latin.py"] and "\ufffd" in hits[0].signature
    assert index.definitions("hidden", fuzzy=False) == []  # unknown extension: text search only
    found = search(git_repo, "needle")
    assert [(m.path, m.line) for m in found.matches] == [("src/notes.xyz", 2)]
    assert [s.name for s in index.outline("src/app.py")] == ["greet"]


def test_walk_outside_git_honours_gitignore_and_survives_loops(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "pkg" / "build_out").mkdir(parents=True)
    (root / ".gitignore").write_text("*.log\nbuild_out/\n/secret.py\n!keep.log\n")
    (root / "pkg" / "a.py").write_text("def a(): pass\n")
    (root / "pkg" / "build_out" / "b.py").write_text("def b(): pass\n")
    (root / "secret.py").write_text("def s(): pass\n")
    (root / "pkg" / "secret.py").write_text("def s2(): pass\n")  # anchored pattern: only the top one
    (root / "x.log").write_text("log")
    (root / "keep.log").write_text("keep")
    os.symlink(root, root / "pkg" / "up")
    listing = list_files(root, all_files=True)  # ripgrep's listing when rg is installed
    assert not listing.from_git
    assert listing.files == [".gitignore", "keep.log", "pkg/a.py", "pkg/secret.py"]
    assert sorted(_walk_files(root).files) == listing.files  # the pure Python walk agrees
    assert [m.path for m in search(root, "def ", use_ripgrep=False).matches] == ["pkg/a.py", "pkg/secret.py"]


def test_file_deleted_between_listing_and_parsing(tmp_path: Path) -> None:
    with WorkspaceFS(tmp_path) as fs:
        result = parse_file(fs, "gone.py", 10, 0, None)
    assert result[5] == "unreadable"


def test_deleted_file_still_in_git_index_is_counted(git_repo: Path) -> None:
    (git_repo / "src" / "app.py").unlink()  # tracked by git, gone from disk
    index = CodeIndex.open(git_repo)
    stats = index.refresh()
    assert stats.skipped.get("deleted") == 1 and index.definitions("greet", fuzzy=False) == []


def test_bad_regex_and_missing_path_are_usage_errors(git_repo: Path) -> None:
    for use_rg in (True, False):
        with pytest.raises(UsageError):
            search(git_repo, "(unclosed", use_ripgrep=use_rg)
    with pytest.raises(UsageError):
        search(git_repo, "x", path="../outside")


def test_ripgrep_and_python_fallback_agree(git_repo: Path) -> None:
    assert shutil.which("rg"), "ripgrep is missing: apt-get install ripgrep (or bash install.sh)"
    (git_repo / "ignored.py").write_text("def greet(): pass\n")
    (git_repo / ".gitignore").write_text("ignored.py\n")
    (git_repo / "src" / "more.py").write_text("x = 1\ngreet('a')\ny = 2\n")
    git(git_repo, "add", "src/more.py")
    a = search(git_repo, "greet", context=1, use_ripgrep=True)
    b = search(git_repo, "greet", context=1, use_ripgrep=False)
    assert a.engine == "ripgrep" and b.engine == "python"
    key = lambda r: sorted((m.path, m.line, m.is_context) for m in r.matches)
    assert key(a) == key(b)
    assert ("src/more.py", 2, False) in key(a) and ("src/more.py", 1, True) in key(a)
    capped = search(git_repo, ".", max_matches=2, use_ripgrep=False)
    assert capped.truncated and capped.match_count == 2


def test_huge_non_repository_folder_stops_listing_with_a_note(tmp_path: Path, monkeypatch) -> None:
    from coder.codeintel import files

    for i in range(5):
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
    monkeypatch.setattr(files, "MAX_WALK_FILES", 3)
    for listing in (list_files(tmp_path), files._walk_files(tmp_path)):
        assert len(listing.files) == 3 and "stopped listing after 3 files" in listing.notes[0]
