"""coder's own process never imports code the sandbox could have written since it started.

The host process holds the API key and imports some modules late (Pillow when the first picture comes in, the web
readers at the first web_fetch, the MCP SDK, YAML). When the running Python's libraries lie inside a workspace (coder
installed into the project's `.venv`, `python -m coder` run from the project's root, coder's own checkout opened as
the workspace), the sandbox can write those files: a line appended to `PIL/PngImagePlugin.py` would run in this
process, with the key, the first time a picture is viewed (decision 43, the red team's finding F2).

Binding those folders read-only in the sandbox would stop the model from `pip install` into the project's own
environment, a daily task, so the rule is kept here instead, where the import happens: once a workspace holds one of
this process's import roots (`sys.prefix`, `sys.exec_prefix`, a `sys.path` entry, the working directory that `-m`
puts first), `guard` adds an import finder in front of all others that refuses a module whose file (source or
extension module) changed after this process started (`st_ctime`, which no file operation can set back), with an
ImportError naming it and saying to start coder again. Bytecode is the other way in (a `__pycache__/*.pyc` whose
header matches an untouched source is loaded without reading the source): the same finder loads a module under a
guarded root with its bytecode, read and written, in coder's cache folder, which the sandbox cannot see. Only
those: a library outside the workspace keeps its own `__pycache__` (moving every module's bytecode, as
`sys.pycache_prefix` would, made each start compile the SDKs it imports late from source, seconds of CPU, where
PYTHONDONTWRITEBYTECODE is set or the cache folder is new).

What this cannot see: modules imported before the guard (at start-up, before any sandboxed command ran), the next
start of coder (which imports what the environment then holds, as any program would; the after-command check reports
new `.pth`, `sitecustomize.py` and extension modules), and code that reads files and runs them by other means.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

from coder.base.paths import cache_dir

#: when this module was first imported: coder's entry point imports it before any sandbox can run
_SINCE = time.time()
_LOCK = threading.Lock()
_REFUSED: list[str] = []


class ChangedSinceStart(ImportError):
    """A module's file changed after coder started, in a folder a sandbox can write."""


def import_roots() -> list[str]:
    """The folders this process imports from (real paths): its prefixes, every sys.path entry (the empty entry is
    the working directory)."""
    roots = {os.path.realpath(sys.prefix), os.path.realpath(sys.exec_prefix)}
    roots |= {os.path.realpath(entry or os.getcwd()) for entry in sys.path if isinstance(entry, str)}
    return sorted(roots)


class _Guard(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: finds a module as the path finder would and refuses it when its file lies under a
    guarded root and changed since start; otherwise it returns None and the usual finders load it."""

    def __init__(self) -> None:
        self.roots: tuple[str, ...] = ()
        #: where the guarded modules' bytecode is kept (None: nowhere, they are compiled at each import)
        self.bytecode: str | None = None

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        origin = spec.origin if spec is not None and spec.has_location else None
        if not origin:
            return None
        real = os.path.realpath(origin)
        if not inside(real, self.roots):
            return None
        if _changed(real):
            message = (f"coder will not import {fullname} from {real}: the file changed after coder started, "
                       "in a folder its sandbox can write (start coder again to use it)")
            with _LOCK:
                _REFUSED.append(message)
            raise ChangedSinceStart(message, name=fullname, path=real)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _PrivateBytecode(fullname, origin, self.bytecode)
            return spec
        return None


class _PrivateBytecode(importlib.machinery.SourceFileLoader):
    """A module under a guarded root: its bytecode is read from and written to `folder` (coder's cache, out of
    the sandbox's sight) instead of beside the source, where the sandbox could plant it; with no folder, it is
    compiled from the source every time."""

    def __init__(self, fullname: str, path: str, folder: str | None) -> None:
        super().__init__(fullname, path)
        self.folder = folder

    def _moved(self, path: str) -> str | None:
        """Where the bytecode that would lie at `path` is kept; `path` itself when it is not this module's."""
        if path != importlib.util.cache_from_source(self.path):
            return path
        if self.folder is None:
            return None
        return os.path.join(self.folder, os.path.dirname(os.path.dirname(os.path.abspath(path))).lstrip(os.sep),
                            os.path.basename(path))

    def get_data(self, path: str) -> bytes:
        moved = self._moved(path)
        if moved is None:
            raise OSError(f"no bytecode is read beside {self.path}")  # the source is compiled instead
        return super().get_data(moved)

    def set_data(self, path: str, data: bytes,  # pyright: ignore[reportIncompatibleMethodOverride]
                 *, _mode: int = 0o666) -> None:  # (importlib passes bytes; typeshed says any buffer)
        moved = self._moved(path)
        if moved is not None:
            super().set_data(moved, data, _mode=_mode)


def inside(path: str, roots: Sequence[str]) -> bool:
    """Whether `path` (absolute) is one of `roots` or below one (by text: callers give real paths)."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _changed(path: str) -> bool:
    try:
        return os.stat(path).st_ctime > _SINCE
    except OSError:
        return False


_GUARD = _Guard()


def guarded_roots() -> tuple[str, ...]:
    return _GUARD.roots


def refused() -> list[str]:
    """Every import refused so far, oldest first (a library that catches ImportError hides the reason: its caller
    can name it)."""
    with _LOCK:
        return list(_REFUSED)


def guard(workspace: str) -> None:
    """Refuse, from now on, the import of a module changed since start under each of this process's import roots
    that lies inside `workspace` (a real path); nothing is installed when none does (the usual case)."""
    held = [root for root in import_roots() if inside(root, [workspace])]
    if not held:
        return
    with _LOCK:
        _GUARD.roots = tuple(sorted({*_GUARD.roots, *held}))
        if _GUARD not in sys.meta_path:  # the first workspace guarded chooses the bytecode folder
            sys.meta_path.insert(0, _GUARD)
            _GUARD.bytecode = str((cache_dir() / "pycache").resolve())
        if _GUARD.bytecode is not None and inside(_GUARD.bytecode, [workspace]):
            _GUARD.bytecode = None  # a sandbox could write it: the guarded modules are compiled at each import
