"""Restoring files of a checkpoint into the work tree, safe against what the sandbox planted since.

The sandboxed shell can turn any folder of the work tree into a symlink to the host after a checkpoint (even in a
background loop while a restore runs). So `/undo` and `/rewind` never touch a path by name: every delete and write
goes beneath a handle on the work tree without following symlinks (coder/fs/beneath.py):
- a delete removes the named entry itself (a link, never its target), and skips paths whose folder is a link
  now (nothing of the work tree is there to delete); emptied folders are removed with rmdir beneath the root;
- a write replaces a link standing at its name (temp file + rename in the folder's fd), and a write under a
  symlinked folder is refused, before anything changes, with the links named;
- contents come from `git checkout-index` into a private host folder (git's conversions applied there) and are
  copied in from there: git itself never writes into the work tree;
- a protected path (coder/trust/protected.py: git's own files, `.coder/`, instruction files), or a symlink to one, is
  never written or deleted: a restore is not the user's say-so for those, whatever the checkpoint holds.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from coder.fs.beneath import EscapeError, WorkspaceFS
from coder.host.git import GITLINK_MODE
from coder.trust.protected import protected_reason
from coder.vcs.errors import VcsError
from coder.vcs.repo import Repo

#: git's mode of a symlink entry (a submodule's, GITLINK_MODE, comes from hostgit)
SYMLINK_MODE = "120000"


class RestoreBlocked(VcsError):
    """A restore cannot write or delete a path safely (a symlink stands in its way, or it changed meanwhile)."""


def apply_tree(repo: Repo, tree: str, paths: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Bring `paths` to their state in `tree`: written when it has them, deleted when not. Returns the paths
    written, deleted, and left alone because they are protected."""
    skipped = sorted(p for p in paths if protected_reason(p))
    paths = [p for p in paths if p not in skipped]
    if not paths:
        return [], [], skipped
    wanted = set(paths)
    entries = {e.path: e.mode for e in repo.tree_entries(tree, paths, recursive=True) if e.path in wanted}
    gone = [p for p in paths if p not in entries]
    with WorkspaceFS(repo.root) as fs:
        gone_set = set(gone)
        with _fs_errors("the check for symlinks"):
            blocked = {p: link for p in entries if (link := _symlinked_parent(fs, p, gone_set))}
        if blocked:
            shown = ", ".join(f"{p} (under {link})" for p, link in sorted(blocked.items())[:8])
            raise RestoreBlocked(
                f"Not restoring: {len(blocked)} file(s) it must write are now under a symbolic link made after "
                f"the checkpoint: {shown}. coder never writes through a link; remove the link(s) (or make them "
                "folders again) and run the restore again.")
        deleted = []
        for path in gone:
            with _fs_errors(path):
                if _symlinked_parent(fs, path, set()):
                    continue  # its folder is a link now: nothing of the work tree to delete there
                kind = fs.kind(path)
                if kind in ("file", "link", "other"):
                    fs.unlink(path)
                elif kind == "dir":
                    try:
                        fs.rmdir(path)
                    except OSError:
                        pass  # not empty: untracked files of the user's
            deleted.append(path)
            _remove_empty_parents(fs, path)
        if entries:
            linked = _write_entries(repo, fs, tree, entries)
            skipped = sorted(skipped + linked)
            entries = {p: m for p, m in entries.items() if p not in linked}
    return sorted(entries), sorted(deleted), skipped


def _write_entries(repo: Repo, fs: WorkspaceFS, tree: str, entries: dict[str, str]) -> list[str]:
    """Check the blobs out into a private host folder, then copy each one in beneath the work tree. Returns the
    symlinks left out because they point at a protected path."""
    linked: list[str] = []
    with repo.private_index() as index, tempfile.TemporaryDirectory(prefix="coder-restore-") as tmp:
        index.read_tree(tree)
        index.checkout([p for p, mode in entries.items() if mode != GITLINK_MODE], Path(tmp))
        for path, mode in sorted(entries.items()):
            with _fs_errors(path):
                if mode == GITLINK_MODE:  # a submodule: its folder, not its content
                    if fs.kind(path) != "dir":
                        _clear(fs, path)
                        fs.makedirs(path)
                    continue
                source = Path(tmp, path)
                target = os.readlink(source) if mode == SYMLINK_MODE else ""
                if target and protected_reason(target):
                    linked.append(path)
                    continue
                if fs.kind(path) == "dir":  # a directory where a file must go
                    fs.rmtree(path)
                if mode == SYMLINK_MODE:
                    fs.symlink(target, path, create_parents=True)
                    continue
                with open(source, "rb") as handle:
                    fs.write_atomic(path, handle, stat.S_IMODE(os.fstat(handle.fileno()).st_mode),
                                    create_parents=True)
    return linked


def _symlinked_parent(fs: WorkspaceFS, path: str, removed_first: set[str]) -> str | None:
    """The first folder of `path` that is a symlink now (those in `removed_first` go before any write)."""
    parts = path.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        folder = "/".join(parts[:i])
        kind = fs.kind(folder)
        if kind == "link" and folder not in removed_first:
            return folder
        if kind != "dir":
            return None
    return None


def _clear(fs: WorkspaceFS, path: str) -> None:
    kind = fs.kind(path)
    if kind == "dir":
        fs.rmtree(path)
    elif kind is not None:
        fs.unlink(path)


@contextmanager
def _fs_errors(path: str) -> Iterator[None]:
    try:
        yield
    except EscapeError as exc:
        raise RestoreBlocked(f"Restore stopped at {path}: {exc}. It changed during the restore; the files before "
                             "it were restored. Run the restore again.") from None
    except OSError as exc:
        raise RestoreBlocked(f"Restore stopped at {path}: {exc.strerror or exc}. The files before it were "
                             "restored.") from None


def _remove_empty_parents(fs: WorkspaceFS, path: str) -> None:
    """Remove the folders of `path` that are empty now, deepest first; stop at the first that is not (or that
    is a symlink: rmdir beneath the work tree never follows one)."""
    parts = path.split("/")[:-1]
    while parts:
        try:
            fs.rmdir("/".join(parts))
        except (OSError, EscapeError):
            return
        parts.pop()
