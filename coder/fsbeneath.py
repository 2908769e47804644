"""Host-side file operations beneath the workspace, immune to symlinks the sandbox plants.

The sandboxed shell has the workspace read-write, so anything there can become a symlink at any moment, even in
a loop while coder works. Checking a path (`realpath`, `is_symlink`) and then opening it by name leaves a window
in which a directory becomes a link to the host. So every host-side read, write, rename and delete of a
workspace path goes through a `WorkspaceFS`: an `O_PATH` handle on the workspace directory, and every operation
relative to it, component by component, never following a symlink:

- `openat2(2)` with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS where the kernel has it
  (Linux 5.6+; coder/openat2.py), one call per directory;
- otherwise (older kernels, seccomp filters answering ENOSYS/EPERM, other systems) a walk that opens each
  component with `O_NOFOLLOW | O_DIRECTORY` relative to the previous one.

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
from collections import deque
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import BinaryIO, TypeVar

from coder import openat2
from coder.errors import CoderError

_O_PATH = getattr(os, "O_PATH", 0) or os.O_RDONLY
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC
_STRICT = openat2.RESOLVE_BENEATH | openat2.RESOLVE_NO_SYMLINKS | openat2.RESOLVE_NO_MAGICLINKS
MAX_LINKS = 40  # as the kernel's ELOOP limit


class EscapeError(CoderError):
    """The path leads outside the workspace (`..`, an absolute path, a symlink that leaves)."""


class SymlinkInPath(EscapeError):
    """A strict operation met a symlink in the path (`at` is the workspace-relative path of the link)."""

    def __init__(self, message: str, at: str = "") -> None:
        super().__init__(message)
        self.at = at


def split_rel(rel: str) -> list[str]:
    """The components of a workspace-relative path; EscapeError for an absolute one or one with `..`."""
    text = str(rel).replace("\\", "/")
    if "\x00" in text:
        raise EscapeError(f"{rel!r} contains a NUL byte")
    if text.startswith("/"):
        raise EscapeError(f"{rel} is absolute; a workspace-relative path is needed")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise EscapeError(f"{rel} contains '..'; a normalized workspace-relative path is needed")
    return parts


class WorkspaceFS:
    """A handle on one workspace directory; every method takes a workspace-relative path."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(os.path.realpath(root))
        self.fd: int | None = os.open(self.root, _O_PATH | os.O_DIRECTORY | _O_CLOEXEC)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> WorkspaceFS:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass

    # -- strict resolution ----------------------------------------------------------------------------------
    def _root(self) -> int:
        if self.fd is None:
            raise ValueError("WorkspaceFS is closed")
        return self.fd

    def _dir(self, parts: list[str], create: bool = False) -> int:
        """An O_PATH fd on the directory `parts` (created when missing and `create`); no symlink followed."""
        if not parts:
            return os.dup(self._root())
        try:
            fd = openat2.openat2(self._root(), "/".join(parts), _DIR_FLAGS, _STRICT)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR) and not (
                    create and exc.errno == errno.ENOENT):
                raise
            fd = None  # the walk creates what is missing, or names the offending component
        if fd is not None:
            return fd
        return self._walk(parts, create)

    def _walk(self, parts: list[str], create: bool) -> int:
        fd = os.dup(self._root())
        try:
            for i, name in enumerate(parts):
                try:
                    nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(name, 0o777, dir_fd=fd)
                    except FileExistsError:
                        pass
                    nxt = self._open_dir_component(fd, parts, i)
                except OSError as exc:
                    if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                        raise
                    nxt = self._open_dir_component(fd, parts, i)
                os.close(fd)
                fd = nxt
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _open_dir_component(self, fd: int, parts: list[str], i: int) -> int:
        try:
            return os.open(parts[i], _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            here = "/".join(parts[: i + 1])
            if stat.S_ISLNK(os.stat(parts[i], dir_fd=fd, follow_symlinks=False).st_mode):
                raise SymlinkInPath(f"{here} is a symbolic link; coder does not read, write or delete "
                                    "through symlinked folders here", here) from None
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", here) from None

    def _parent(self, rel: str, create: bool = False) -> tuple[int, str]:
        parts = split_rel(rel)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "the workspace itself", ".")
        return self._dir(parts[:-1], create), parts[-1]

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

    def open(self, rel: str, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
        """os.open beneath the workspace with O_NOFOLLOW on the final component (SymlinkInPath for a link)."""
        fd, name = self._parent(rel)
        try:
            return os.open(name, flags | os.O_NOFOLLOW | os.O_NOCTTY | _O_CLOEXEC, mode, dir_fd=fd)
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
        with os.fdopen(fd, "rb") as handle:
            return (handle.read() if limit is None else handle.read(limit)), st

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

    # -- following links that stay inside --------------------------------------------------------------------
    def resolve_real(self, rel: str) -> str:
        """The real workspace-relative path of `rel` ("" for the root): symlinks that stay inside are followed,
        missing trailing components kept as named. EscapeError (naming the link) when it leads outside."""
        for _ in range(5):
            try:
                return self._resolve_once(rel)
            except _Raced:
                continue
        raise EscapeError(f"{rel} keeps changing while it is resolved (a process swaps it); refused")

    def real_relpath(self, rel: str) -> str | None:
        """`resolve_real`, or None when the path leaves the workspace: for matching permission rules on the
        file a path really names (`src/x -> ../.env` is `.env`)."""
        try:
            return self.resolve_real(rel)
        except EscapeError:
            return None

    def _resolve_once(self, rel: str) -> str:
        text = str(rel).replace("\\", "/")
        if text.startswith("/") or "\x00" in text:
            raise EscapeError(f"{rel!r} is not a workspace-relative path")
        todo = deque(text.split("/"))  # `..` allowed: it is resolved here, beneath the root
        real: list[str] = []
        fds = [os.dup(self._root())]
        links = 0
        try:
            while todo:
                name = todo.popleft()
                if name in ("", "."):
                    continue
                if name == "..":
                    if not real:
                        raise EscapeError(f"{rel} leads outside the workspace {self.root} (through a symlink)")
                    real.pop()
                    os.close(fds.pop())
                    continue
                try:
                    st = os.stat(name, dir_fd=fds[-1], follow_symlinks=False)
                except (FileNotFoundError, NotADirectoryError):
                    rest = [name, *todo]
                    if ".." in rest:  # the kernel would stop at the missing folder as well
                        raise FileNotFoundError(errno.ENOENT, "No such file or directory", rel) from None
                    return "/".join(real + [p for p in rest if p not in ("", ".")])
                if stat.S_ISLNK(st.st_mode):
                    links += 1
                    where = "/".join(real + [name])
                    if links > MAX_LINKS:
                        raise EscapeError(f"{rel}: too many levels of symbolic links (at {where})")
                    try:
                        target = os.readlink(name, dir_fd=fds[-1])
                    except OSError:
                        raise _Raced() from None
                    todo.extendleft(reversed(self._link_parts(target, where, real, fds)))
                    continue
                if todo:
                    if not stat.S_ISDIR(st.st_mode):
                        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", "/".join(real + [name]))
                    try:
                        fds.append(os.open(name, _DIR_FLAGS, dir_fd=fds[-1]))
                    except OSError:
                        raise _Raced() from None
                real.append(name)
            return "/".join(real)
        finally:
            for fd in fds:
                os.close(fd)

    def _link_parts(self, target: str, where: str, real: list[str], fds: list[int]) -> list[str]:
        """The components a link's target adds; an absolute target inside the workspace restarts at the root."""
        if not target.startswith("/"):
            return target.split("/")
        norm = os.path.normpath(target)
        root = str(self.root)
        if norm != root and not norm.startswith(root.rstrip("/") + "/"):
            raise EscapeError(f"{where} is a symbolic link to {target}, outside the workspace {root}")
        del real[:]
        while len(fds) > 1:
            os.close(fds.pop())
        return PurePosixPath(os.path.relpath(norm, root)).parts if norm != root else []


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


class _Raced(Exception):
    """The tree changed under a resolution step; start again."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


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
