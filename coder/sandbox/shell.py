"""One persistent bash per session, inside bubblewrap, driven through a pty (started by the door, coder/host/pty.py).

How a call works, and why (the shells of SWE-ReX and OpenHands failed in each of these ways):
- The command text never travels through the terminal. The host writes it to a file in a folder the sandbox
  sees read-only (`/run/coder/cmd`), wrapped in `{ ... }`, and sends one short line: source that file with stdin
  from /dev/null, then print an end marker. The pty's 4 KiB line limit, heredocs and multi-line scripts stop
  mattering, a command that reads stdin sees end-of-file instead of eating the next command, and because bash
  parses a `{ }` group completely before running any of it, a syntax error (an unclosed quote) runs nothing and
  cannot wedge the shell: the same guarantee as `bash -n`, without a second process per call.
- The end marker carries a per-shell nonce, a sequence number, the exit status and `$PWD`: the exit code is
  read, never guessed from output, and a stale marker cannot be mistaken for the current one (the marker
  protocol over the pty: coder/sandbox/shell_wire.py).
- Timeouts (hard, and optional no-output) and cancellation interrupt from the host: SIGINT to the shell and
  every process under it, a sync marker, then SIGKILL for what is left, and if the shell itself is gone or
  wedged, a new shell in the last known working directory with a note that the state was lost.
- Output is capped while it is read (a `yes` is stopped at `max_output_bytes`, not buffered forever).
- A running command can be detached (`detach`, the user's Ctrl+B): `run` returns its output so far and the
  command goes on in this shell and sandbox; `follow` then reads the rest to its marker (coder/tools/bash/jobs.py).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import struct
import tempfile
import termios
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base.errors import ShellError
from coder.host.pty import spawn_pty
from coder.sandbox import aftercheck, procs
from coder.sandbox import limits as limits_mod
from coder.sandbox.env import sandbox_env
from coder.sandbox.findings import AfterHooks
from coder.sandbox.held import Held as _Resources
from coder.sandbox.network import NetworkLink, proxy_env
from coder.sandbox.profile import CONTROL_DIR, SandboxConfig, bwrap_args
from coder.sandbox.protected import Protected, protected_paths
from coder.sandbox.shell_wire import Wire
from coder.sandbox.text import clean_output

STARTUP_TIMEOUT = 20.0
#: guards `exec` so a model's `exec bash` cannot replace the session's shell (and lose the marker protocol)
_INIT = (
    "set +o history +H; unset HISTFILE MAIL MAILPATH PROMPT_COMMAND; PS1=''; PS2=''; PS4='+ ';"
    " exec() { if [ $# -gt 0 ]; then"
    " echo \"coder: 'exec $1' would replace the session's shell; run it without exec\" >&2; return 126;"
    " fi; builtin exec; };"
)


@dataclass
class ShellResult:
    output: str
    exit_code: int | None
    timed_out: bool = False
    #: bytes dropped because the output passed max_output_bytes
    dropped_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    restarted: bool = False
    cwd: str | None = None
    duration: float = 0.0
    #: the command still runs: the user sent it to the background (`follow` reads the rest)
    detached: bool = False


class PersistentShell:
    """A bash process that lives across calls. One call at a time: a lock serialises concurrent callers."""

    def __init__(self, workspace: Path, config: SandboxConfig, control_dir: Path | None = None,
                 sandboxed: bool = True, cwd: Path | None = None, host_env: dict[str, str] | None = None,
                 network: NetworkLink | None = None, after_hooks: AfterHooks | None = None) -> None:
        """`control_dir` is where command files go; by default a private folder in /dev/shm (tmpfs: a
        rewrite of a file on ext4 can cost milliseconds, on tmpfs microseconds), removed by `close()`.
        `network` links the sandbox to coder's domain-filtering proxy (coder/sandbox/network.py); sandboxed
        only: unsandboxed, the shell has the host's network anyway. `after_hooks`: the session's question and
        event sink for what a command leaves behind (coder/sandbox/findings.py; None: nobody to ask)."""
        self.workspace = workspace.resolve()
        self.config = config
        self._own_control = control_dir is None
        self.control_dir = control_dir or Path(".")
        self._cmd_fd: int | None = None
        self._finalizer: weakref.finalize | None = None
        self.sandboxed = sandboxed
        self._cwd = str((cwd or workspace).resolve())  # where the first shell starts
        self.host_env = dict(host_env if host_env is not None else os.environ)
        self.network = network if sandboxed else None
        self.after_hooks = after_hooks
        self.child: Any = None
        self.size = (50, 200)  # (rows, columns) of its terminal: the user's (`terminal_size`)
        self.cgroups: limits_mod.Cgroups | None = None
        self.wire: Wire | None = None  # the marker protocol over its pty (coder/sandbox/shell_wire.py)
        self._lock = threading.Lock()
        #: the protected paths the running sandbox was started with (its read-only binds)
        self.protected: Protected | None = None

    # ---- lifecycle -------------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.child is not None and self.child.isalive()

    @property
    def cwd(self) -> str:
        """The working directory the last end marker reported (a new shell starts there)."""
        return self.wire.cwd if self.wire is not None else self._cwd

    @property
    def shell_pid(self) -> int | None:
        """Host pid of the bash process (under bwrap and its pid-1 helper when sandboxed)."""
        if self.child is None:
            return None
        if not self.sandboxed:
            return self.child.pid
        pid = self.child.pid
        for _ in range(2):  # bwrap -> bwrap (pid 1 inside) -> bash
            nxt = procs.child_of(pid)
            if nxt is None:
                return None
            pid = nxt
        return pid

    def _argv(self) -> list[str]:
        bash = ["/bin/bash", "--noprofile", "--norc", "--noediting", "-i"]
        if not self.sandboxed:
            return bash
        self.protected = protected_paths(self.workspace)
        extra = self.network.bwrap_args() if self.network is not None else []
        return ["bwrap", *bwrap_args(self.workspace, self.config, self.control_dir, self.host_env.get("PATH", ""),
                                   self.protected, extra), "--", *bash]

    def start(self) -> None:
        res = _Resources()
        # released by close(), or when the shell is garbage-collected or the process exits without close()
        self._finalizer = weakref.finalize(self, res.release)
        try:
            if self._own_control:
                shm = Path("/dev/shm")
                base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
                self.control_dir = res.control_dir = Path(tempfile.mkdtemp(prefix="coder-shell-", dir=base))
            self.control_dir.mkdir(parents=True, exist_ok=True)
            self._cmd_fd = res.fd = os.open(self.control_dir / "cmd", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            home = self.host_env.get("HOME") or str(Path.home())
            env = sandbox_env(self.host_env, home, self.config.env_allow)
            env.update(PS1="", PS2="")
            if self.network is not None:
                env.update(proxy_env())
            lim = limits_mod.Limits(self.config.nproc, self.config.file_size_mb, self.config.memory_mb)
            self.cgroups, limits = limits_mod.prepare(lim) if self.sandboxed else (None, None)
            res.cgroups = self.cgroups
            argv = self._argv()
            try:  # bwrap moves into the workspace itself; unsandboxed, bash starts there
                self.size = terminal_size()
                self.child = res.child = spawn_pty(argv, purpose="the shell", env=env, dimensions=self.size,
                                                   workdir=None if self.sandboxed else self.workspace, limits=limits)
            except OSError as exc:
                raise ShellError(f"could not start the shell: {exc}") from exc
            attrs = termios.tcgetattr(self.child.child_fd)
            attrs[1] &= ~termios.ONLCR  # keep "\n" as "\n" in output
            termios.tcsetattr(self.child.child_fd, termios.TCSANOW, attrs)
            self.wire = Wire(self.child.child_fd, self.config.max_output_bytes, self.cwd)  # where the last one was
            cd = f" cd {_quote(self.cwd)} 2>/dev/null || cd {_quote(str(self.workspace))};"
            relay = self.network.start_line() if self.network is not None else ""
            raw, _, status, _ = self.wire.exchange(_INIT + relay + cd, STARTUP_TIMEOUT, sourced=False)
            if status != "done":
                text = clean_output(raw)[-2000:]
                raise ShellError(f"the sandboxed shell did not start: {text.strip() or 'no output'}")
            if relay and b"coder-relay-failed" in raw:
                raise ShellError("the sandbox's network relay did not start: " + clean_output(raw)[-500:].strip())
        except BaseException:
            self.close()
            raise

    def close(self, check: bool = True) -> None:
        """End the shell and everything it started; remove its cgroups and command folder. Idempotent. `check`:
        the after-command check once more (off for a restart: the next command's check follows)."""
        finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer()
            if self.sandboxed and check:
                aftercheck.at_close(self.workspace)
        self.child = None
        self.cgroups = None
        self._cmd_fd = None

    def _write_command(self, command: str) -> None:
        """Rewrite the command file in place (no open/truncate/close per call)."""
        data = ("{\n" + command + "\n}\n").encode("utf-8", errors="surrogateescape")
        assert self._cmd_fd is not None
        os.pwrite(self._cmd_fd, data, 0)
        os.ftruncate(self._cmd_fd, len(data))

    def _command_file(self) -> str:
        """Where the shell finds the command file: the read-only bind inside bwrap, the host path without."""
        return f"{CONTROL_DIR}/cmd" if self.sandboxed else _quote(str(self.control_dir.resolve() / "cmd"))

    def _exit_status(self) -> int | None:
        """The exit status of a shell that ended (bwrap passes bash's status through)."""
        try:
            self.child.close(force=True)
        except Exception:  # noqa: BLE001
            return None
        if self.child.exitstatus is not None:
            return self.child.exitstatus
        return 128 + self.child.signalstatus if self.child.signalstatus is not None else None

    def restart(self) -> None:
        self.close(check=False)
        self.start()

    # ---- one call --------------------------------------------------------------------------------------

    def run(self, command: str, timeout: float, idle_timeout: float = 0.0,
            cancel: threading.Event | None = None, on_output: Callable[[str], None] | None = None,
            detach: threading.Event | None = None) -> ShellResult:
        """Run `command`; return its cleaned output, exit code and notes. Never raises for the command's sake.
        `detach` set while it runs: return at once, the command running on (`detached`; see `follow`)."""
        with self._lock:
            began = time.monotonic()
            notes: list[str] = []
            restarted = False
            if not self.alive:
                if self.child is not None:
                    notes.append("the previous shell had exited; started a new one (variables and functions "
                                 "were lost, the working directory was kept)")
                    restarted = True
                self.close(check=False)
                self.start()
            elif new := self._new_protected():
                shown = ", ".join(new[:3]) + (f" and {len(new) - 3} more" if len(new) > 3 else "")
                notes.append(f"the shell was restarted so that protected paths that appeared since it started "
                             f"({shown}: git repositories and instruction files) are read-only in the sandbox; "
                             "variables, functions and background jobs were lost, the working directory was kept")
                restarted = True
                self.close(check=False)
                self.start()
            if self.sandboxed:  # what the user's own git would run later (coder/sandbox/aftercheck.py)
                notes += aftercheck.before_command(self.workspace, self.after_hooks)
            self._fit_terminal()
            self._write_command(command)
            raw, code, status, dropped = self._wire().exchange(
                f". {self._command_file()} </dev/null", timeout, idle_timeout=idle_timeout, cancel=cancel,
                on_output=on_output, detach=detach)
            if status == "detach":
                return ShellResult(clean_output(raw), None, False, dropped, notes, restarted, self.cwd,
                                   time.monotonic() - began, detached=True)
            timed_out = status in ("timeout", "idle")
            if status == "eof":
                code = self._exit_status()
                notes.append("the shell exited (`exit`, `exec` or a killed shell); a new shell was started in "
                              f"{self.cwd}: variables, functions and background jobs were lost")
                restarted = True
                self.close(check=False)
                self.start()
            elif status != "done":
                reason = {"timeout": f"timed out after {timeout:g}s",
                          "idle": f"produced no output for {idle_timeout:g}s",
                          "cancel": "was interrupted by the user",
                          "overflow": f"printed more than {self.config.max_output_bytes} bytes"}[status]
                more, code2, how = self._interrupt()
                raw += more.rstrip(b"\r\n") + (b"\n" if more.strip() else b"")
                code = code2 if code is None else code
                notes.append(f"the command {reason}; {how}")
                restarted = how.startswith("the shell did not recover")
            out = clean_output(raw)
            if self.sandboxed:
                notes += aftercheck.after_command(self.workspace, self.after_hooks)
            return ShellResult(out, code, timed_out, dropped, notes, restarted, self.cwd,
                               time.monotonic() - began)

    def _new_protected(self) -> list[str]:
        """A sandbox's binds are fixed when it starts, and this one lives across calls: so before each command
        the protected set is looked up again (a cached walk of the tree, see coder/sandbox/nested.py), and a set
        that grew (a repository cloned or `git init`-ed, an AGENTS.md written) restarts the shell with the new
        binds. Returns the new paths, workspace-relative (none: no restart)."""
        if not self.sandboxed or self.protected is None:
            return []
        now = protected_paths(self.workspace)
        if self.protected.covers(now):
            return []
        old = set(self.protected.pinned) | set(self.protected.read_only)
        return [p.relative_to(self.workspace).as_posix() for p in now.pinned + now.read_only if p not in old]

    def follow(self, on_output: Callable[[str], None], stop: threading.Event) -> tuple[int | None, str]:
        """After a detached `run`: hand the rest of that command's output to `on_output` (nothing is kept here,
        and no size or time limit stops it) until its marker. Returns (exit code, status: done / cancel / eof)."""
        wire = self._wire()
        _, code, status, _ = wire.read_until(wire.seq, float("inf"), cancel=stop, on_output=on_output, keep=False)
        return code, status

    def _wire(self) -> Wire:
        assert self.wire is not None, "the shell was never started"
        return self.wire

    def _fit_terminal(self) -> None:
        """The shell's terminal as wide as the user's, now: a command formats its output for it (`ls`, a test
        runner's rules; issue 32: they were laid out for 200 columns whatever the user had)."""
        size = terminal_size()
        if size != self.size and self.child is not None:  # the pty's size: bash and its command get SIGWINCH
            fcntl.ioctl(self.child.child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
            self.size = size

    def _interrupt(self) -> tuple[bytes, int | None, str]:
        """Stop the running command and bring the shell back to its prompt. Returns (more output, exit code,
        what happened, for the note)."""
        bash = self.shell_pid
        if bash is not None and self.alive:
            # bash first, then what it runs: bash breaks out of a loop when it got SIGINT while its foreground
            # child died of one. The other order let the child die and be reaped before bash's own SIGINT came,
            # and the loop went on (half the stops of `for ...; do sleep 1; done` under load), then SIGKILL and a
            # restarted shell, 4.5 s later (issue 47's trial)
            children = procs.descendants(bash)
            procs.signal_all([bash], signal.SIGINT)
            procs.signal_all(children, signal.SIGINT)
            wire = self._wire()
            seq = wire.send("", sourced=False)
            raw, code, status, _ = wire.read_until(seq, 1.5)
            if status == "done":
                return raw, code, "it was interrupted (SIGINT); the shell kept its state"
            procs.kill_tree(bash)
            raw2, code, status, _ = wire.read_until(seq, 3.0)
            if status == "done":
                return raw + raw2, code, ("it was killed (SIGKILL) with its child processes, including background "
                                          "jobs; the shell kept its state")
        self.close(check=False)
        self.start()
        return b"", None, (f"the shell did not recover and was restarted in {self.cwd}: variables, functions and "
                           "background jobs were lost")


#: columns a frontend prints before each line of a running command's output (`--plain`'s `    3s │ `): the
#: command's terminal is that much narrower than coder's, so its lines fit (issue 47: they wrapped)
_RESERVED = [0]


def reserve_columns(columns: int) -> None:
    """The frontend shows a command's lines after `columns` of its own (called once, by `--plain`)."""
    _RESERVED[0] = max(columns, 0)


def terminal_size() -> tuple[int, int]:
    """(rows, columns) of coder's own terminal (COLUMNS and LINES when set), less the columns a frontend reserved,
    or 50 x 200 without one (`coder run` in a pipe, batch): what a command in the sandbox is told its terminal is."""
    columns, lines = shutil.get_terminal_size((200, 50))
    return max(lines, 10), max(columns - _RESERVED[0], 40)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
