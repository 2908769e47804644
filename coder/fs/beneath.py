"""Host-side file operations beneath the workspace, immune to symlinks the sandbox plants.

The sandboxed shell has the workspace read-write, so anything there can become a symlink at any moment, even in
a loop while coder works. Checking a path (`realpath`, `is_symlink`) and then opening it by name leaves a window
in which a directory becomes a link to the host. So every host-side read, write, rename and delete of a
workspace path goes through a `WorkspaceFS`: an `O_PATH` handle on the workspace directory, and every operation
relative to it, component by component, never following a symlink:

- `openat2(2)` with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS where the kernel has it
  (Linux 5.6+; coder/fs/openat2.py), one call per directory, or per file for a plain `open` (the code index
  opens thousands of files in a row: as cheap as an `open` by name);
- otherwise (older kernels, seccomp filters answering ENOSYS/EPERM, other systems) a walk that opens each
  component with `O_NOFOLLOW | O_DIRECTORY` relative to the previous one.
The resolution lives in coder/fs/resolve.py (the `Beneath` base class); this module has the operations.

Readers: `read_file` opens non-blocking and refuses anything but a regular file, so a FIFO planted where a
file was cannot hang coder; `read_if_file` / `read_beneath` answer None for an optional file (`.gitignore`,
`AGENTS.md`) that is missing, a link, or under one; `lstats` stats a whole listing one folder fd at a time.

Symlink semantics (the why):
- The operations (`read_file`, `write_atomic`, `unlink`, `rmdir`, `rmtree`, `rename`, `symlink`, `makedirs`,
  `listdir`, `stat`) are strict: a symlink anywhere in the path is refused with `SymlinkInPath`, and the final
  component is acted on itself (an unlink removes the link, a write replaces the link with a file). They take
  the REAL workspace-relative path.
- `resolve_real` / `real_relpath` turn a path the model or user named into that real path. They follow a
  symlink that stays inside the workspace (repositories ship such links, e.g. `docs/README.md -> ../README.md`,
  and editing through one should edit the file it names, as every editor does); an absolute link into the
  workspace is followed from the root handle (the sandbox sees the workspace at the same path); a link that
  leaves (absolute outside, `..` above the root, more than 40 hops) is an `EscapeError` / None. Following is a
  pure computation: the strict operation afterwards is what makes it race-free, because a link planted after
  the resolution makes that operation fail instead of being followed.
- A destructive caller (restores, deletes) passes the path it has straight to the strict operations, so it
  never traverses a symlinked parent, even one pointing inside.

Errors: `EscapeError` (a `CoderError`; `SymlinkInPath` is its subclass) with a message for people; everything
else is the usual `OSError` (FileNotFoundError, IsADirectoryError, ...). Callers re-raise as their own error type.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, TypeVar

from coder.fs import openat2
from coder.fs.resolve import _O_CLOEXEC, MAX_LINKS, STRICT, Beneath, EscapeError, SymlinkInPath, split_rel

__all__ = ["MAX_LINKS", "EscapeError", "SymlinkInPath", "WorkspaceFS", "path_kind", "read_beneath", "real_relpath",
           "split_rel"]


class WorkspaceFS(Beneath):
    """A handle on one workspace directory; every method takes a workspace-relative path."""

    def __enter__(self) -> WorkspaceFS:
        return self

    # -- strict operations ----------------------------------------------------------------------------------
    def stat(self, rel: str) -> os.stat_result:
        """lstat of `rel` (a symlink at the end is reported as one, not followed)."""
        parts = split_rel(rel)
        if not parts:
            return os.fstat(self._root())
        fd, name = self._parent(rel)
        try:
            return os.stat(name, dir_fd=fd, follow_symlinks=False)
        finally:
            os.close(fd)

    def kind(self, rel: str) -> str | None:
        """"file", "dir", "link", "other", or None when `rel` (or a parent) does not exist."""
        try:
            mode = self.stat(rel).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISLNK(mode):
            return "link"
        return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"

    def lstats(self, rels: Iterable[str]) -> Iterator[tuple[str, os.stat_result | None]]:
        """(rel, lstat) of many paths, None for one that is missing or lies under a symlink or a non-folder.
        One strict directory fd per folder, kept while its files come (sorted listings group them), so a
        re-check of every file of a big repository costs about what a plain `lstat` by name does."""
        dirs: dict[str, int | None] = {}
        try:
            for rel in rels:
                folder, _, name = rel.rpartition("/")
                if folder not in dirs:
                    if len(dirs) >= 64:
                        _close_all(dirs)
                    try:
                        dirs[folder] = self._dir(split_rel(folder))
                    except (OSError, EscapeError):
                        dirs[folder] = None
                dfd = dirs[folder]
                st = None
                if dfd is not None and name not in ("", ".", ".."):
                    try:
                        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
                    except OSError:
                        pass
                yield rel, st
        finally:
            _close_all(dirs)

    def read_if_file(self, rel: str, limit: int | None = None) -> bytes | None:
        """The bytes of `rel` (at most `limit`) when it is a regular file reached without a symlink, else None
        (missing, a folder, a FIFO, a link, or under a symlinked folder): for optional files such as
        `.gitignore` or `AGENTS.md` that a hostile checkout may have made a link to a secret."""
        try:
            return self.read_file(rel, limit)[0]
        except (OSError, EscapeError):
            return None

    def open(self, rel: str, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
        """os.open beneath the workspace with O_NOFOLLOW on the final component (SymlinkInPath for a link)."""
        flags |= os.O_NOFOLLOW | os.O_NOCTTY | _O_CLOEXEC
        parts = split_rel(rel)
        if parts and not flags & os.O_CREAT:  # one openat2 for the whole path (the index opens thousands of files)
            try:
                fd = openat2.openat2(self._root(), "/".join(parts), flags, STRICT)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
                    raise
                fd = None  # the route below says which component is the link
            if fd is not None:
                return fd
        fd, name = self._parent(rel)
        try:
            return os.open(name, flags, mode, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SymlinkInPath(f"{rel} is a symbolic link; refused", rel) from None
            raise
        finally:
            os.close(fd)

    def open_regular(self, rel: str) -> tuple[int, os.stat_result]:
        """A read-only fd on the regular file `rel` and its fstat. Opened non-blocking, so a FIFO planted in its
        place cannot hang coder; IsADirectoryError / OSError(EINVAL) for anything but a regular file."""
        fd = self.open(rel, os.O_RDONLY | os.O_NONBLOCK)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", rel)
            raise OSError(errno.EINVAL, "not a regular file (device, socket or pipe)", rel)
        return fd, st

    def read_file(self, rel: str, limit: int | None = None) -> tuple[bytes, os.stat_result]:
        """The bytes of regular file `rel` (at most `limit`) and its stat."""
        fd, st = self.open_regular(rel)
        try:
            chunks: list[bytes] = []
            total = 0
            while limit is None or total < limit:
                # the size it has plus one (to see the end), not `limit`: a 1 MB buffer per small file is slow
                want = st.st_size + 1 - total if total <= st.st_size else 1 << 16  # (it grew meanwhile)
                chunk = os.read(fd, want if limit is None else min(want, limit - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), st
        finally:
            os.close(fd)

    def makedirs(self, rel: str) -> None:
        """Create `rel` and its missing parents (FileExistsError-free); never through a symlink."""
        os.close(self._dir(split_rel(rel), create=True))

    def write_atomic(self, rel: str, data: bytes | BinaryIO, mode: int | None = None, *,
                     create_parents: bool = False) -> os.stat_result:
        """Write `rel` via a temp file in the same directory fd and a rename. The rename replaces whatever
        non-directory stands at `rel`, a symlink included (the link is replaced, its target untouched).
        `mode`: the new file's permission bits; None keeps those of the regular file replaced (and its owner,
        when running as root) or uses 0o666 & ~umask. Returns the new file's stat."""
        dfd, name = self._parent(rel, create=create_parents)
        try:
            try:
                old: os.stat_result | None = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if old is not None and not stat.S_ISREG(old.st_mode):
                if stat.S_ISDIR(old.st_mode):
                    raise IsADirectoryError(errno.EISDIR, "Is a directory", rel)
                old = None
            tmp, fd = _temp(name, lambda t: os.open(t, _TEMP_FLAGS, 0o600, dir_fd=dfd))
            try:
                with os.fdopen(fd, "wb") as handle:
                    if isinstance(data, (bytes, bytearray, memoryview)):
                        handle.write(data)
                    else:
                        shutil.copyfileobj(data, handle, 1 << 20)
                    handle.flush()
                    if mode is None and old is not None:
                        os.fchmod(handle.fileno(), stat.S_IMODE(old.st_mode))
                        if os.geteuid() == 0:
                            try:
                                os.fchown(handle.fileno(), old.st_uid, old.st_gid)
                            except OSError:
                                pass
                    else:
                        os.fchmod(handle.fileno(), mode if mode is not None else 0o666 & ~_umask())
                    os.fsync(handle.fileno())
                    new_st = os.fstat(handle.fileno())
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except OSError:
                    pass
                raise
            return new_st
        finally:
            os.close(dfd)

    def symlink(self, target: str, rel: str, *, create_parents: bool = False) -> None:
        """Make `rel` a symlink to `target` (text, not resolved), replacing a non-directory there."""
        dfd, name = self._parent(rel, create=create_parents)
        try:
            tmp, _ = _temp(name, lambda t: os.symlink(target, t, dir_fd=dfd))
            try:
                os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                os.unlink(tmp, dir_fd=dfd)
                raise
        finally:
            os.close(dfd)

    def unlink(self, rel: str) -> None:
        """Remove the file or symlink `rel` itself (never what a link points to)."""
        dfd, name = self._parent(rel)
        try:
            os.unlink(name, dir_fd=dfd)
        finally:
            os.close(dfd)

    def rmdir(self, rel: str) -> None:
        """Remove the empty directory `rel` (OSError when not empty; NotADirectoryError for a link)."""
        dfd, name = self._parent(rel)
        try:
            if stat.S_ISLNK(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                raise NotADirectoryError(errno.ENOTDIR, "Not a directory (a symbolic link)", rel)
            os.rmdir(name, dir_fd=dfd)
        finally:
            os.close(dfd)

    def rmtree(self, rel: str) -> None:
        """Remove the directory `rel` and all in it, descending by fd and never into a symlink."""
        dfd, name = self._parent(rel)
        try:
            _rmtree_at(dfd, name)
        finally:
            os.close(dfd)

    def rename(self, src: str, dst: str) -> None:
        """rename(2) of `src` to `dst` (both strict; a symlink is moved as the link)."""
        sfd, sname = self._parent(src)
        try:
            dfd, dname = self._parent(dst)
            try:
                os.rename(sname, dname, src_dir_fd=sfd, dst_dir_fd=dfd)
            finally:
                os.close(dfd)
        finally:
            os.close(sfd)

    def listdir(self, rel: str) -> list[tuple[str, str]]:
        """(name, kind) of the entries of directory `rel`; kind is "dir", "link" or "file" (anything else)."""
        parts = split_rel(rel)
        dfd = self._dir(parts)
        try:
            fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | _O_CLOEXEC, dir_fd=dfd)
        finally:
            os.close(dfd)
        try:
            with os.scandir(fd) as it:
                return [(e.name, "link" if e.is_symlink() else "dir" if e.is_dir(follow_symlinks=False)
                         else "file") for e in it]
        finally:
            os.close(fd)

_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _O_CLOEXEC
T = TypeVar("T")


def _temp(name: str, make: Callable[[str], T]) -> tuple[str, T]:
    """A fresh temporary name next to `name`, and what `make` made there (it raises FileExistsError if taken)."""
    for _ in range(100):
        tmp = f".{name[:100]}.{secrets.token_hex(4)}.coder-tmp"
        try:
            return tmp, make(tmp)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)



def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _close_all(fds: dict[str, int | None]) -> None:
    for fd in fds.values():
        if fd is not None:
            os.close(fd)
    fds.clear()


def _rmtree_at(dfd: int, name: str) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC, dir_fd=dfd)
    except OSError as exc:
        if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
        os.unlink(name, dir_fd=dfd)  # a file or a link (swapped in): remove it, never follow it
        return
    try:
        with os.scandir(fd) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        for child, is_dir in entries:
            if is_dir:
                _rmtree_at(fd, child)
            else:
                try:
                    os.unlink(child, dir_fd=fd)
                except IsADirectoryError:
                    _rmtree_at(fd, child)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=dfd)


def real_relpath(workspace: Path | str, rel: str) -> str | None:
    """The real workspace-relative path `rel` names in `workspace` (symlinks inside followed), or None when it
    leads outside. For permission rules, which must match the file a write really lands on."""
    try:
        with WorkspaceFS(workspace) as fs:
            return fs.real_relpath(rel)
    except OSError:
        return None


def path_kind(root: Path | str, rel: str) -> str | None:
    """`WorkspaceFS.kind` of `rel` beneath `root` in one call: "file", "dir", "link", "other", or None when it
    is missing, names a place outside (`..`, absolute) or lies under a symlinked folder."""
    try:
        with WorkspaceFS(root) as fs:
            return fs.kind(rel)
    except (OSError, EscapeError):
        return None


def read_beneath(root: Path | str, rel: str, limit: int | None = None) -> bytes | None:
    """`WorkspaceFS.read_if_file` of `rel` beneath `root` in one call (None unless a regular file reached
    without a symlink)."""
    try:
        with WorkspaceFS(root) as fs:
            return fs.read_if_file(rel, limit)
    except OSError:
        return None

