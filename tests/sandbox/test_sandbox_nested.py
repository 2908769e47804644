"""The walk that finds nested repositories before every command (coder/sandbox/nested.py), and the protected set
built on it: correct after every kind of change a command can make, including one that hides behind a reset mtime."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from repo_support import git

from coder.sandbox import nested
from coder.sandbox.nested import NestedScanner
from coder.sandbox.protected import protected_paths


def _found(scanner: NestedScanner, root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in scanner.scan()}


def test_walk_finds_nested_entries_and_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".git" / "sub" / ".git").mkdir(parents=True)  # inside the top git dir: never walked
    (root / "a" / "b" / ".git" / "inner" / ".git").mkdir(parents=True)  # a nested repo is not entered
    (root / "m").mkdir()
    (root / "m" / ".git").write_text("gitdir: ../store\n")
    (root / "docs").mkdir()
    (root / "docs" / "AGENTS.md").write_text("x")
    (root / "AGENTS.md").write_text("x")  # the root's files are protected_paths' business, not the walk's
    (root / "node_modules" / "pkg" / ".git").mkdir(parents=True)
    outside = tmp_path / "outside"
    (outside / "r" / ".git").mkdir(parents=True)
    (root / "link").symlink_to(outside)  # never followed
    assert _found(NestedScanner(str(root)), root) == {"a/b/.git", "m/.git", "docs/AGENTS.md"}


def test_cached_walk_sees_every_change_even_with_the_mtime_set_back(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nested, "RACY_NS", 200_000_000)
    root = tmp_path / "ws"
    (root / "x" / "y" / "z").mkdir(parents=True)
    scanner = NestedScanner(str(root))
    assert _found(scanner, root) == set()
    time.sleep(0.3)
    assert _found(scanner, root) == set()  # settled: now served from the cache
    deep = root / "x" / "y" / "z"
    stamp = os.stat(deep)
    (deep / ".git").mkdir()
    os.utime(deep, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # hide the change from an mtime cache
    assert os.stat(deep).st_mtime_ns == stamp.st_mtime_ns
    assert _found(scanner, root) == {"x/y/z/.git"}
    time.sleep(0.3)
    os.rename(root / "x", root / "w")  # a moved folder is found at its new place
    assert _found(scanner, root) == {"w/y/z/.git"}
    time.sleep(0.3)
    (root / "w" / "y" / "z" / ".git").rmdir()
    (root / "w" / "y" / "z" / "CLAUDE.md").write_text("x")
    assert _found(scanner, root) == {"w/y/z/CLAUDE.md"}


def test_protected_set_covers_nested_repos_git_files_and_root_files(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    git(ws, "init", "-q", "sub")
    git(ws, "init", "-q", f"--separate-git-dir={ws / 'store'}", "mod")
    (ws / ".mcp.json").write_text("{}")
    (ws / "CLAUDE.md").write_text("x")
    (ws / "evil").mkdir()
    (ws / "evil" / ".git").symlink_to("../.git")  # must not make the top git dir read-only
    (ws / "far").mkdir()
    (ws / "far" / ".git").write_text(f"gitdir: {tmp_path}\n")  # a git dir outside: nothing to bind there
    protected = protected_paths(ws)
    ro = {p.relative_to(ws).as_posix() for p in protected.read_only}
    assert [p.relative_to(ws).as_posix() for p in protected.pinned] == [".git"]
    assert {".git/hooks", ".git/config", ".git/info", ".git/modules", ".git/worktrees", ".coder", ".claude",
            ".mcp.json", "CLAUDE.md", "sub/.git", "mod/.git", "store", "far/.git"} == ro
    assert protected_paths(ws).covers(protected)
    git(ws, "init", "-q", "later")
    assert not protected.covers(protected_paths(ws))
