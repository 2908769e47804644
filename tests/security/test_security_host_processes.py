"""Host processes a hostile repository or an injected model could steer (issue 29), each tried for real.

Classes, with the real sandbox, real git, real Python processes, harmless markers written into a folder the test
owns outside the workspace (`outside/`), and a control that shows each plant is live:
- the code index's parse workers importing a repository's `coder/` package (and a `.venv/bin` on PATH lending the
  session its `git` and `rg`), through `code_search` in every mode;
- the batch's fork server started from inside such a repository;
- a trusted MCP server whose script lies in the workspace: the model cannot rewrite it (shell or editor), the
  server runs in the sandbox, and a change made outside asks for trust again;
- a host hook (`sandbox = false`) naming a workspace script;
- toolchain folders of the home that hold a credential file;
- a FIFO planted where the reviewer's linter reads its configuration.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_support import git
from security_run_support import run_scripted

from coder.codeintel.build import parse_batch
from coder.codeintel.pool import ParsePool
from coder.ext.hooks import Hook, HookRunner
from coder.review.context import ReviewContext
from coder.review.mechanical import stage_lint
from coder.sandbox.exec import run_sandboxed
from coder.trust import decisions
from coder.vcs.repo import Repo

REPO = Path(__file__).resolve().parents[2]
MCP_DEMO = REPO / "tests" / "ext" / "mcp_demo_server.py"
MODES = ("plan", "ask", "auto-edit", "auto")
BASH_MODES = (("auto", ()), ("ask", ("--allow", "bash(*)", "--allow", "mcp__demo__*")),
              ("auto-edit", ("--allow", "bash(*)", "--allow", "mcp__demo__*")))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside"
    path.mkdir()
    return path


def _marker_code(marker: Path, what: str) -> str:
    return f"open({str(marker)!r}, 'a').write({what!r} + '\\n')\n"


def _fired(marker: Path) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


# ---- the code index's workers ------------------------------------------------------------------------------------

@pytest.fixture
def hostile_repo(tmp_path: Path, outside: Path) -> Path:
    """A repository big enough for parse workers (200 modules) that carries its own `coder/` package, whose every
    module writes the marker when imported, and a `.venv/bin` with a `git` and an `rg` that do the same."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    marker = outside / "marker"
    for i in range(200):
        (repo / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n")
    for rel in ("coder/__init__.py", "coder/codeintel/__init__.py", "coder/codeintel/worker.py",
                "coder/codeintel/build.py", "pickle.py", "tree_sitter/__init__.py"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(_marker_code(marker, f"imported-{rel}"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hostile")
    venv_bin = repo / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    for name in ("git", "rg", "ruff"):
        (venv_bin / name).write_text(f"#!/bin/sh\necho planted-{name} >> {marker}\nexit 1\n")
        (venv_bin / name).chmod(0o755)
    return repo


def test_parse_workers_import_nothing_from_the_repository(hostile_repo: Path, outside: Path) -> None:
    marker = outside / "marker"
    # control: the workers' old command line, run where they ran (the repository), imports the repository's coder
    subprocess.run([sys.executable, "-m", "coder.codeintel.worker"], cwd=hostile_repo, input=b"",
                   capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert "imported-coder/__init__.py" in _fired(marker)
    marker.unlink()
    pool = ParsePool(hostile_repo, 2)
    try:
        todo = [(f"m{i}.py", 40, 0, None) for i in range(200)]
        results = [item for batch in pool.run(todo, parse_batch) for item in batch]
    finally:
        pool.close()
    assert len(results) == 200  # the workers parsed the files
    assert _fired(marker) == []


@pytest.mark.parametrize("mode", MODES)
def test_code_search_in_an_untrusted_repository_runs_nothing_of_it(hostile_repo: Path, outside: Path,
                                                                   mode: str, monkeypatch) -> None:
    """Untrusted repository, every mode, the first `code_search` (a cold index build with workers, ripgrep) and
    the turn's checkpoint (host git), with the repository's `.venv/bin` first on PATH."""
    path = f"{hostile_repo / '.venv' / 'bin'}:{os.environ['PATH']}"
    monkeypatch.setenv("PATH", path)
    assert shutil.which("git", path=path) == str(hostile_repo / ".venv" / "bin" / "git")  # control: PATH's git
    turns = [{"tool_calls": [{"name": "code_search", "input": {"query_type": "definition", "query": "f150"}}]},
             {"tool_calls": [{"name": "code_search", "input": {"query_type": "text", "query": "return x \\+ 137"}}]},
             {"text": "done"}]
    events = run_scripted(hostile_repo, turns, "--permission-mode", mode)
    results = [e for e in events if e["type"] == "tool_call_finished"]
    assert "m150.py" in results[0]["output"], results  # the index was built and answered
    assert "m137.py" in results[1]["output"], results  # ripgrep ran
    assert _fired(outside / "marker") == []


# ---- the batch's fork server -----------------------------------------------------------------------------------

def test_fork_server_started_in_a_hostile_repository_imports_nothing_from_it(tmp_path: Path, outside: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "multiprocessing").mkdir(parents=True)
    marker = outside / "marker"
    (repo / "multiprocessing" / "__init__.py").write_text(_marker_code(marker, "imported-multiprocessing"))
    # the batch process is started as a console script is: its own folder first on sys.path, not the repository
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    control = bin_dir / "control.py"
    control.write_text("import multiprocessing\nfrom multiprocessing import forkserver\n"
                       "multiprocessing.get_context('forkserver')\nforkserver.ensure_running()\nprint('started')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, str(control)], cwd=repo, capture_output=True, text=True, timeout=120,
                         env=env)
    assert "started" in out.stdout, out.stderr
    assert "imported-multiprocessing" in _fired(marker)  # control: multiprocessing's own fork server does
    marker.unlink()
    real = bin_dir / "batch.py"
    real.write_text("from coder.batch.runner import start_fork_server\nstart_fork_server('scripted:x')\n"
                    "from multiprocessing import forkserver\n"
                    "print('started', forkserver._forkserver._forkserver_pid)\n")
    out = subprocess.run([sys.executable, str(real)], cwd=repo, capture_output=True, text=True, timeout=300, env=env)
    assert "started" in out.stdout and "None" not in out.stdout, out.stderr
    assert _fired(marker) == []


# ---- a trusted MCP server whose script is in the workspace -----------------------------------------------------------

@pytest.fixture
def mcp_repo(tmp_path: Path, outside: Path) -> Path:
    """A repository whose `.mcp.json` starts `python tools/mcp_server.py`; the script (the demo server) first
    tries to write the marker outside the workspace."""
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    marker = outside / "marker"
    prologue = f"try:\n    {_marker_code(marker, 'server-on-host')}except OSError:\n    pass\n"
    (repo / "tools" / "mcp_server.py").write_text(MCP_DEMO.read_text().replace(
        "server = MCPServer(", prologue + "server = MCPServer(", 1))
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "demo": {"command": sys.executable, "args": ["tools/mcp_server.py"]}}}))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "server")
    return repo


@pytest.mark.parametrize(("mode", "flags"), BASH_MODES, ids=[m for m, _ in BASH_MODES])
def test_trusted_mcp_server_script_cannot_be_rewritten_and_runs_in_the_sandbox(
        mcp_repo: Path, outside: Path, mode: str, flags: tuple[str, ...]) -> None:
    script = mcp_repo / "tools" / "mcp_server.py"
    before = script.read_text()
    rewrite = f"echo {_marker_code(outside / 'marker', 'rewritten')!r} >> tools/mcp_server.py; echo rc=$?"
    turns = [{"tool_calls": [{"name": "tool_search", "input": {"query": "select:mcp__demo__add"}}]},  # on demand
             {"tool_calls": [{"name": "mcp__demo__add", "input": {"a": 2, "b": 40}}]},
             {"tool_calls": [{"name": "bash", "input": {"command": rewrite}}]},
             {"tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
                 "command": "create", "path": "tools/mcp_server.py", "file_text": "print('pwned')\n"}}]},
             {"text": "done"}]
    events = run_scripted(mcp_repo, turns, "--trust", "--permission-mode", mode, *flags)
    results = [e for e in events if e["type"] == "tool_call_finished" and e["tool"] != "tool_search"]
    assert results[0]["output"] == "42", results  # the server ran
    assert "rc=0" not in results[1]["output"] and "Read-only file system" in results[1]["output"], results[1]
    assert results[2].get("is_error") or "protected" in results[2]["output"].lower(), results[2]
    assert script.read_text() == before
    assert _fired(outside / "marker") == []  # it ran in the sandbox: outside/ was out of its reach
    # control: the same script started on the host does write the marker
    subprocess.run([sys.executable, str(script)], cwd=mcp_repo, stdin=subprocess.DEVNULL, capture_output=True,
                   timeout=120)
    assert _fired(outside / "marker") == ["server-on-host"]


def test_a_change_to_the_servers_script_asks_for_trust_again(mcp_repo: Path) -> None:
    request = decisions.inspect(mcp_repo)
    assert any("tools/mcp_server.py" in w.line() for w in request.wanted)  # the dialog says what it runs
    decisions.grant(request)
    assert decisions.status(decisions.inspect(mcp_repo)).trusted
    (mcp_repo / "README.md").write_text("unrelated\n")  # control: another file does not matter
    assert decisions.status(decisions.inspect(mcp_repo)).trusted
    with open(mcp_repo / "tools" / "mcp_server.py", "a") as fh:
        fh.write("# changed\n")
    status = decisions.status(decisions.inspect(mcp_repo))
    assert not status.trusted and status.stale


# ---- host hooks ------------------------------------------------------------------------------------------------

def test_host_hook_naming_a_workspace_script_runs_in_the_sandbox(git_repo: Path, outside: Path) -> None:
    marker = outside / "marker"
    (git_repo / "scripts").mkdir()
    (git_repo / "scripts" / "hook.py").write_text(
        f"try:\n    {_marker_code(marker, 'workspace-hook-on-host')}except OSError:\n    print('no-host')\n")
    (outside / "own.sh").write_text(f"#!/bin/sh\necho own-hook >> {marker}\n")
    (outside / "own.sh").chmod(0o755)
    said: list[str] = []
    runner = HookRunner([Hook("turn_end", "python3 scripts/hook.py", sandbox=False),
                         Hook("turn_end", f"{outside / 'own.sh'}", sandbox=False)], git_repo, None, report=said.append)
    first = runner._run(runner.hooks[0], {})
    assert "no-host" in first.output and any("runs in the sandbox" in line for line in said)
    assert runner._run(runner.hooks[1], {}).exit_code == 0
    assert _fired(marker) == ["own-hook"]  # control: a host hook naming nothing in the workspace runs on the host
    subprocess.run([sys.executable, "scripts/hook.py"], cwd=git_repo, capture_output=True, timeout=60)
    assert _fired(marker) == ["own-hook", "workspace-hook-on-host"]  # control: the script itself is live
    shell = run_sandboxed("echo x >> scripts/hook.py; echo rc=$?", git_repo, None, 30)
    assert "Read-only file system" in shell.output  # the script it names is read-only to the sandbox


# ---- the home --------------------------------------------------------------------------------------------------

def test_toolchain_folders_lend_no_credential_file(git_repo: Path, isolated_home: Path, monkeypatch) -> None:
    cargo_bin = isolated_home / ".cargo" / "bin"
    npm_bin = isolated_home / ".npm-global" / "bin"
    for folder, tool in ((cargo_bin, "cargo-x"), (npm_bin, "npm-x")):
        folder.mkdir(parents=True)
        (folder / tool).write_text(f"#!/bin/sh\necho {tool}-ran\n")
        (folder / tool).chmod(0o755)
    (isolated_home / ".cargo" / "credentials.toml").write_text("token = 'CARGO-SECRET'\n")
    (isolated_home / ".npm-global" / ".npmrc").write_text("//registry/:_authToken=NPM-SECRET\n")
    (isolated_home / ".pypirc").write_text("password = PYPI-SECRET\n")
    monkeypatch.setenv("PATH", f"{cargo_bin}:{npm_bin}:{os.environ['PATH']}")
    out = run_sandboxed("cargo-x; npm-x; cat ~/.cargo/credentials.toml ~/.npm-global/.npmrc ~/.pypirc; "
                        "ls -a ~/.cargo; echo end", git_repo, None, 60).output
    assert "cargo-x-ran" in out and "npm-x-ran" in out and "end" in out  # control: the toolchains are there
    assert "SECRET" not in out, out
    # control: the secrets are real files on the host
    assert "CARGO-SECRET" in (isolated_home / ".cargo" / "credentials.toml").read_text()


# ---- the reviewer ----------------------------------------------------------------------------------------------

def test_a_fifo_swapped_in_for_the_changed_file_does_not_stall_the_review(git_repo: Path) -> None:
    """The diff is taken, then (a background job in the sandbox) the changed file and the config files around it
    become FIFOs: a linter that opened a workspace path would block until its timeout."""
    if shutil.which("ruff") is None:
        pytest.fail("ruff is needed: pip install ruff")
    pkg = git_repo / "pkg"
    pkg.mkdir()
    (pkg / "mod.py").write_text("def f():\n    return 1\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "pkg")
    (pkg / "mod.py").write_text("import os\n\n\ndef f():\n    return 1\n")
    ctx = ReviewContext(Repo.open(git_repo), Repo.open(git_repo).diff())
    try:
        (pkg / "mod.py").unlink()
        for name in ("mod.py", "pyproject.toml", "ruff.toml"):
            os.mkfifo(pkg / name)
        with pytest.raises(subprocess.TimeoutExpired):  # control: ruff in the workspace blocks on the FIFO
            subprocess.run(["ruff", "check", "--no-cache", "pkg/mod.py"], cwd=git_repo, capture_output=True,
                           timeout=5)
        result = stage_lint(ctx)
    finally:
        ctx.cleanup()
    assert result.status != "error", result
    assert any("F401" in f.message for f in result.findings), result  # ruff ran, on the patched file


# ---- what a command names in the workspace -------------------------------------------------------------------------

@pytest.mark.parametrize(("command", "named"), [
    ("python3 scripts/hook.py", True),
    ("python3 $CODER_WORKSPACE/scripts/hook.py", True),
    ("python3 ${CODER_WORKSPACE}/scripts/hook.py", True),
    ('cd "$CODER_WORKSPACE" && make lint', True),  # the workspace itself: make reads its Makefile
    ("python3 $(pwd)/scripts/hook.py", True),  # unknowable: taken as naming it
    ("python3 `pwd`/x.py", True),
    ("python3 $SOMETHING_UNSET/x.py", True),
    ("python3 'scripts/hook.py", True),  # an open quote: unknowable
    ("sh -c 'python3 scripts/hook.py'", True),  # an inner shell's words
    ("sh -c 'notify-send \"a b\"'", False),
    ("notify-send done", False),
    ("python3 /usr/lib/python3/dist-packages/x.py", False),
])
def test_what_a_host_hook_names(git_repo: Path, command: str, named: bool) -> None:
    from coder.trust.commands import shell_use

    (git_repo / "scripts").mkdir(exist_ok=True)
    (git_repo / "scripts" / "hook.py").write_text("print(1)\n")
    (git_repo / "Makefile").write_text("lint:\n\techo lint\n")
    use = shell_use(command, git_repo, {"CODER_WORKSPACE": str(git_repo), "PATH": os.environ["PATH"]})
    assert (use is None or use.any) is named, (command, use)


@pytest.mark.parametrize(("argv", "env", "cwd", "sandboxed"), [
    (["python", "tools/s.py"], {}, None, True),
    (["node", "--require", "./tools/hook.js", "server.js"], {}, None, True),
    (["./node_modules/.bin/server"], {}, None, True),
    (["uv", "run", "--directory", "tools", "server"], {}, None, True),  # a folder inside: code runs from it
    (["python", "-m", "tools.s"], {"PYTHONPATH": "."}, None, False),  # the root is data...
    (["python", "-m", "tools.s"], {"PYTHONPATH": "tools"}, None, True),  # ...a folder inside is code
    (["python", "-m", "tools.s"], {}, ".", True),  # run in the workspace: all of it importable
    (["mcp-server-git", "--repository", "."], {}, None, False),
    (["npx", "-y", "@modelcontextprotocol/server-github"], {"DB_PATH": "tools/s.py"}, None, False),
    (["bash", "-c", "python3 tools/s.py"], {}, None, True),  # an inner shell's words
    (["bash", "-c", "python3 $(pwd)/x.py"], {}, None, True),  # unknowable: taken as naming it
])
def test_what_an_mcp_server_names(git_repo: Path, argv: list[str], env: dict[str, str], cwd: str | None,
                                  sandboxed: bool) -> None:
    from coder.ext.mcp_client import MCPManager, ServerConfig

    (git_repo / "tools").mkdir(exist_ok=True)
    (git_repo / "tools" / "s.py").write_text("print(1)\n")
    (git_repo / "tools" / "hook.js").write_text("1\n")
    (git_repo / "server.js").write_text("1\n")
    (git_repo / "node_modules" / ".bin").mkdir(parents=True, exist_ok=True)
    (git_repo / "node_modules" / ".bin" / "server").write_text("#!/bin/sh\n")
    manager = MCPManager([], git_repo, None)
    try:
        launch = manager.launch(ServerConfig("x", argv[0], argv[1:], env, cwd))
    except OSError:  # a program this machine lacks (npx, uv): the door found no such program on the host
        assert not sandboxed
        return
    finally:
        manager.close()
    assert (Path(launch.argv[0]).name == "bwrap") is sandboxed, launch.argv


def test_sigterm_ends_a_host_process_that_hangs(git_repo: Path, outside: Path, tmp_path: Path,
                                                isolated_home: Path) -> None:
    """A host hook that never ends (as a linter on a FIFO did): SIGTERM ends it with the run, not its timeout."""
    import signal
    import time

    from security_run_support import CONSOLE

    started = outside / "started"
    config = isolated_home / ".config" / "coder" / "config.toml"  # the user's own config: a host hook
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[[hooks.turn_end]]\ncommand = "touch {started}; sleep 600"\ntimeout = 600\n'
                      'sandbox = false\n')
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "done"}]}))
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-I", "-c", CONSOLE, "run", "--model", f"scripted:{script}", "go"],
                            cwd=git_repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), proc.communicate(timeout=5)  # control: the hook runs, and hangs
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)  # the hook's own timeout is 600 s
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode is not None
