"""The agent run of one instance: a `coder run` process, and its session exported afterwards.

This is the only place that knows how the headless CLI is invoked. A process of its own per instance (not an
in-process session) because a crash, a hang or a leak in one instance must not take the batch down, and because
a wall-time limit can then always be enforced by signals. Each run gets its own `CODER_STATE_DIR`, so parallel
runs never share a session database.

The processes are forked from a fork server (multiprocessing's "forkserver": a clean, single-threaded process
started once per batch) that has already imported what `coder run` imports. Starting Python and importing the
engine, its tools and the model SDK cost more than the whole session of a quick instance; forking a warm image
costs a few milliseconds, and each child is still a separate process in the batch's process group that starts
from a fresh copy of that image: its own cwd, environment, stdio and signal handlers, run as `python -m coder`.
`CODER_BATCH_AGENT` (another coder, e.g. in another venv) is exec'ed from the fork instead.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing
import multiprocessing.connection
import os
import runpy
import signal
import sys
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from coder.config.layers import BATCH_REACH_VAR
from coder.host import exec_replace, forkserver_context
from coder.host.python import ensure_forkserver, start_forked
from coder.models.providers import preload_modules
from coder.store.db import SessionStore

EXIT_REASONS = ("done", "max_turns", "max_cost", "wall_time", "interrupted", "error", "stuck")

WALL_GRACE_S = 10.0
#: how long a stopped agent gets after SIGINT (to print its result), then after SIGKILL
STOP_WAITS = (10.0, 5.0)

#: what `python -m coder run` imports, loaded once in the fork server (the rest of coder comes with them), then
#: coder.batch.agent_warm and coder.cli.warm (caches every session would fill again, the parser). Whatever the
#: agent imports that is not here, every instance imports again (all of it was 0.06 s an instance on this machine):
#: tests/batch/test_batch_warm.py lists what a forked agent imported after this, and must find nothing.
PRELOAD = ("coder.cli.main", "coder.cli.run", "coder.cli.sessions", "coder.cli.doctor", "coder.cli.trust",
           "coder.cli.skills", "coder.acp.cli", "coder.codeintel.cli", "coder.review.cli", "coder.batch.cli",
           "coder.cli.mcp", "coder.engine.builder", "coder.engine.subagents", "coder.engine.network",
           "coder.engine.work", "coder.engine.agents", "coder.tools.agents.task_tool",
           "coder.tools.agents.subagents_tool", "coder.ext.skills", "coder.context.manager",
           "coder.tools.registry", "coder.tools.bash.tool", "coder.tools.edit_tool", "coder.tools.patch_tool",
           "coder.tools.search_tool", "coder.tools.read_output_tool", "coder.tools.bash.output_tool",
           "coder.tools.plan_tool", "coder.tools.skill_tool", "coder.tools.todo_tool", "coder.tools.web_fetch_tool",
           "coder.tools.web_search_tool", "coder.cli.run_input", "coder.edit.ops",
           "coder.edit.view",
           "coder.codeintel.languages", "coder.lsp.diagnostics", "coder.lsp.hook", "coder.lsp.manager",
           "coder.lsp.service", "coder.ext.mcp_tools", "coder.ext.custom_tools", "coder.ext.hooks",
           "coder.models.registry", "coder.policy.rules", "coder.sandbox.shell", "coder.sandbox.exec",
           "coder.vcs.repo", "coder.trust.decisions", "coder.config.repository",
           "yaml",  # the built-in agents' front matter (imported lazily by coder)
           "coder.batch.agent_warm", "coder.cli.warm")

_RUNNING: set[BaseProcess] = set()
_RUNNING_LOCK = threading.Lock()
_CONTEXT: Any = None


@dataclass
class AgentRequest:
    workspace: Path
    prompt_file: Path
    state_dir: Path
    model: str
    max_turns: int | None = None
    max_cost: float | None = None
    wall_time: float | None = None
    log_path: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    #: what the agent may reach beyond its workspace, over CLOSED_REACH (coder/config/layers.py): the sandbox's
    #: network presets and extra folders, MCP servers, web search; nothing of the user's own config
    reach: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentResult:
    session_id: str = ""
    final_text: str = ""
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0
    files_changed: list[str] = field(default_factory=list)
    exit_reason: str = "error"
    error: str | None = None
    model: str = ""
    returncode: int | None = None
    evidence: dict[str, Any] | None = None  # the run's evidence record (coder/evidence), when it changed code

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any], returncode: int | None) -> AgentResult:
        usage = data.get("usage") or {}
        reason = str(data.get("exit_reason") or "error")
        return cls(
            session_id=str(data.get("session_id") or ""),
            final_text=str(data.get("final_text") or ""),
            turns=int(data.get("turns") or 0),
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cache_read_tokens=int(usage.get("cache_read_tokens") or 0),
            cache_write_tokens=int(usage.get("cache_write_tokens") or 0),
            cost_usd=float(data.get("cost_usd") or 0.0),
            duration_s=float(data.get("duration_s") or 0.0),
            files_changed=list(data.get("files_changed") or []),
            exit_reason=reason if reason in EXIT_REASONS else "error",
            error=data.get("error"),
            model=str(data.get("model") or ""),
            returncode=returncode,
            evidence=data.get("evidence") if isinstance(data.get("evidence"), dict) else None,
        )


def agent_command() -> list[str]:
    """How to start coder: `CODER_BATCH_AGENT` (e.g. a coder installed in another venv), else this coder."""
    override = os.environ.get("CODER_BATCH_AGENT")
    return override.split() if override else [sys.executable, "-m", "coder"]


def preload_names(model: str) -> list[str]:
    """The modules the fork server imports, in order: coder's, the model provider's SDK and module (the heaviest
    imports of all), then the two warm-ups last, so that they find everything imported."""
    return [*PRELOAD[:-2], *preload_modules(model), *PRELOAD[-2:]]


def _forkserver(model: str) -> Any:
    """The fork server's context, preloading coder and the model's provider (set once: the first model wins)."""
    global _CONTEXT
    with _RUNNING_LOCK:
        if _CONTEXT is None:
            # started through the door: isolated Python in a neutral folder, never the batch's working directory
            _CONTEXT = forkserver_context(preload_names(model))
        return _CONTEXT


def start_fork_server(model: str) -> None:
    """Start the fork server now rather than at the first instance's agent, so that its imports and warm-up (most
    of a second) run while the batch makes the first workspaces."""
    _forkserver(model)
    ensure_forkserver()


def _agent_main(args: list[str], cwd: str, env: dict[str, str], out_path: str, log_path: str,
                exec_cmd: list[str] | None) -> None:
    """In the forked child: stdin empty, stdout and stderr to files, the request's cwd and environment, then
    what `python -m coder ARGS` does, atexit handlers included (a forked child skips them otherwise).

    The cwd is the instance's workspace, somebody else's code: nothing may be imported from it. `python -m`
    would put it first on sys.path (a `coder/` folder in the repository would then run on the host); here coder
    is already imported, cwd-relative entries are dropped from sys.path, and an exec'ed agent gets
    PYTHONSAFEPATH."""
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY), (1, out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env, PYTHONSAFEPATH="1")
    sys.path[:] = [p for p in sys.path if p and not p.startswith(".")]
    if exec_cmd:
        try:
            exec_replace([*exec_cmd, *args], os.environ)
        except OSError as exc:
            print(f"could not start {' '.join(exec_cmd)}: {exc}", file=sys.stderr, flush=True)
            os._exit(127)
    code = 1
    try:
        sys.argv = ["coder", *args]
        runpy.run_module("coder", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    except BaseException:  # noqa: BLE001 - what an uncaught exception does to `python -m coder`
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _last_json_object(text: str) -> dict[str, Any] | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and obj.get("type") == "result":
                return obj
    try:  # pretty-printed single object
        obj = json.loads(text)
        return obj if isinstance(obj, dict) else None
    except json.JSONDecodeError:
        return None


def agent_args(req: AgentRequest) -> list[str]:
    """The arguments of `coder` for one instance's headless session."""
    args = ["run", "--cwd", str(req.workspace), "--model", req.model, "--permission-mode", "auto",
            "--output-format", "json", "--prompt-file", str(req.prompt_file),
            "--no-trust",  # an instance repository is somebody else's code: its config, servers and hooks never run
            "--no-checkpoints"]  # a throwaway clone: nobody undoes in it, the patch is taken against the base
    if req.max_turns is not None:
        args += ["--max-turns", str(req.max_turns)]
    if req.max_cost is not None:
        args += ["--max-cost", f"{req.max_cost:g}"]
    if req.wall_time is not None:
        args += ["--max-wall-time", f"{req.wall_time:g}"]
    return args


def run_agent(req: AgentRequest) -> AgentResult:
    """Run one headless session to its end or its wall-time limit; never raises for agent failures."""
    args = agent_args(req)
    req.state_dir.mkdir(parents=True, exist_ok=True)
    # issue 44: the agent's reach is the batch's alone (closed unless the run grants something, and recorded):
    # the user's allow-list, extra folders, MCP servers and CODER_WEB_SEARCH=on do not carry over
    env = {**os.environ, **req.extra_env, BATCH_REACH_VAR: json.dumps(req.reach), "CODER_STATE_DIR": str(req.state_dir)}
    env.pop("CODER_MODEL", None)
    out_path = req.state_dir / "agent.out"  # the JSON result line
    override = agent_command() if os.environ.get("CODER_BATCH_AGENT") else None
    start = time.monotonic()
    timed_out = False
    try:
        proc = _forkserver(req.model).Process(
            target=_agent_main, name="coder-agent",
            args=(args, str(req.workspace), env, str(out_path), str(req.log_path or os.devnull), override))
        with _RUNNING_LOCK:
            start_forked(proc)  # through the door: it may start the fork server
            _RUNNING.add(proc)
        try:
            # The CLI stops itself at --max-wall-time; this is the backstop for a hung process.
            if not _wait(proc, None if req.wall_time is None else req.wall_time + WALL_GRACE_S):
                timed_out = True
                _stop(proc)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
    except (OSError, EOFError) as exc:  # the fork server could not be reached
        return AgentResult(exit_reason="error", error=f"could not start {' '.join(agent_command())}: {exc}")
    elapsed = time.monotonic() - start
    returncode = proc.exitcode
    out = out_path.read_text(encoding="utf-8", errors="replace") if out_path.is_file() else ""
    data = _last_json_object(out)
    if data is None:
        tail = ""
        if req.log_path and req.log_path.is_file():
            tail = req.log_path.read_text(encoding="utf-8", errors="replace")[-1500:]
        result = AgentResult(exit_reason="wall_time" if timed_out else "error", returncode=returncode,
                             error=None if timed_out else
                             f"coder run exited {returncode} without a result: {tail.strip()}")
    else:
        result = AgentResult.from_json(data, returncode)
        if timed_out:
            result.exit_reason = "wall_time"
    result.duration_s = result.duration_s or elapsed
    return result


def interrupt_all() -> int:
    """SIGINT every running agent (used on SIGTERM; a Ctrl-C in the terminal reaches them directly, since they
    share the batch's process group). Each then prints its result and exits as "interrupted"."""
    with _RUNNING_LOCK:
        procs = [p for p in _RUNNING if p.pid is not None]
    for proc in procs:
        _signal(proc, signal.SIGINT)
    return len(procs)


def _wait(proc: BaseProcess, timeout: float | None) -> bool:
    """Wait for the process to end; True when it did. Its exit code is read (once: it is a message from the fork
    server) under the lock that every `start()` takes too, since a start polls all the children."""
    multiprocessing.connection.wait([proc.sentinel], timeout)
    with _RUNNING_LOCK:
        proc.join(0)
    return proc.exitcode is not None


def _signal(proc: BaseProcess, sig: int) -> None:
    try:
        os.kill(proc.pid, sig)  # type: ignore[arg-type]
    except (ProcessLookupError, TypeError):
        pass


def _stop(proc: BaseProcess) -> None:
    """SIGINT first (the CLI then prints its result and leaves the session resumable), then SIGKILL.

    The agents share the batch's process group on purpose: killing the batch (Ctrl-C, `kill -- -PGID`, a job
    scheduler) takes them along instead of leaving orphans that keep spending money."""
    for sig, wait in zip((signal.SIGINT, signal.SIGKILL), STOP_WAITS, strict=True):
        _signal(proc, sig)
        if _wait(proc, wait):
            return


def export_session(state_dir: Path, session_id: str, dest: Path) -> list[dict[str, Any]]:
    """The session's events, also written to `dest` as our JSONL trajectory (what `coder sessions export ID`
    prints). Read straight from the instance's session database (`CODER_STATE_DIR/sessions.db`, see
    coder/base/paths.py) rather than by a second coder process per instance. Empty when there is nothing to export."""
    db = state_dir / "sessions.db"
    if not session_id or not db.is_file():
        return []
    store = SessionStore(db)
    try:
        events = [e.to_dict() for e in store.events(session_id)]
    finally:
        store.close()
    if events:
        dest.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), encoding="utf-8")
    return events
