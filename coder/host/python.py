"""Our own Python entry points on the host: `python -I` with an explicit path, never the working directory's.

`python -m coder.codeintel.worker` in a workspace puts the workspace first on sys.path, so a repository holding a
`coder/` package (or a `pickle.py`, a `tree_sitter/`) is imported instead of ours, on the host. `-I` (isolated
mode) drops the working directory, the script's folder, every PYTHON* variable and the user's site-packages;
the child then gets exactly this process's import path (coder's own package root first), minus anything
relative or inside a workspace, set by a short bootstrap before the module runs.

multiprocessing's fork server (the batch's warm agents) is started by multiprocessing itself, as
`<executable> -c "from multiprocessing.forkserver import main ..."` in our working directory; its `-c` would
import from that directory first. `forkserver_context` points the executable at a generated launcher that
changes to NEUTRAL_CWD and adds `-I`.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from coder.host.audit import door
from coder.host.spawn import NEUTRAL_CWD, inside, workspaces

#: the folder holding the `coder` package this process runs
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
#: run by `python -I -c`: argv[1] the import path (os.pathsep-joined), argv[2] the module, the rest its arguments
BOOTSTRAP = (f"import sys, runpy; p = [x for x in sys.argv[1].split({os.pathsep!r}) if x]; "
             "sys.path[:] = p + [x for x in sys.path if x not in p]; sys.argv = sys.argv[2:]; "
             "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)")


def import_path(extra_avoid: tuple[str, ...] = ()) -> list[str]:
    """This process's sys.path as a child may have it: coder's package root first, then every absolute entry that
    is not the working directory and not inside a workspace (coder's own root stays even when it is one: that
    is the code already running here)."""
    avoid = (*workspaces(), *extra_avoid)
    cwd = os.getcwd()
    out = [PACKAGE_ROOT]
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or os.pathsep in entry or entry in out:
            continue
        real = os.path.realpath(entry)
        if real == cwd or (avoid and inside(real, avoid)):
            continue
        out.append(entry)
    return out


def python_module(module: str, *args: str) -> list[str]:
    """The command line that runs `module` as `python -m` would, with this interpreter, isolated."""
    return [sys.executable, "-I", "-c", BOOTSTRAP, os.pathsep.join(import_path()), module, *args]


_LAUNCHER: str | None = None


def isolated_launcher() -> str:
    """A script that runs this interpreter with `-I` in NEUTRAL_CWD, for libraries that only take an executable
    (multiprocessing). Written once per process into a private temporary folder (mode 0700), removed at exit."""
    global _LAUNCHER
    if _LAUNCHER is None:
        folder = tempfile.mkdtemp(prefix="coder-python-")
        atexit.register(shutil.rmtree, folder, True)
        path = os.path.join(folder, "python")
        # multiprocessing runs `<executable> [interpreter flags such as -B] -c CODE ...`, and the fork server imports
        # its preload before it takes the parent's sys.path: CODE gets this process's import path first, or an
        # installed coder (another checkout's) would be the one preloaded
        head = f"import sys; sys.path[:0] = {import_path()!r}; "
        exe = shlex.quote(sys.executable)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f"#!/bin/sh\nset -f\ncd {shlex.quote(NEUTRAL_CWD)} || exit 126\nflags=\n"
                     'while [ $# -gt 0 ] && [ "$1" != -c ]; do flags="$flags $1"; shift; done\n'
                     f'if [ $# -gt 1 ]; then code="$2"; shift 2; '
                     f'exec {exe} -I $flags -c {shlex.quote(head)}"$code" "$@"; fi\n'
                     f'exec {exe} -I $flags "$@"\n')
        os.chmod(path, 0o700)
        _LAUNCHER = path
    return _LAUNCHER


def forkserver_context(preload: list[str]) -> Any:
    """multiprocessing's "forkserver" context with `preload`, its server (and resource tracker) started through
    `isolated_launcher`. The executable is process-wide in multiprocessing: this process starts no other kind."""
    import multiprocessing  # start-up time: only the batch's fork server needs it

    ctx = multiprocessing.get_context("forkserver")
    ctx.set_executable(isolated_launcher())
    ctx.set_forkserver_preload(preload)
    return ctx


@door
def ensure_forkserver() -> None:
    """Start multiprocessing's fork server (and its resource tracker) now, if it is not running."""
    from multiprocessing import forkserver  # start-up time: only the batch's fork server needs it

    forkserver.ensure_running()


@door
def start_forked(process: Any) -> None:
    """`process.start()` for a process of `forkserver_context`: the first start (and one after the server died)
    starts the fork server and multiprocessing's resource tracker, which the run-time door allows only here."""
    process.start()
