"""The one door for host processes: every process coder starts outside the sandbox starts here.

git, the code index's parse workers, ripgrep, the reviewer's linter, language servers and MCP servers (through
the libraries that spawn them, coder/host/bridges.py), host hooks, the batch's fork server and the bubblewrap
launch of the sandbox itself. Each gets the same rules, applied once (coder/host/spawn.py):

- a working directory outside the workspace (NEUTRAL_CWD), unless the program's job is a workspace folder (git
  on its work tree, ripgrep listing it): then it is named, and the program is still found outside it;
- the program found on the host PATH without relative entries and without entries inside a workspace (an
  activated `.venv/bin` in the project would otherwise lend the sandbox any program name);
- our own Python entry points as `python -I` with this process's import path (coder/host/python.py), never the
  working directory's;
- the scrubbed environment (allow-list, no secret-named variable: coder/host/env.py) unless the caller built one
  on purpose; stdin closed unless the caller speaks a protocol on it;
- a timeout for everything that is waited for, its own process group (the timeout and `stop_all` kill all of it);
- no FIFO, socket or device in a workspace given to a program by name;
- resource limits by an exec wrapper, never `preexec_fn` (coder/host/limits.py), and a pty without Python in the
  forked child (coder/host/pty.py).

tests/host/test_host_door.py fails when any module of coder outside this package spawns directly, and at run time
coder/host/audit.py refuses every start that does not come through one of this package's functions, whoever asks
for it (coder's code or a library it calls). The inventory of host processes (why each is on the host, what it
may read) is docs/decisions/29-host-safety.md; the library starts and their bridges, 43-host-safety-round-3.md.

This package imports only coder.base, so every layer can use it.
"""

from __future__ import annotations

from coder.host.env import looks_secret, scrubbed_env
from coder.host.limits import ProcessLimits
from coder.host.python import forkserver_context, python_module
from coder.host.spawn import (
    DEVNULL,
    NEUTRAL_CWD,
    PIPE,
    STDOUT,
    CompletedProcess,
    HostSpawnError,
    Launch,
    Popen,
    Text,
    TimeoutExpired,
    available,
    exec_replace,
    kill_group,
    prepare,
    register_workspace,
    run,
    safe_env,
    start,
    stop_all,
    which,
)

__all__ = [
    "DEVNULL", "NEUTRAL_CWD", "PIPE", "STDOUT", "CompletedProcess", "HostSpawnError", "Launch", "Popen",
    "ProcessLimits", "Text", "TimeoutExpired", "available", "exec_replace", "forkserver_context", "kill_group",
    "looks_secret", "prepare", "python_module", "register_workspace", "run", "safe_env", "scrubbed_env", "start",
    "stop_all", "which",
]
