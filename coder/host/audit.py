"""The door enforced at run time: a process start that does not come through coder/host fails while coder runs.

`install` adds an audit hook (PEP 578, `sys.addaudithook`) on every event by which CPython 3.11-3.13 starts a
process: `subprocess.Popen`, `os.exec` (execv/execve and the exec*p* built on them), `os.posix_spawn` (and
posix_spawnp), `os.spawn` (Windows; on POSIX os.spawn* fork), `os.system`, `os.fork` and `os.forkpty` (pty.fork,
multiprocessing's "fork"). `os.popen` and asyncio's subprocesses raise `subprocess.Popen`. One path raises no
event: multiprocessing starts its fork server, its resource tracker and "spawn" children with
`_posixsubprocess.fork_exec` directly; `install` puts a checked wrapper in its place (subprocess calls it through
the same attribute, after its own event).

A start is allowed when one of the door's own functions is on the calling stack (`door`: `spawn.popen`,
`exec_replace`, the bridges that hand a prepared launch to the MCP SDK and pygls, the fork server's start): the
mark is the frame of that function itself, so it cannot be set by anything else, a thread or task created while
it runs does not inherit it, and a library called from coder cannot forge it. Any other start is refused with a
`HostSpawnError` (a PermissionError: a library that looks for an optional program, as Pillow does for
Ghostscript, takes it as "not there") naming the frame that asked for it outside the standard library and the
code of coder that led there.

Who is held to it: in a coder process (every entry point calls `install`: coder/cli/main.py for the app, `--plain`,
`coder run`, `coder acp` and the batch's agents; the parse workers; the batch's tasks on Ray) every start. In the
test suite (tests/conftest.py: `install(suite_roots=...)`) the starts of coder's code: a start whose innermost
owned frame is the suite's own (a test running git, tmux, pexpect) is not coder's and stays allowed, one reached
from coder's code (directly or through a library it called) is refused; a start on a thread with neither (a
library's own thread) takes the owner of the code that started that thread.

An audit hook cannot be removed, and it sees only Python: native code that forks or execs by itself (a C
extension, ctypes) is not seen. `CODER_HOST_DOOR=report` records each start that would be refused (as a JSON line
to the file `CODER_HOST_DOOR_REPORT` names, else stderr) and lets it happen: how the inventory of library starts
was taken (docs/decisions/43-host-safety-round-3.md).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Any, TypeVar

#: the audit events that start a process (CPython 3.11-3.13, the audit events table of the Python documentation)
EVENTS = frozenset({"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system", "os.fork",
                    "os.forkpty"})
#: the call with no audit event, wrapped instead
FORK_EXEC = "_posixsubprocess.fork_exec"

#: this module's file (its own frames are never the caller)
THIS_FILE = __file__
#: coder's package folder, as written and as resolved (a frame's file name is the path it was imported by)
CODER_DIRS = tuple({os.path.dirname(os.path.dirname(path)) + os.sep
                    for path in (THIS_FILE, os.path.realpath(THIS_FILE))})
STDLIB_DIRS = tuple({os.path.dirname(path) + os.sep for path in (os.__file__, os.path.realpath(os.__file__))})
_THIRD_PARTY = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")

F = TypeVar("F", bound=Callable[..., Any])


class HostSpawnError(PermissionError):
    """The door refused to start a process: what it would have been given breaks one of its rules, or the start
    did not come through the door at all. A PermissionError (an OSError): a library that looks for an optional
    program takes it as "not allowed here" and goes on without it (Pillow's Ghostscript, `webbrowser`'s
    `xdg-settings`, `platform`'s `uname -p`)."""


#: the door's functions: the id of their module's globals -> the line ranges of their code. A frame is told by its
#: `f_globals` and `f_lineno`: reading a frame's `f_code` raises an audit event of its own, on every frame walked
_DOOR: dict[int, list[tuple[int, int]]] = {}


def door(function: F) -> F:
    """Mark one of coder/host's own functions as the door: a process started while its frame is on the stack is
    coder/host's. Only coder/host uses it (tests/host/test_host_door.py)."""
    code = function.__code__
    lines = [code.co_firstlineno, *(line for _, _, line in code.co_lines() if line is not None)]
    _DOOR.setdefault(id(function.__globals__), []).append((min(lines), max(lines)))
    return function


class _State:
    installed = False
    report = False
    suite_roots: tuple[str, ...] = ()
    lock = threading.Lock()
    refused: list[str] = []  # noqa: RUF012 - one record for the process (tests read it)


def installed() -> bool:
    return _State.installed


def refused() -> list[str]:
    """What was refused in this process so far (newest last), one line each."""
    with _State.lock:
        return list(_State.refused)


def install(suite_roots: Iterable[str] = ()) -> None:
    """Hold this process to the door from now on (idempotent: a later call changes nothing, so an entry point run
    in-process by the test suite keeps the suite's rule). `suite_roots`: folders of the test suite, whose own
    starts are allowed (only tests/conftest.py passes them)."""
    with _State.lock:
        if _State.installed:
            return
        _State.installed = True
        _State.report = os.environ.get("CODER_HOST_DOOR", "") == "report"
        _State.suite_roots = tuple(os.path.realpath(root) + os.sep for root in suite_roots)
    if _State.suite_roots:
        _own_threads()
    _wrap_fork_exec()
    sys.addaudithook(_hook)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event in EVENTS:
        check(event, args)


def _wrap_fork_exec() -> None:
    try:
        import _posixsubprocess  # the C module subprocess and multiprocessing start processes with
    except ImportError:  # not POSIX
        return
    original = _posixsubprocess.fork_exec

    def fork_exec(*args: Any, **kwargs: Any) -> Any:
        check(FORK_EXEC, args)
        return original(*args, **kwargs)

    _posixsubprocess.fork_exec = fork_exec


# ------------------------------------------------------------------------------------------------ the verdict


def _classify(filename: str) -> str:
    if filename == THIS_FILE:
        return "stdlib"  # the hook itself: never an owner, never the caller
    if filename.startswith(CODER_DIRS):
        return "coder"
    if _State.suite_roots and filename.startswith(_State.suite_roots):
        return "suite"
    if filename.startswith("<frozen") or (filename.startswith(STDLIB_DIRS) and not any(
            part in filename for part in _THIRD_PARTY)):
        return "stdlib"
    return "library" if any(part in filename for part in _THIRD_PARTY) else "other"


_KINDS: dict[str, str] = {}


def _kind(filename: str) -> str:
    """Whose code a frame runs: "coder", "suite", "library" (third-party), "stdlib" or "other" (remembered: a
    process runs a few thousand files at most)."""
    kind = _KINDS.get(filename)
    if kind is None:
        kind = _KINDS[filename] = _classify(filename)
    return kind


def _frames(start: FrameType | None) -> Iterator[FrameType]:
    frame = start
    while frame is not None:
        yield frame
        frame = frame.f_back


def _through_door(frame: FrameType | None) -> bool:
    """Whether one of the door's own functions is on the stack: the one test an allowed start pays."""
    door_modules = _DOOR
    while frame is not None:
        ranges = door_modules.get(id(frame.f_globals))
        if ranges is not None:
            line = frame.f_lineno
            if line is not None and any(first <= line <= last for first, last in ranges):
                return True
        frame = frame.f_back
    return False


def _file(frame: FrameType) -> str:
    """The file of the module a frame runs (its `__file__`: not `f_code`, whose reading is an audit event)."""
    name = frame.f_globals.get("__file__")
    return name if isinstance(name, str) else "<no file>"


def _owner(frame: FrameType | None) -> str | None:
    """The kind of the innermost frame that is coder's or the suite's, else None."""
    for f in _frames(frame):
        kind = _kind(_file(f))
        if kind in ("coder", "suite"):
            return kind
    return None


def check(event: str, args: tuple[Any, ...]) -> None:
    """Refuse (raise HostSpawnError) a start that is coder's and did not come through the door."""
    frame = sys._getframe(1)
    if _through_door(frame):
        return
    owner = _owner(frame)
    if owner is None:
        owner = getattr(threading.current_thread(), "_coder_door_owner", None) if _State.suite_roots else "coder"
    if owner != "coder":
        return
    where, through = _callers(frame)
    what = _what(event, args)
    message = (f"{what}: refused, a process started outside coder/host by {where}"
               f"{f', reached from {through}' if through and through != where else ''}; every process coder "
               "starts on the host goes through coder/host (docs/host-safety.md)")
    with _State.lock:
        _State.refused.append(message)
        del _State.refused[:-50]
    if _State.report:
        _report(event, what, where, through)
        return
    raise HostSpawnError(message)


def _callers(frame: FrameType | None) -> tuple[str, str]:
    """The first frame outside the standard library and this module (who asked for the start), and the innermost
    frame of coder's own code (what led there), as `path:line (function)`."""
    where = through = ""
    for f in _frames(frame):
        kind = _kind(_file(f))
        if not where and kind != "stdlib":
            where = _describe(f)
        if kind == "coder":
            through = _describe(f)
            break
    return where or "the standard library", through


def _describe(frame: FrameType) -> str:
    name = frame.f_code.co_filename
    for root in (*CODER_DIRS, *_State.suite_roots):
        if name.startswith(root):
            name = os.path.basename(root.rstrip(os.sep)) + os.sep + name[len(root):]
            break
    else:
        for part in _THIRD_PARTY:
            if part in name:
                name = name.split(part, 1)[1]
                break
    return f"{name}:{frame.f_lineno} ({frame.f_code.co_name})"


def _what(event: str, args: tuple[Any, ...]) -> str:
    """The command line of a start, as far as its event says (at most 200 characters)."""
    argv: Any = None
    if event in ("subprocess.Popen", "os.exec", "os.posix_spawn"):
        argv = args[1] if len(args) > 1 else None
    elif event == "os.spawn":
        argv = args[2] if len(args) > 2 else None
    elif event == "os.system":
        argv = args[0] if args else None
    elif event == FORK_EXEC:
        argv = args[0] if args else None
    if isinstance(argv, bytes):
        argv = argv.decode(errors="replace")
    if isinstance(argv, (list, tuple)):
        argv = " ".join(os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in argv)
    text = f"{event} {argv}" if argv else event
    return text if len(text) <= 200 else text[:199] + "…"


def _report(event: str, what: str, where: str, through: str) -> None:
    line = json.dumps({"event": event, "what": what, "where": where, "through": through, "pid": os.getpid(),
                       "argv": sys.argv[:4], "time": time.time()})
    target = os.environ.get("CODER_HOST_DOOR_REPORT")
    if not target:
        print(f"coder.host report: {line}", file=sys.stderr)
        return
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------------------------ threads


def _own_threads() -> None:
    """In the test suite: a thread remembers whose code started it (the innermost "coder" or "suite" frame then,
    else its starter thread's owner), for the starts it makes with neither on its stack (a library's event loop or
    worker). A coder process needs none of this: there, every start is coder's."""
    start = threading.Thread.start
    if getattr(start, "_coder_door", False):
        return

    def owned_start(self: threading.Thread) -> None:
        caller = sys._getframe(1)
        owner = "coder" if _through_door(caller) else _owner(caller)
        self._coder_door_owner = owner or getattr(  # type: ignore[attr-defined]
            threading.current_thread(), "_coder_door_owner", None)
        start(self)

    owned_start._coder_door = True  # type: ignore[attr-defined]
    threading.Thread.start = owned_start  # type: ignore[method-assign]
