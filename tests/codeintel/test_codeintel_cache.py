"""The SQLite cache: reuse across processes, incremental updates (edit, delete, rename, branch switch),
corruption, a read-only cache folder and the size bound."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from coder.codeintel import build
from coder.codeintel.index import CodeIndex
from coder.codeintel.store import db_path_for, enforce_cache_bound

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from repo_support import git


def _names(index: CodeIndex, name: str) -> list[tuple[str, int]]:
    return [(h.path, h.line) for h in index.definitions(name, fuzzy=False)]


def test_new_process_reuses_the_cache(git_repo: Path) -> None:
    first = CodeIndex.open(git_repo)
    stats = first.refresh()
    assert stats.parsed == 1 and _names(first, "greet") == [("src/app.py", 1)]
    first.close()
    code = ("import sys, json; from pathlib import Path; from coder.codeintel.index import CodeIndex\n"
            "i = CodeIndex.open(Path(sys.argv[1])); s = i.refresh()\n"
            "print(json.dumps([s.parsed, s.unchanged, [h.line for h in i.definitions('greet')]]))")
    out = subprocess.run([sys.executable, "-c", code, str(git_repo)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert out.stdout.strip() == "[0, 1, [1]]"


def test_edit_delete_rename_are_incremental(git_repo: Path) -> None:
    (git_repo / "src" / "util.py").write_text("def helper():\n    return greet('x')\n")
    index = CodeIndex.open(git_repo)
    assert index.refresh().parsed == 2
    # edit: same size is not enough to hide a change (the content hash decides)
    (git_repo / "src" / "app.py").write_text("\n\ndef greet(name):\n    return 'hello ' + name\n")
    stats = index.refresh()
    assert (stats.parsed, stats.unchanged) == (1, 1)
    assert _names(index, "greet") == [("src/app.py", 3)]
    # rename
    (git_repo / "src" / "util.py").rename(git_repo / "src" / "tools.py")
    stats = index.refresh()
    assert stats.removed == 1 and stats.parsed == 1
    assert _names(index, "helper") == [("src/tools.py", 1)]
    assert {r.path for r in index.references("greet")} == {"src/tools.py"}
    # delete
    (git_repo / "src" / "tools.py").unlink()
    assert index.refresh().removed == 1
    assert _names(index, "helper") == [] and index.references("greet") == []


def test_same_size_edit_in_the_same_second_is_seen(git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "within seconds" is wall time, and a loaded machine can take longer than RACY_SECONDS between the fixture's
    # write and the first refresh: the window is widened so the file is certainly racy when first indexed
    monkeypatch.setattr(build, "RACY_SECONDS", 3600.0)
    index = CodeIndex.open(git_repo)
    index.refresh()
    path = git_repo / "src" / "app.py"
    st = path.stat()
    path.write_text(path.read_text().replace("greet", "grEEt"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # identical size and mtime
    stats = index.refresh()  # a file indexed within seconds of its last change is re-hashed, like racy git
    assert stats.parsed == 1
    assert _names(index, "grEEt") == [("src/app.py", 1)]


def test_git_checkout_of_another_branch(git_repo: Path) -> None:
    index = CodeIndex.open(git_repo)
    index.refresh()
    git(git_repo, "checkout", "-q", "-b", "feature")
    (git_repo / "src" / "feature.py").write_text("class Feature:\n    def on(self):\n        pass\n")
    (git_repo / "src" / "app.py").write_text("def greet(name, loud=False):\n    return name\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "feature")
    index.refresh()
    assert _names(index, "Feature.on") == [("src/feature.py", 2)]
    git(git_repo, "checkout", "-q", "main")
    stats = index.refresh()
    assert stats.removed == 1
    assert _names(index, "Feature") == []
    assert index.outline("src/app.py")[0].signature == "def greet(name)"
    git(git_repo, "checkout", "-q", "feature")
    index.refresh()
    assert index.outline("src/app.py")[0].signature == "def greet(name, loud=False)"


def test_corrupt_cache_is_rebuilt(git_repo: Path) -> None:
    index = CodeIndex.open(git_repo)
    index.refresh()
    path = db_path_for(git_repo)
    index.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    again = CodeIndex.open(git_repo)
    assert any("rebuilt" in n for n in again.notes)
    assert again.refresh().parsed == 1
    assert _names(again, "greet") == [("src/app.py", 1)]


def test_unwritable_cache_dir_keeps_the_index_in_memory(git_repo: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder should be")  # fails even for root, unlike chmod
    index = CodeIndex.open(git_repo, cache_dir=blocker / "index")
    assert any("not writable" in n for n in index.notes)
    index.refresh()
    assert _names(index, "greet") == [("src/app.py", 1)]


def test_cache_folder_stays_under_its_bound(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    for i in range(5):
        p = folder / f"repo{i}.sqlite"
        p.write_bytes(b"x" * 1000)
        os.utime(p, (1000 + i, 1000 + i))
    keep = folder / "repo0.sqlite"
    removed = enforce_cache_bound(folder, keep=keep, limit=2500)
    left = sorted(p.name for p in folder.glob("*.sqlite"))
    assert removed == 3 and left == ["repo0.sqlite", "repo4.sqlite"]


def test_parallel_bulk_cold_build_recreates_indexes(git_repo: Path, monkeypatch) -> None:
    from coder.codeintel import build

    for i in range(6):
        (git_repo / "src" / f"m{i}.py").write_text(f"def f{i}():\n    return greet('{i}')\n")
    monkeypatch.setattr(build, "BULK_MIN_FILES", 2)
    monkeypatch.setattr(build, "PARALLEL_MIN_FILES", 2)
    index = CodeIndex.open(git_repo)
    stats = index.refresh(workers=2)  # two worker processes, indexes dropped and rebuilt at the end
    assert stats.parsed == 7
    names = {r[0] for r in index._query("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"symbols_short", "symbols_file"} <= names
    assert _names(index, "f5") == [("src/m5.py", 1)]
    assert len(index.references("greet")) == 6
