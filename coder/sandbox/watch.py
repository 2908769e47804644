"""Which files of a workspace changed since the last look, told by the kernel (inotify), not found by statting all.

The after-command check (coder/sandbox/leftovers.py) must notice a byte-compiled file rewritten in place deep in a
big `.venv`, after every command. Statting every such file costs about a microsecond each on a quiet machine and
several under load (20,000 `.pyc` files: 150 ms here), twice a command; a directory's ctime does not move when a
file in it is rewritten. inotify watches every folder once and queues what happens in it, whoever writes through
whichever mount (the sandbox's bind of the workspace is the same inode): a look that finds nothing costs one
`read` that returns EAGAIN.

Bounded and honest about it: the kernel queue holds `max_queued_events` (16,384 by default), and the user's
watches are limited (`max_user_watches`); when the queue overflowed or a folder could not be watched, `drain`
says so and the caller walks the tree instead (`Walk`), as it does when inotify is missing. `.git` folders are not
watched (coder/sandbox/aftercheck.py looks at them), nor `node_modules` beyond its `.bin`. A folder's watch hears
of writes through the names in it only, so each file the caller cares about can be watched itself (`watch_file`:
its inode, whichever hard link is written through). Written with ctypes
(three libc calls) rather than a package: inotify_simple and watchdog wrap the same calls, and watchdog brings
threads and a polling fallback this does not want.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct
import weakref
from collections.abc import Iterator

IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_EXCL_UNLINK, IN_ISDIR = 0x1000000, 0x2000000, 0x4000000, 0x40000000
MASK = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)
#: on one file of a kind: a write or a link count change through any of its names (a hard link in a folder that
#: is not watched: inotify tells a folder's watch only of writes through the names in it)
FILE_MASK = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW
EVENT = struct.Struct("iIII")
#: folders never watched nor walked (a `.git` is the git check's; `node_modules` only for its `.bin`)
SKIP = frozenset({".git"})
#: at most this many folders are watched or walked: a tree of a million folders degrades to walks, never hangs
FOLDER_LIMIT = 100_000
#: at most this many files are watched one by one (the rest are statted at every look): the user's watches
#: (`max_user_watches`) are shared with the folders and every other program
FILE_LIMIT = 50_000


def _descend(parent: str, name: str) -> bool:
    """Whether the walk enters `parent/name` (a folder)."""
    if name in SKIP:
        return False
    return os.path.basename(parent) != "node_modules" or name == ".bin"


class Walk:
    """Every file (anything but a folder) under `root`, links not followed, by the rules of `_descend`; at most
    FOLDER_LIMIT folders. After iterating, `truncated` says whether folders were left unread (the caller must not
    take the answer as complete)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.truncated = False

    def __iter__(self) -> Iterator[str]:
        todo, seen = [self.root], 0
        while todo and seen < FOLDER_LIMIT:
            folder = todo.pop()
            seen += 1
            try:
                with os.scandir(folder) as it:
                    entries = list(it)
            except OSError:
                continue
            for entry in entries:
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if not is_dir:
                    yield entry.path
                elif _descend(folder, entry.name):
                    todo.append(entry.path)
        self.truncated = bool(todo)


class TreeWatch:
    """inotify on every folder of one tree. `drain()` returns the paths touched since the last drain."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.fd = -1
        self.paths: dict[int, str] = {}  # watch descriptor -> folder
        self.files: dict[int, set[str]] = {}  # watch descriptor -> the names a watched file is known by
        self.broken = ""  # why the watch cannot be trusted any more ("" while it can)
        try:
            self._libc = ctypes.CDLL(None, use_errno=True)
            self.fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        except (OSError, AttributeError) as exc:
            self.broken = f"inotify is not available ({exc})"
            return
        if self.fd < 0:
            self.broken = f"inotify is not available ({os.strerror(ctypes.get_errno())})"
            return
        self._closer = weakref.finalize(self, os.close, self.fd)  # an instance dropped unclosed frees its fd

    def start(self) -> None:
        """Watch every folder of the tree (call before the baseline walk, so nothing falls between them)."""
        if not self.broken:
            self._add_tree(self.root)

    def _add(self, folder: str) -> bool:
        if len(self.paths) >= FOLDER_LIMIT:
            self.broken = f"more than {FOLDER_LIMIT} folders"
            return False
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(folder), MASK)
        if wd < 0:
            code = ctypes.get_errno()
            if code in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):  # gone or swapped meanwhile: nothing to watch
                return False
            self.broken = f"a folder could not be watched ({os.strerror(code)})"
            return False
        self.paths[wd] = folder
        return True

    def watch_file(self, path: str) -> bool:
        """Watch the file at `path` itself (its inode, not its folder): a write through any name is `path` touched.
        False when it is not watched (the caller stats it at every look instead)."""
        if self.broken or len(self.files) >= FILE_LIMIT:
            return False
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), FILE_MASK)
        if wd < 0:
            return False
        self.files.setdefault(wd, set()).add(path)
        return True

    def _add_tree(self, top: str) -> None:
        todo = [top]
        while todo and not self.broken:
            folder = todo.pop()
            if not self._add(folder):
                continue
            try:
                with os.scandir(folder) as it:
                    todo += [e.path for e in it if e.is_dir(follow_symlinks=False) and _descend(folder, e.name)]
            except OSError:
                continue

    def drain(self) -> set[str]:
        """The files and folders touched since the last drain (a folder created or moved in: every file in it).
        Check `broken` afterwards: when set, the answer is incomplete and the caller must walk."""
        touched: set[str] = set()
        while not self.broken:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            except OSError as exc:
                self.broken = f"reading inotify failed ({exc})"
                break
            offset = 0
            while offset < len(data):
                wd, mask, _, size = EVENT.unpack_from(data, offset)
                name = os.fsdecode(data[offset + EVENT.size:offset + EVENT.size + size].rstrip(b"\0"))
                offset += EVENT.size + size
                self._event(wd, mask, name, touched)
        return touched

    def _event(self, wd: int, mask: int, name: str, touched: set[str]) -> None:
        if mask & IN_Q_OVERFLOW:
            self.broken = "too many changes at once (the kernel's queue overflowed)"
            return
        names = self.files.get(wd)
        if names is not None:  # a watched file, through whichever name (gone: IN_IGNORED, the watch is dropped)
            touched.update(self.files.pop(wd) if mask & IN_IGNORED else names)
            return
        folder = self.paths.get(wd)
        if mask & IN_IGNORED:
            self.paths.pop(wd, None)
            return
        if folder is None or not name:
            return
        path = os.path.join(folder, name)
        touched.add(path)
        if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO) and _descend(folder, name):
            self._add_tree(path)  # watched first, then walked: a file made meanwhile is in one or the other
            walk = Walk(path)
            touched.update(walk)
            if walk.truncated:
                self.broken = f"more than {FOLDER_LIMIT} folders"
        elif mask & IN_ISDIR and mask & IN_MOVED_FROM:
            gone = path + "/"
            for key, value in list(self.paths.items()):
                if value == path or value.startswith(gone):
                    self.paths.pop(key)  # its new place (if in the tree) comes with IN_MOVED_TO

    def close(self) -> None:
        if self.fd >= 0:
            self._closer()
            self.fd = -1
        self.broken = self.broken or "closed"


def file_key(path: str) -> tuple[int, ...] | None:
    """What changes when a file is written, replaced, moved in or has its mode changed (None: gone, or a folder)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
