"""Resolving workspace-relative paths beneath an O_PATH handle on the workspace (the half of coder/fs/beneath.py
that finds things; the operations that act on them are there, and its docstring gives the symlink semantics).

Two resolutions, for two purposes:
- strict (`_dir`, `_parent`): an fd on a directory reached with no symlink followed at all, by one `openat2(2)`
  with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS where the kernel has it (coder/fs/openat2.py),
  else by a walk opening each component with `O_NOFOLLOW | O_DIRECTORY` relative to the previous one;
- following (`resolve_real`): the real path a name stands for, following only the links that stay inside.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from pathlib import Path, PurePosixPath

from coder.base.errors import CoderError
from coder.fs import openat2

_O_PATH = getattr(os, "O_PATH", 0) or os.O_RDONLY
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC
STRICT = openat2.RESOLVE_BENEATH | openat2.RESOLVE_NO_SYMLINKS | openat2.RESOLVE_NO_MAGICLINKS
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


class Beneath:
    """A handle on one workspace directory and the resolution of paths beneath it (see WorkspaceFS)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(os.path.realpath(root))
        self.fd: int | None = os.open(self.root, _O_PATH | os.O_DIRECTORY | _O_CLOEXEC)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> Beneath:
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
            fd = openat2.openat2(self._root(), "/".join(parts), _DIR_FLAGS, STRICT)
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
            mode = os.stat(parts[i], dir_fd=fd, follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode) or stat.S_ISDIR(mode):
                # a folder now, but the open just met something else: it was swapped (for a link, the attack)
                # between the open and this look, so it is refused as the link it was, never "missing"
                raise SymlinkInPath(f"{here} is a symbolic link (or was swapped for one while coder opened it); "
                                    "coder does not read, write or delete through symlinked folders here",
                                    here) from None
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", here) from None

    def _parent(self, rel: str, create: bool = False) -> tuple[int, str]:
        parts = split_rel(rel)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "the workspace itself", ".")
        return self._dir(parts[:-1], create), parts[-1]

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
        return list(PurePosixPath(os.path.relpath(norm, root)).parts) if norm != root else []


class _Raced(Exception):
    """The tree changed under a resolution step; start again."""
