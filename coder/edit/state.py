"""Per-session edit state, kept in `ctx.services["edit_state"]`.

- What the model viewed (mtime, size, sha256, and for small files the text): an edit to a file that changed
  on disk since then is refused when it relies on that view (line numbers of `insert`, tolerant matching,
  `create` over it), and the error shows what changed, instead of writing blindly over someone else's change.
- Keys are the absolute REAL paths the editor located (coder/edit/paths.py), so a file reached through a
  symlink inside the workspace has one history, and undo writes the file itself, never through a link.
- Undo history per file, several levels deep. An undo whose file changed since our edit is refused, so undo
  never discards work it did not make.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

UNDO_LEVELS = 10
UNDO_MAX_TOTAL_BYTES = 64 * 1024 * 1024
KEEP_VIEWED_TEXT_BYTES = 512 * 1024


@dataclass
class Stamp:
    sha256: str
    mtime_ns: int
    size: int
    text: str | None = None  # for a diff of what changed behind our back


@dataclass
class UndoEntry:
    before: bytes | None  # None: the file did not exist
    after_sha256: str | None  # the content our edit left (None: our edit deleted it)
    label: str
    moved_from: Path | None = None


@dataclass
class EditState:
    viewed: dict[Path, Stamp] = field(default_factory=dict)
    undo: OrderedDict[Path, list[UndoEntry]] = field(default_factory=OrderedDict)
    lock: threading.RLock = field(default_factory=threading.RLock)
    _file_locks: dict[Path, threading.Lock] = field(default_factory=dict)

    @classmethod
    def of(cls, services: dict[str, Any]) -> EditState:
        state = services.get("edit_state")
        if state is None:
            state = services.setdefault("edit_state", cls())
        return state

    def file_lock(self, path: Path) -> threading.Lock:
        """Serialises edits of one file by parallel tool calls within this process."""
        with self.lock:
            return self._file_locks.setdefault(path, threading.Lock())

    def record_view(self, path: Path, raw: bytes, text: str | None, st: os.stat_result | None = None) -> None:
        """Remember what the model saw of `path`; `st` is the stat of the very file read or written (taken from
        its fd by the caller: stating the path again by name could follow a symlink planted since)."""
        keep = text if text is not None and len(raw) <= KEEP_VIEWED_TEXT_BYTES else None
        mtime, size = (st.st_mtime_ns, st.st_size) if st is not None else (0, len(raw))
        with self.lock:
            self.viewed[path] = Stamp(hashlib.sha256(raw).hexdigest(), mtime, size, keep)

    def forget_view(self, path: Path) -> None:
        with self.lock:
            self.viewed.pop(path, None)

    def changed_since_view(self, path: Path, raw: bytes, text: str) -> str | None:
        """None when unviewed or unchanged; else a message saying what changed since the view."""
        with self.lock:
            stamp = self.viewed.get(path)
        if stamp is None or hashlib.sha256(raw).hexdigest() == stamp.sha256:
            return None
        detail = ""
        if stamp.text is not None:
            diff = list(difflib.unified_diff(stamp.text.split("\n"), text.split("\n"), "as you viewed it",
                                             "on disk now", n=1, lineterm=""))
            body = diff[2:42]
            detail = "\n" + "\n".join(body) + ("\n..." if len(diff) > 42 else "")
        return (f"{path.name} changed on disk since you viewed it (by the shell, a formatter or another "
                f"process); nothing was written. View it again and redo the edit against the current text."
                f"{detail}")

    def push_undo(self, path: Path, entry: UndoEntry) -> None:
        with self.lock:
            stack = self.undo.setdefault(path, [])
            stack.append(entry)
            del stack[:-UNDO_LEVELS]
            self.undo.move_to_end(path)
            self._trim()

    def pop_undo(self, path: Path) -> UndoEntry | None:
        with self.lock:
            stack = self.undo.get(path)
            if not stack:
                return None
            entry = stack.pop()
            if not stack:
                self.undo.pop(path, None)
            return entry

    def peek_undo(self, path: Path) -> UndoEntry | None:
        with self.lock:
            stack = self.undo.get(path)
            return stack[-1] if stack else None

    def undo_depth(self, path: Path) -> int:
        with self.lock:
            return len(self.undo.get(path, []))

    def _trim(self) -> None:
        total = sum(len(e.before or b"") for stack in self.undo.values() for e in stack)
        while total > UNDO_MAX_TOTAL_BYTES and self.undo:
            path, stack = next(iter(self.undo.items()))
            entry = stack.pop(0)
            total -= len(entry.before or b"")
            if not stack:
                self.undo.pop(path)
