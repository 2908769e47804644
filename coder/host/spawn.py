"""Starting a host process: the rules, applied once (the package docstring says why each one is there).

`prepare` turns a request into a `Launch` (absolute program, working directory, environment); `run` waits for
the process with a timeout, `start` hands back a running one, `exec_replace` replaces a forked child. Every
process gets its own session (process group), so a timeout or `stop_all` ends it with everything it started.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import stat
import subprocess
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn

from coder.host.audit import HostSpawnError, door
from coder.host.env import scrubbed_env
from coder.host.imports import guard as guard_imports
from coder.host.imports import inside
from coder.host.limits import ProcessLimits, wrap, wrapper_env

TimeoutExpired = subprocess.TimeoutExpired
CompletedProcess = subprocess.CompletedProcess
Popen = subprocess.Popen
PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL
STDOUT = subprocess.STDOUT

#: where a host process runs unless its job is a workspace folder: a folder no sandbox can write, that holds no
#: project configuration (npx, uv, pyenv and ruff all read their config from the working directory)
NEUTRAL_CWD = "/"
#: file types a host process may be given by name from a workspace (a FIFO blocks its reader forever, a device
#: is not the repository's to name)
OPERAND_KINDS = (stat.S_ISREG, stat.S_ISDIR)


class Text(str):
    """An argument that is text for the program (a search pattern, a message), never a path it opens: the operand
    check leaves it alone."""


_WORKSPACES: dict[str, None] = {}
_WORKSPACES_LOCK = threading.Lock()


def register_workspace(path: Path | str) -> None:
    """Tell the door about a workspace this process serves (its sandbox can write it): programs are never found
    on PATH entries inside it, our Python never imports from it (a child: coder/host/python.py; this process: a
    module changed since start, coder/host/imports.py), and no FIFO or device in it is given by name."""
    real = os.path.realpath(path)
    with _WORKSPACES_LOCK:
        _WORKSPACES[real] = None
    guard_imports(real)


def workspaces() -> tuple[str, ...]:
    with _WORKSPACES_LOCK:
        return tuple(_WORKSPACES)


_SEARCH_PATHS: dict[tuple[str, tuple[str, ...]], str] = {}
_FOUND: dict[tuple[str, str], str] = {}


def search_path(path_var: str | None = None, avoid: Sequence[str] = ()) -> str:
    """The host PATH without relative entries (resolved against whatever the working directory is) and without
    entries inside a workspace or `avoid` (a sandboxed command could have put any program there, an activated
    `.venv/bin` included)."""
    roots = (*workspaces(), *avoid)
    path_var = os.environ.get("PATH", os.defpath) if path_var is None else path_var
    key = (path_var, roots)
    cut = _SEARCH_PATHS.get(key)
    if cut is None:  # remembered: the real path of every entry is a few lstats each, on every host process
        kept = [entry for entry in path_var.split(os.pathsep) if entry and os.path.isabs(entry)
                and not (roots and inside(os.path.realpath(entry), roots))]
        cut = os.pathsep.join(kept)
        if len(_SEARCH_PATHS) > 64:
            _SEARCH_PATHS.clear()
        _SEARCH_PATHS[key] = cut
    return cut


def which(program: str, avoid: Sequence[str] = ()) -> str:
    """The absolute path of `program`: as given when absolute, else found on `search_path` (remembered per search
    path; a program removed since fails at its start, as any missing program does). Raises FileNotFoundError (an
    OSError) when there is none, HostSpawnError for a relative path with a slash."""
    if "/" in program:
        if not os.path.isabs(program):
            raise HostSpawnError(f"{program}: a host program is named by an absolute path, never relative to a "
                                 "working directory")
        return program
    path = search_path(avoid=avoid)
    found = _FOUND.get((program, path))
    if found is None:
        found = shutil.which(program, path=path)
        if found is None:
            raise FileNotFoundError(f"{program} is not installed or not on PATH")
        if len(_FOUND) > 256:
            _FOUND.clear()
        _FOUND[(program, path)] = found
    return found


def available(program: str) -> bool:
    """Whether `which` finds `program` (outside every workspace)."""
    try:
        which(program)
    except OSError:
        return False
    return True


def safe_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: the scrubbed host environment) with PATH cut to `search_path`: a host process that looks
    programs up itself (a hook's shell, git's helpers) finds none in a workspace."""
    out = dict(scrubbed_env() if env is None else env)
    out["PATH"] = search_path(out.get("PATH")) or os.defpath
    return out


def _candidates(arg: str) -> list[str]:
    """What in one argument could be a path a program opens: the argument, or the value of `--opt=value`."""
    if arg.startswith("-"):
        return [arg.split("=", 1)[1]] if "=" in arg else []
    return [arg]


def check_operands(args: Sequence[str], workdir: str | None) -> None:
    """Refuse an argument that names a FIFO, socket or device inside a workspace (or `workdir`): the program
    would open it by name and block, or read what is not the repository's. Links are followed, as the program
    would follow them. A swap after this check is the timeout's business (and the reviewer reads no workspace
    path at all: coder/review/context.py exports what its linter reads)."""
    roots = (*workspaces(), *([workdir] if workdir else []))
    if not roots:
        return
    for arg in args:
        if isinstance(arg, Text):
            continue
        for candidate in _candidates(arg):
            if not candidate or "\n" in candidate or len(candidate) > 4096:
                continue
            if not os.path.isabs(candidate):
                if workdir is None:
                    continue
                candidate = os.path.join(workdir, candidate)
            try:  # one stat for the usual case (missing, a file, a folder); the real path only for the rest
                if any(kind(os.stat(candidate).st_mode) for kind in OPERAND_KINDS):
                    continue
                real = os.path.realpath(candidate)
            except (OSError, ValueError):
                continue
            if inside(real, roots):
                raise HostSpawnError(f"{arg!r} names a FIFO, socket or device in the workspace ({real}); a host "
                                     "program is never given one to open")


@dataclass(frozen=True)
class Launch:
    """One host process with the door's rules applied: what `run`/`start` use, and what a library that spawns
    for itself (the MCP SDK, pygls) is handed (coder/host/bridges.py)."""

    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str]
    purpose: str


def prepare(argv: Sequence[str | os.PathLike[str]], *, purpose: str, workdir: Path | str | None = None,
            env: Mapping[str, str] | None = None, extra_env: Mapping[str, str] | None = None,
            limits: ProcessLimits | None = None) -> Launch:
    """Apply the rules to one command line.

    - `workdir`: None runs the process in NEUTRAL_CWD. A program whose job is a workspace folder (git on a work
      tree, ripgrep listing it) names it; the program is then still found outside it.
    - `env`: None gives the scrubbed host environment (`safe_env`); a caller that built one on purpose (the
      sandbox's, a batch agent's) passes it whole; `extra_env` is added on top of either.
    - `limits`: rlimits and cgroups, set by an exec wrapper before the program runs (coder/host/limits.py).
    """
    words = [a if isinstance(a, Text) else os.fspath(a) for a in argv]
    if not words:
        raise HostSpawnError("an empty command line")
    cwd = NEUTRAL_CWD if workdir is None else os.path.realpath(workdir)
    avoid = [cwd] if workdir is not None else []
    full_env = safe_env() if env is None else dict(env)
    if extra_env:
        full_env.update(extra_env)
    try:
        program = which(words[0], avoid)
        check_operands(words[1:], cwd if workdir is not None else None)
    except HostSpawnError as exc:
        raise HostSpawnError(f"{purpose}: {exc}") from None
    if limits is not None:
        full_env = wrapper_env(full_env)
    return Launch(tuple(wrap([program, *words[1:]], limits)), cwd, full_env, purpose)


_LIVE: weakref.WeakSet[subprocess.Popen[Any]] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


@door
def popen(launch: Launch, *, stdin: int | IO[Any] | None = DEVNULL, stdout: int | IO[Any] | None = PIPE,
          stderr: int | IO[Any] | None = PIPE, text: bool = False, errors: str | None = None,
          new_session: bool = True, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[Any]:
    """Start a prepared launch, registered (weakly) so that `stop_all` reaches it. `new_session=False` only
    for a caller that makes the session itself (the pty's `setsid --ctty`, coder/host/pty.py)."""
    proc = subprocess.Popen(list(launch.argv), cwd=launch.cwd, env=launch.env, stdin=stdin, stdout=stdout,
                            stderr=stderr, text=text, errors=errors, close_fds=True, pass_fds=pass_fds,
                            start_new_session=new_session)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    return proc


def forget(proc: subprocess.Popen[Any]) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(proc)


def kill_group(proc: subprocess.Popen[Any], sig: int = signal.SIGKILL) -> None:
    """Signal the process's group (its session: everything it started), or the process when that is gone."""
    try:
        os.killpg(proc.pid, sig)
    except OSError:
        try:
            proc.send_signal(sig)
        except OSError:
            pass


def stop_all() -> int:
    """Kill every host process of the door that is still running (a SIGTERM to coder must not wait for a linter
    or a git that hangs). Returns how many there were."""
    with _LIVE_LOCK:
        live = [p for p in _LIVE if p.poll() is None]
    for proc in live:
        kill_group(proc)
    return len(live)


def start(argv: Sequence[str | os.PathLike[str]], *, purpose: str, workdir: Path | str | None = None,
          env: Mapping[str, str] | None = None, extra_env: Mapping[str, str] | None = None,
          stdin: int | IO[Any] | None = DEVNULL, stdout: int | IO[Any] | None = PIPE,
          stderr: int | IO[Any] | None = PIPE, text: bool = False,
          limits: ProcessLimits | None = None, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[Any]:
    """A running host process (the caller owns its lifetime: workers, ripgrep streams, sandboxes). stdin is closed
    unless the caller speaks a protocol on it (PIPE). `pass_fds`: descriptors the program inherits (every other
    one is closed), for a sandbox that binds a folder by descriptor (coder/sandbox/lend.py)."""
    launch = prepare(argv, purpose=purpose, workdir=workdir, env=env, extra_env=extra_env, limits=limits)
    return popen(launch, stdin=stdin, stdout=stdout, stderr=stderr, text=text, pass_fds=pass_fds)


def run(argv: Sequence[str | os.PathLike[str]], *, purpose: str, timeout: float,
        workdir: Path | str | None = None, env: Mapping[str, str] | None = None,
        extra_env: Mapping[str, str] | None = None, input: bytes | str | None = None, text: bool = False,
        errors: str | None = None, stderr: int | None = PIPE) -> subprocess.CompletedProcess[Any]:
    """Run to the end and capture its output, as `subprocess.run(capture_output=True)` does, but: the rules of
    `prepare`, stdin closed unless `input` is given, and after `timeout` seconds the whole process group is
    killed and TimeoutExpired raised (with what was read). Never raises for the program's own failure."""
    launch = prepare(argv, purpose=purpose, workdir=workdir, env=env, extra_env=extra_env)
    proc = popen(launch, stdin=PIPE if input is not None else DEVNULL, stderr=stderr, text=text, errors=errors)
    try:
        out, err = _communicate(proc, input, timeout)
    except TimeoutExpired:
        kill_group(proc)
        try:
            out, err = _communicate(proc, None, PIPE_GRACE)
        except TimeoutExpired as exc:
            out, err = _take(proc, exc)
        raise TimeoutExpired(launch.argv, timeout, output=out, stderr=err) from None
    except BaseException:
        kill_group(proc)
        proc.wait()
        raise
    finally:
        forget(proc)
    return subprocess.CompletedProcess(list(launch.argv), proc.returncode, out, err)


#: how long a program's output pipes may stay open after it has ended: a process outside its group can hold them (one
#: forked elsewhere in this process as they were made inherits them), and would hold `run` until it ends too
PIPE_GRACE = 2.0


def _communicate(proc: subprocess.Popen[Any], input: bytes | str | None, timeout: float) -> tuple[Any, Any]:
    """`proc.communicate(input, timeout)`, except that once the program has ended its pipes get PIPE_GRACE seconds
    to close, and then what it wrote is all there is (TimeoutExpired only when the program itself outlives
    `timeout`)."""
    deadline = time.monotonic() + timeout
    ended: float | None = None
    while True:
        now = time.monotonic()
        step = min(1.0, deadline - now, (ended + PIPE_GRACE - now) if ended is not None else 1.0)
        try:
            return proc.communicate(input, max(step, 0.01))
        except TimeoutExpired as exc:
            input = None  # written once; a retry goes on where the first call stopped
            now = time.monotonic()
            if ended is None and proc.poll() is not None:
                ended = now
            if ended is not None and now >= ended + PIPE_GRACE:
                return _take(proc, exc)
            if now >= deadline:
                raise


def _take(proc: subprocess.Popen[Any], exc: TimeoutExpired) -> tuple[Any, Any]:
    """What a timed-out `communicate` had read, its pipes closed; decoded as `communicate` would in text mode."""
    taken = []
    for stream, data in ((proc.stdout, exc.output), (proc.stderr, exc.stderr)):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
        if isinstance(data, bytes) and stream is not None and isinstance(stream, io.TextIOWrapper):
            data = data.decode(stream.encoding, stream.errors or "strict").replace("\r\n", "\n").replace("\r", "\n")
        taken.append(data if stream is not None else None)
    with contextlib.suppress(TimeoutExpired):
        proc.wait(PIPE_GRACE)
    return taken[0], taken[1]


@door
def exec_replace(argv: Sequence[str], env: Mapping[str, str]) -> NoReturn:
    """Replace the current (forked) process with `argv`, its program found outside the working directory and any
    workspace (a batch agent's child has already moved into the instance's checkout)."""
    program = which(argv[0], avoid=[os.getcwd()])
    os.execve(program, [program, *argv[1:]], dict(env))
