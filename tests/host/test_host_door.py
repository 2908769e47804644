"""Nothing in coder starts a host process except through the door (coder/host), read from the code's syntax trees.

A spawn is: importing `subprocess`, `pexpect`, `ptyprocess`, `pty`, the MCP SDK's stdio client or GitPython (`git`,
which runs `git version` as it is imported: docs/decisions/48-typed-doors.md); calling
`os.exec*`, `os.spawn*`, `os.posix_spawn*`, `os.fork*`, `os.system`, `os.popen` (or importing those names from
os), `asyncio.create_subprocess_*`, an event loop's `subprocess_exec/shell`, `anyio.open_process/run_process`,
pygls's `start_io`, `stdio_client`, `pty.spawn`, multiprocessing's start methods that exec
(`get_context`, `set_start_method`, `set_executable`, `Process`, `Pool`), or importing any of those modules by
name through `importlib`/`__import__`. Each rule has a control below that proves it fires.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CODER = REPO / "coder"

#: modules outside the door allowed a spawn, and why
EXEMPT: dict[str, str] = {
    "coder/netproxy/relay.py": "the network relay runs inside the sandbox (started by the sandboxed shell); its "
                               "fork daemonises it there",
}
#: the door itself
DOOR = "coder/host/"

FORBIDDEN_MODULES = ("subprocess", "pexpect", "ptyprocess", "pty", "mcp.client.stdio", "multiprocessing.popen_fork",
                     "multiprocessing.popen_spawn_posix", "multiprocessing.popen_forkserver", "git")
OS_SPAWNS = ("exec", "spawn", "posix_spawn", "fork", "system", "popen")
CALL_NAMES = {"create_subprocess_exec", "create_subprocess_shell", "subprocess_exec", "subprocess_shell",
              "open_process", "run_process", "start_io", "stdio_client", "set_start_method", "set_executable",
              "get_context"}
MULTIPROCESSING_CALLS = {"Process", "Pool", "get_context", "set_start_method", "set_executable"}


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str:
    """`a.b.c` of an attribute chain, its first name read through `import x as a` aliases."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(aliases.get(node.id, node.id))
    return ".".join(reversed(parts))


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local names bound to modules (`import os as o`, `import multiprocessing.connection as mc`)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update({a.asname: a.name for a in node.names if a.asname})
    return out


def _forbidden_module(name: str) -> bool:
    return any(name == m or name.startswith(m + ".") for m in FORBIDDEN_MODULES)


def spawns(source: str) -> list[str]:
    """What in `source` starts a process outside the door, one line each ("LINE: what")."""
    found = []
    tree = ast.parse(source)
    aliases = _aliases(tree)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            found += [f"{line}: import {a.name}" for a in node.names if _forbidden_module(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if _forbidden_module(node.module):
                found.append(f"{line}: from {node.module} import ...")
            elif node.module == "os":
                found += [f"{line}: from os import {a.name}" for a in node.names if a.name.startswith(OS_SPAWNS)]
            elif node.module in ("asyncio", "anyio"):
                found += [f"{line}: from {node.module} import {a.name}" for a in node.names if a.name in CALL_NAMES]
            elif node.module == "multiprocessing":
                found += [f"{line}: from multiprocessing import {a.name}" for a in node.names
                          if a.name in MULTIPROCESSING_CALLS]
        elif isinstance(node, ast.Call):
            name = _dotted(node.func, aliases)
            last = name.rsplit(".", 1)[-1]
            if name.startswith("os.") and last.startswith(OS_SPAWNS):
                found.append(f"{line}: {name}()")
            elif last in CALL_NAMES and (name.startswith(("asyncio.", "anyio.", "multiprocessing.")) or "." in name
                                         or last in ("stdio_client", "create_subprocess_exec",
                                                     "create_subprocess_shell")):
                found.append(f"{line}: {name}()")
            elif name.startswith("multiprocessing.") and last in MULTIPROCESSING_CALLS:
                found.append(f"{line}: {name}()")
            elif name in ("pty.spawn", "pty.fork"):
                found.append(f"{line}: {name}()")
            elif name in ("importlib.import_module", "__import__", "import_module") and node.args and \
                    isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) and \
                    _forbidden_module(node.args[0].value):
                found.append(f"{line}: {name}({node.args[0].value!r})")
            elif name == "getattr" and len(node.args) >= 2 and _dotted(node.args[0], aliases) == "os" and not (
                    isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                    and not node.args[1].value.startswith(OS_SPAWNS)):
                found.append(f"{line}: getattr(os, ...)")  # a name computed at run time may be any of them
    return sorted(found, key=lambda text: int(text.split(":")[0]))


def test_nothing_in_coder_spawns_outside_the_door() -> None:
    offenders = []
    checked = 0
    for path in sorted(CODER.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(DOOR) or rel in EXEMPT:
            continue
        checked += 1
        offenders += [f"{rel}:{hit}" for hit in spawns(path.read_text(encoding="utf-8"))]
    assert checked > 200  # the walk saw the package
    assert not offenders, ("these start host processes without coder/host (use coder.host.run/start/prepare, "
                           "coder.host.pty.spawn_pty or coder.host.bridges):\n" + "\n".join(offenders))


def test_the_exemptions_still_need_their_exemption() -> None:
    """An exemption whose module no longer spawns is removed, so the list stays the list of exceptions."""
    for rel, why in EXEMPT.items():
        assert why
        assert spawns((REPO / rel).read_text(encoding="utf-8")), f"{rel} no longer spawns: drop its exemption"


def test_the_door_is_where_the_spawns_are() -> None:
    """Control on the real tree: the door's own modules are caught by the same rules (so the rules see them)."""
    door_hits = [hit for path in (CODER / "host").glob("*.py") for hit in spawns(path.read_text(encoding="utf-8"))]
    assert any("subprocess" in hit for hit in door_hits)
    assert any("stdio_client" in hit for hit in door_hits)
    assert any("start_io" in hit for hit in door_hits)
    assert any("execve" in hit for hit in door_hits)


@pytest.mark.parametrize("source", [
    "import subprocess",
    "import subprocess as sp",
    "from subprocess import run",
    "import pexpect",
    "from pexpect import spawn",
    "import ptyprocess",
    "import pty",
    "from mcp.client.stdio import stdio_client",
    "import git",
    "from git import Repo",
    "import os\nos.execvpe('x', ['x'], {})",
    "import os\nos.execv('x', ['x'])",
    "import os\nos.spawnlp(os.P_WAIT, 'x', 'x')",
    "import os\nos.posix_spawn('x', ['x'], {})",
    "import os\nos.posix_spawnp('x', ['x'], {})",
    "import os\nos.fork()",
    "import os\nos.forkpty()",
    "import os\nos.system('x')",
    "import os\nos.popen('x')",
    "from os import execv",
    "from os import fork",
    "import asyncio\nasyncio.create_subprocess_exec('x')",
    "import asyncio\nasyncio.create_subprocess_shell('x')",
    "from asyncio import create_subprocess_exec",
    "async def f(loop):\n    await loop.subprocess_exec(lambda: None, 'x')",
    "import anyio\nanyio.open_process(['x'])",
    "import anyio\nanyio.run_process(['x'])",
    "async def f(client):\n    await client.start_io('x')",
    "def f(p):\n    return stdio_client(p)",
    "import multiprocessing\nmultiprocessing.get_context('spawn')",
    "import multiprocessing\nmultiprocessing.set_start_method('forkserver')",
    "import multiprocessing\nmultiprocessing.Process(target=print)",
    "import multiprocessing\nmultiprocessing.Pool(2)",
    "import multiprocessing\nmultiprocessing.set_executable('x')",
    "from multiprocessing import get_context",
    "import importlib\nimportlib.import_module('subprocess')",
    "__import__('subprocess')",
    "def f():\n    import subprocess\n    return subprocess",
    "import os as o\no.execv('x', ['x'])",
    "import asyncio as aio\naio.create_subprocess_exec('x')",
    "import multiprocessing as mp\nmp.get_context('spawn')",
    "import os\ngetattr(os, 'exec' + 'v')('x', ['x'])",
    "import os\ngetattr(os, 'system')('x')",
])
def test_each_rule_fires(source: str) -> None:
    """Control: every pattern the module docstring names is caught."""
    assert spawns(source), source


@pytest.mark.parametrize("source", [
    "from coder.host import run, start, TimeoutExpired",
    "from coder.host import git as hostgit",
    "import asyncio\nasync def f(p: asyncio.subprocess.Process) -> None: ...",
    "import multiprocessing.connection\nmultiprocessing.connection.wait([], 1)",
    "import os\nos.execute = 1\nos.environ.get('X')",
    "import os\nos.killpg(1, 9)",
    "import os\ngetattr(os, 'O_NOFOLLOW', 0)",
    "x = 'subprocess.run(...)'",
])
def test_what_is_not_a_spawn(source: str) -> None:
    assert not spawns(source), source


def test_only_the_door_marks_its_own_frames() -> None:
    """The run-time door (coder/host/audit.py) allows a start while a function marked `door` runs: only
    coder/host may mark one, and Pillow's `Image.open` (whose plugins may start programs) runs only in
    coder/models/images.py, which gives it one format at a time."""
    marks, opens = [], []
    for path in sorted(CODER.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        text = path.read_text(encoding="utf-8")
        if not rel.startswith(DOOR) and ("import door" in text or "audit.door" in text or "@door" in text):
            marks.append(rel)
        if "Image.open(" in text and rel not in ("coder/models/images.py", "coder/models/image_worker.py"):
            opens.append(rel)
    assert not marks and not opens, (marks, opens)


def test_the_image_workers_refusal_watches_the_doors_events() -> None:
    """The image worker starts no process: it refuses every start (it runs as standalone text in its sandbox, with
    no coder to import, so it keeps its own copy of the events the door watches). The two lists stay one."""
    from coder.host.audit import EVENTS
    from coder.models.image_worker import SPAWNS

    assert set(SPAWNS) == EVENTS
