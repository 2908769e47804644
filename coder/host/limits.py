"""Resource limits and cgroups for a process, set by a tiny exec wrapper instead of `preexec_fn`.

Why not `preexec_fn`: it runs Python in the forked child of a process with threads (the app, the LSP and MCP
loops, parse pumps), where any lock another thread held at the fork stays held forever; the child can hang before
it ever reaches exec (the "child that never reaches exec" the suite saw). Python's documentation warns of exactly
this. So the child execs bash at once (no Python after the fork; subprocess can then use vfork), and bash joins
the cgroups and sets the limits with its builtins before it execs the real program: same pid, same limits,
about a millisecond more. bash starts with `--noprofile --norc` and an environment from which every start-up
variable (`BASH_ENV`, exported functions) is removed, so it runs nothing but the wrapper.
"""

from __future__ import annotations

import resource
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

BASH = "/bin/bash"
#: variables a shell reads code from at start-up; never handed to the wrapper
SHELL_STARTUP_VARS = ("BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS")
#: rlimit name -> (resource, bash `ulimit` flag, bytes per unit of that flag)
_RLIMITS: dict[str, tuple[int, str, int]] = {
    "core": (resource.RLIMIT_CORE, "-c", 1024),
    "fsize": (resource.RLIMIT_FSIZE, "-f", 1024),
    "data": (resource.RLIMIT_DATA, "-d", 1024),
    "nproc": (resource.RLIMIT_NPROC, "-u", 1),
    "cpu": (resource.RLIMIT_CPU, "-t", 1),  # seconds
}


@dataclass(frozen=True)
class ProcessLimits:
    """What a process gets before its program runs: rlimits (name -> value in bytes, a count for nproc, seconds
    for cpu) and the `cgroup.procs` files it joins (coder/sandbox/limits.py makes the groups)."""

    rlimits: Mapping[str, int]
    cgroup_procs: Sequence[str] = ()


def _capped(name: str, value: int) -> int:
    """`value`, but never above the hard limit this process has (the child inherits it; raising it fails)."""
    which = _RLIMITS[name][0]
    _, hard = resource.getrlimit(which)
    return value if hard == resource.RLIM_INFINITY else min(value, hard)


def wrapper_script(limits: ProcessLimits) -> str:
    """The bash text that joins the groups, sets the limits and execs "$@". A group that cannot be joined (no
    permission) is skipped, as an unavailable cgroup is everywhere else. SIGXFSZ stays ignored across the exec
    (as it is in a Python process, whose forked children had it so)."""
    lines = [f"{{ echo $$ > {shlex.quote(path)}; }} 2>/dev/null" for path in limits.cgroup_procs]
    flags = []
    for name, value in limits.rlimits.items():
        _, flag, unit = _RLIMITS[name]
        flags += [flag, str(max(0, _capped(name, value)) // unit)]
    if flags:
        lines.append("ulimit " + " ".join(flags) + " 2>/dev/null")
    if "fsize" in limits.rlimits:
        lines.append("trap '' XFSZ")  # a write past the limit fails with "File too large", never a silent kill
    lines.append('exec "$@"')
    return "; ".join(lines)


def wrap(argv: Sequence[str], limits: ProcessLimits | None) -> list[str]:
    """`argv` (whose program is an absolute path) behind the wrapper, or unchanged without limits."""
    if limits is None:
        return list(argv)
    return [BASH, "--noprofile", "--norc", "-c", wrapper_script(limits), "coder-limits", *argv]


def wrapper_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` without what would make the wrapper's bash read code at start-up."""
    return {k: v for k, v in env.items() if k not in SHELL_STARTUP_VARS and not k.startswith("BASH_FUNC_")}
