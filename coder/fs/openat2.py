"""openat2(2) through ctypes: path resolution the kernel confines beneath a directory fd (Linux 5.6+).

Python's os module has no openat2, and it is the one race-free way to say "resolve this path, but never above
this directory and never through a symlink" in a single call. Where it is missing (older kernels, a seccomp
filter that answers ENOSYS or EPERM, other architectures or systems) `openat2` returns None and the caller walks
the path itself (coder/fs/beneath.py)."""

from __future__ import annotations

import ctypes
import errno
import os

RESOLVE_NO_XDEV, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH = 0x01, 0x02, 0x04, 0x08
# os.uname rather than the `platform` module: 8 ms less to import in every parse worker
_SYSNAME, _MACHINE = (os.uname().sysname, os.uname().machine) if hasattr(os, "uname") else ("", "")
#: the syscall number (the same on both architectures that use the generic syscall table for it)
SYS_OPENAT2 = {"x86_64": 437, "amd64": 437, "aarch64": 437, "arm64": 437}.get(_MACHINE.lower())

#: False once the kernel said it has no openat2 (checked lazily, then remembered for the process)
available = SYS_OPENAT2 is not None and _SYSNAME == "Linux"
_syscall = None
#: the open_how structs by (flags, resolve), made once: the code index opens thousands of files in a row
_hows: dict[tuple[int, int], tuple[object, int]] = {}


class _How(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def openat2(dirfd: int, path: str, flags: int, resolve: int) -> int | None:
    """A new fd (O_CLOEXEC added), or None when openat2 is not available; OSError for a failed resolution
    (EXDEV: it would leave the directory, ELOOP: a symlink where RESOLVE_NO_SYMLINKS forbids one, ...)."""
    global available, _syscall
    if not available:
        return None
    if _syscall is None:
        _syscall = ctypes.CDLL(None, use_errno=True).syscall
    how = _hows.get((flags, resolve))
    if how is None:
        struct = _How(flags | getattr(os, "O_CLOEXEC", 0), 0, resolve)
        how = _hows[(flags, resolve)] = (ctypes.byref(struct), ctypes.sizeof(struct))
    encoded = os.fsencode(path)
    for _ in range(8):
        fd = _syscall(SYS_OPENAT2, dirfd, encoded, *how)
        if fd >= 0:
            return int(fd)
        err = ctypes.get_errno()
        if err in (errno.ENOSYS, errno.EPERM, errno.EINVAL, errno.E2BIG):
            available = False
            return None
        if err not in (errno.EAGAIN, errno.EINTR):  # EAGAIN: a concurrent rename; the kernel asks to retry
            raise OSError(err, os.strerror(err), path)
    return None
