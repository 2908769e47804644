"""One command, one fresh sandbox: for the reviewer's test runs, hooks and custom tools.

Same profile, environment and limits as the persistent shell, but no state between calls, and the whole sandbox
(its pid namespace, hence every process it started) dies when the command ends or times out. bwrap starts
through the door (coder/host), its limits set by the door's exec wrapper."""

from __future__ import annotations

import io
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from coder.host import DEVNULL, PIPE, STDOUT, Popen, TimeoutExpired, kill_group, start
from coder.sandbox import aftercheck
from coder.sandbox import limits as limits_mod
from coder.sandbox.check import require_sandbox
from coder.sandbox.env import sandbox_env
from coder.sandbox.lend import lend
from coder.sandbox.profile import SandboxConfig, bwrap_args
from coder.sandbox.tarpit import tarpit_argv
from coder.sandbox.text import clean_output


@dataclass
class SandboxRun:
    exit_code: int | None
    output: str
    timed_out: bool = False
    dropped_bytes: int = 0


def run_sandboxed(command: str, workspace: Path, config: SandboxConfig | None, timeout: float,
                  stdin: str | None = None, env: dict[str, str] | None = None,
                  lend_from: tuple[Path, str] | None = None) -> SandboxRun:
    """Run `command` with `bash -c` in a new sandbox on `workspace` (cwd = workspace).

    `config` is the `[sandbox]` section (None: the built-in one); with `enabled = false` the command runs
    unsandboxed (scrubbed environment all the same). `env` adds variables (secret-looking names are dropped).
    `lend_from` (a tree, a folder name in it): that folder is also readable, at its own path, when it is a real
    directory (coder/sandbox/lend.py). Raises SandboxUnavailable when the sandbox is on but bwrap cannot run."""
    cfg = config or SandboxConfig()
    workspace = workspace.resolve()
    home = os.environ.get("HOME") or str(Path.home())
    full_env = sandbox_env(os.environ, home, cfg.env_allow, env)
    argv = ["/bin/bash", "--noprofile", "--norc", "-c", command]
    groups = None
    limits = None
    checks: list[str] = []
    lent = None
    if cfg.enabled:
        require_sandbox()
        checks += aftercheck.before_command(workspace)
        options = bwrap_args(workspace, cfg, None, os.environ.get("PATH", ""))
        groups, limits = limits_mod.prepare(limits_mod.Limits(cfg.nproc, cfg.file_size_mb, cfg.memory_mb))
        lent = lend(*lend_from) if lend_from is not None else None  # opened last: closed below whatever happens
        argv = ["bwrap", *options, *(lent.args if lent else ()), "--", *tarpit_argv(cfg.tarpits, argv)]
    try:  # bwrap moves into the workspace itself; unsandboxed (the user's choice) bash starts there
        proc = start(argv, purpose="a sandboxed command", workdir=None if cfg.enabled else workspace, env=full_env,
                     stdin=PIPE if stdin is not None else DEVNULL, stderr=STDOUT, limits=limits,
                     pass_fds=(lent.fd,) if lent else ())
    except OSError as exc:
        if groups is not None:
            groups.close()
        return SandboxRun(None, f"could not start: {exc}")
    finally:
        if lent is not None:
            lent.close()  # bwrap holds its own copy until it has bound it
    limit = cfg.max_output_bytes
    kept = bytearray()
    dropped = [0]

    def reader() -> None:
        stdout = cast(io.BufferedReader, proc.stdout)  # binary mode: a buffered reader, never None (PIPE)
        while chunk := stdout.read1(1 << 16):
            room = max(0, limit - len(kept))
            kept.extend(chunk[:room])
            if len(chunk) > room:
                dropped[0] += len(chunk) - room
                _kill(proc)

    def writer() -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write((stdin or "").encode())
            proc.stdin.close()
        except OSError:  # the command exited without reading all of it
            pass

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    if stdin is not None:
        threading.Thread(target=writer, daemon=True).start()
    # The pipe closes when the sandbox's last process is gone (bwrap's pid 1 takes every process in the
    # namespace with it), so waiting on the reader is waiting on the whole sandbox, without polling.
    # Unsandboxed, a background job can hold the pipe after bash exits: wait on bash, then end its group.
    timed_out = False
    try:
        if cfg.enabled:
            thread.join(timeout)
            timed_out = thread.is_alive()
        else:
            try:
                proc.wait(timeout)
            except TimeoutExpired:
                timed_out = True
        _kill(proc)
        try:
            proc.wait(10)
        except TimeoutExpired:
            proc.wait()
    finally:
        if groups is not None:
            groups.close()
    thread.join(5)
    output = clean_output(bytes(kept))
    notes = checks + (aftercheck.after_command(workspace) if cfg.enabled else [])
    if timed_out:
        notes.append(f"[timed out after {timeout:g}s; the sandbox and every process in it were killed]")
    if dropped[0]:
        notes.append(f"[output passed {limit} bytes; {dropped[0]} bytes dropped and the command was stopped]")
    if notes:
        output = output + ("\n" if output and not output.endswith("\n") else "") + "\n".join(notes) + "\n"
    return SandboxRun(None if timed_out else proc.returncode, output, timed_out, dropped[0])


def _kill(proc: Popen[bytes]) -> None:
    kill_group(proc)
