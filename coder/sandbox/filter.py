"""A confined filter: untrusted bytes in on stdin, a result out on stdout, in a sandbox that holds nothing else.

For parsers coder runs on bytes it did not make (images from a workspace, a web page or an MCP server: issue 43,
coder/models/images.py). A decoder bug there must not reach the host, so the program runs in bubblewrap with a
view smaller than the shell's: the system's folders and the folders the program needs (its interpreter, its
libraries) read-only, no workspace, no home, an empty /tmp, no network, its own pid namespace, an empty
environment, and rlimits on memory, CPU time and file size (set by the door's exec wrapper, coder/host/limits.py).

Where bubblewrap does not work on the machine, the filter runs as a plain host process with the same limits, an
empty environment and `/` as its folder: a session there runs with `--no-sandbox` (the user's choice), and the
shell's commands are no more confined than that.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from coder.host import PIPE, ProcessLimits, TimeoutExpired, kill_group, start
from coder.sandbox.check import check_sandbox
from coder.sandbox.profile import system_binds

#: the system's folders a program needs to run, bound read-only (not /etc: only the loader's cache)
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache", "/nix")
ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


class FilterFailed(Exception):
    """The filter failed: it exited with an error (its stderr is the message), ran out of time or memory."""


@dataclass(frozen=True)
class FilterLimits:
    memory_mb: int = 1024
    cpu_s: int = 30
    wall_s: float = 60.0
    output_mb: int = 64


def confined(argv: Sequence[str], readable: Sequence[str]) -> list[str]:
    """`argv` in a bubblewrap sandbox that binds the system and `readable` (folders or files) read-only."""
    args = ["bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try"]
    if os.geteuid() == 0:  # as in coder/sandbox/profile.py: no capability left to remount the binds
        args += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    args += system_binds(SYSTEM)
    seen: set[str] = set()
    for path in readable:
        real = os.path.realpath(path)
        if real not in seen and os.path.exists(real):
            seen.add(real)
            args += ["--ro-bind", real, real]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir", "/", "--clearenv"]
    for name, value in ENV.items():
        args += ["--setenv", name, value]
    return [*args, "--", *argv]


def run_filter(argv: Sequence[str], data: bytes, *, purpose: str, readable: Sequence[str],
               limits: FilterLimits = FilterLimits()) -> bytes:
    """Run `argv` (its program an absolute path, found in `readable` or the system) on `data`; its stdout.
    Raises FilterFailed with the program's own message (the last line of its stderr) or what stopped it."""
    rlimits = ProcessLimits({"data": limits.memory_mb * 1024 * 1024, "cpu": limits.cpu_s,
                             "fsize": limits.output_mb * 1024 * 1024, "core": 0})
    command = confined(argv, readable) if check_sandbox().ok else list(argv)
    proc = start(command, purpose=purpose, env=dict(ENV), stdin=PIPE, limits=rlimits)
    try:
        out, err = proc.communicate(data, timeout=limits.wall_s)
    except TimeoutExpired:
        kill_group(proc)
        proc.communicate()
        raise FilterFailed(f"took longer than {limits.wall_s:g} s") from None
    except BaseException:
        kill_group(proc)
        proc.wait()
        raise
    code = proc.returncode
    if code != 0:
        # a signal: the process's own, or its child's as bwrap reports it (128 + the signal)
        sig = -code if code < 0 else code - 128 if code > 128 else 0
        if sig:
            raise FilterFailed(f"stopped by signal {sig}: over its CPU or memory limit")
        lines = err.decode(errors="replace").strip().splitlines()
        raise FilterFailed(lines[-1][:300] if lines else f"exited {code}")
    return out
