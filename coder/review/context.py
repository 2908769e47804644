"""The patch under review, reconstructed exactly: the base tree, the diff applied to it in a private index, and
the files before and after. Every stage reads from here, so the review is of the diff given, whatever its source
(work tree, index, a commit, a patch file from a batch run), and never of whatever happens to be on disk.

Nothing here opens a workspace path that is not a regular file: file contents come from git's objects, a binary
file is taken from the work tree only as a regular file reached without links, and the linter reads a private
export of the files it needs (`lint_export`), never the workspace, where a FIFO planted under a config file's name
would hang it."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

from coder.config.sections import Config, ReviewSettings
from coder.fs.beneath import EscapeError, WorkspaceFS
from coder.host import run as host_run
from coder.review.lintexport import export_for_lint
from coder.vcs.patch import FilePatch, parse_diff
from coder.vcs.repo import Repo

TEST_DIRS = {"tests", "test", "testing", "__tests__", "spec", "specs"}
#: the changed files read with the trees, each up to this size and all together up to READ_AHEAD_TOTAL (larger
#: ones are read when a stage asks)
READ_AHEAD_FILE = 1 << 20
READ_AHEAD_TOTAL = 32 << 20


def is_test_path(path: str) -> bool:
    """Test code by the usual conventions of pytest, unittest, jest/vitest/mocha, go, rust and rspec."""
    p = PurePosixPath(path)
    name = p.name
    if any(part in TEST_DIRS for part in p.parts[:-1]):
        return True
    return (
        (name.startswith("test_") and name.endswith(".py"))
        or name.endswith(("_test.py", "_test.go", "_spec.rb", "_test.rb"))
        or name == "conftest.py"
        or any(name.endswith(f".{kind}.{ext}") for kind in ("test", "spec") for ext in ("js", "jsx", "ts", "tsx",
                                                                                          "mjs", "cjs"))
    )


@dataclass
class ReviewContext:
    repo: Repo
    diff: str
    task: str = ""
    config: Config = field(default_factory=Config)  # the session's whole configuration
    base: str = "HEAD"

    def __post_init__(self) -> None:
        self.settings: ReviewSettings = self.config.review
        self.files: list[FilePatch] = parse_diff(self.diff)
        self.base_tree = self.repo.resolve_tree(self.base)
        self.apply_error: str = ""
        self.new_tree = self._apply()
        self._tmpdirs: list[str] = []
        # the changed files before and after, which every stage reads: their sizes, and their contents within the
        # read-ahead bounds, by one `cat-file --batch-check` and one `--batch` a tree (one git process a read was
        # two a file)
        self._sizes: dict[tuple[str, str], int] = {}
        self._blobs: dict[tuple[str, str], bytes] = {}
        budget = READ_AHEAD_TOTAL
        text = {p for f in self.files if not f.binary for p in (f.old_path, f.new_path)}
        for tree, paths in ((self.base_tree, [f.old_path for f in self.files if f.old_path]),
                            (self.new_tree, [f.new_path for f in self.files if f.new_path])):
            wanted = []
            for path, size in self.repo.blob_sizes(tree, paths).items():
                self._sizes[tree, path] = size
                if path in text and size <= min(READ_AHEAD_FILE, budget):
                    wanted.append(path)
                    budget -= size
            self._blobs.update(((tree, p), data) for p, data in self.repo.blobs(tree, wanted).items())

    @property
    def root(self) -> Path:
        """The work tree."""
        return self.repo.root

    # --- the trees -----------------------------------------------------------------------------------------
    def _apply(self) -> str:
        """Apply the diff to the base in a private index; on failure fall back to the work tree (the apply
        stage reports the failure; the others still look at what they can)."""
        if not self.diff.strip():
            return self.base_tree
        with self.repo.private_index() as index:
            index.read_tree(self.base_tree)
            self.apply_error = index.apply(self.diff, [f.path for f in self.files if f.binary])
            if self.apply_error:
                return self.repo.worktree_tree()
            for f in self.files:  # binary files: take them from the work tree when they are there (as regular
                if f.binary and f.new_path and self._on_disk(f.new_path) is not None:  # files, not links)
                    index.add([f.new_path], force=True)
            return index.write_tree()

    def read_old(self, path: str | None) -> str | None:
        return self._read(self.base_tree, path)

    def read_new(self, path: str | None) -> str | None:
        return self._read(self.new_tree, path)

    def _read(self, tree: str, path: str | None) -> str | None:
        if not path:
            return None
        data = self._blobs.get((tree, path))
        if data is None:
            data = self.repo.blobs(tree, [path]).get(path)
        return data.decode("utf-8", errors="replace") if data is not None else None

    def blob_size(self, path: str, new: bool = True) -> int | None:
        tree = self.new_tree if new else self.base_tree
        size = self._sizes.get((tree, path))
        if size is None:
            size = self.repo.blob_sizes(tree, [path]).get(path)
        if size is not None:
            return size
        st = self._on_disk(path) if new else None
        return st.st_size if st is not None else None

    def _on_disk(self, path: str) -> os.stat_result | None:
        """The stat of work-tree file `path` when it is a regular file reached without a symlink, else None (a
        diff touching a planted `x.bin -> /etc/shadow` or a file under a symlinked folder reads nothing)."""
        try:
            with WorkspaceFS(self.root) as fs:
                st = fs.stat(path)
        except (OSError, EscapeError):
            return None
        return st if stat.S_ISREG(st.st_mode) else None

    def tree_files(self, new: bool = True) -> list[str]:
        return [e.path for e in self.repo.tree_entries(self.new_tree if new else self.base_tree, recursive=True)]

    @cached_property
    def test_files(self) -> list[str]:
        """Test files of the patched tree."""
        return [p for p in self.tree_files(new=True) if is_test_path(p)]

    @cached_property
    def base_test_files(self) -> list[str]:
        """Test files that existed before the patch (the tests a gaming patch wants to get past)."""
        return [p for p in self.tree_files(new=False) if is_test_path(p)]

    # --- a directory holding the patched tree (for linters and tests) --------------------------------------
    @cached_property
    def workdir(self) -> Path:
        """The work tree itself when it is exactly the patched tree, else an export of the tree to a temp dir."""
        if self.repo.worktree_tree() == self.new_tree:
            return self.root
        return self.export(self.new_tree)

    def export(self, tree: str) -> Path:
        tmp = tempfile.mkdtemp(prefix="coder-review-")
        self._tmpdirs.append(tmp)
        proc = host_run(["tar", "-x", "-C", tmp], purpose="a review export", input=self.repo.archive(tree),
                        timeout=600)
        if proc.returncode != 0:
            raise OSError(f"tar could not extract the tree: {proc.stderr.decode(errors='replace').strip()}")
        return Path(tmp)

    def lint_export(self, paths: list[str], config_names: tuple[str, ...]) -> Path:
        """A private folder with what a linter reads of the patched tree (coder/review/lintexport.py)."""
        tmp = tempfile.mkdtemp(prefix="coder-lint-")
        self._tmpdirs.append(tmp)
        return export_for_lint(self.repo, self.new_tree, paths, config_names, Path(tmp))

    def cleanup(self) -> None:
        for tmp in self._tmpdirs:
            shutil.rmtree(tmp, ignore_errors=True)
        self._tmpdirs.clear()

    # --- convenience ---------------------------------------------------------------------------------------
    @property
    def source_files(self) -> list[FilePatch]:
        return [f for f in self.files if not is_test_path(f.path)]

    @property
    def changed_test_files(self) -> list[FilePatch]:
        return [f for f in self.files if is_test_path(f.path)]
