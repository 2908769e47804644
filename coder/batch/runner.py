"""The agent run of one instance: a `coder run` subprocess, and its session exported afterwards.

This is the only place that knows how the headless CLI is invoked. A subprocess (not an in-process session)
because a crash, a hang or a leak in one instance must not take the batch down, and because a wall-time limit
can then always be enforced by signals. Each run gets its own `CODER_STATE_DIR`, so parallel runs never share a
session database.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

EXIT_REASONS = ("done", "max_turns", "max_cost", "wall_time", "interrupted", "error")

WALL_GRACE_S = 10.0

_RUNNING: set[subprocess.Popen[str]] = set()
_RUNNING_LOCK = threading.Lock()


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
        )


def agent_command() -> list[str]:
    """How to start coder. `CODER_BATCH_AGENT` overrides it (e.g. a coder installed in another venv)."""
    override = os.environ.get("CODER_BATCH_AGENT")
    return override.split() if override else [sys.executable, "-m", "coder"]


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


def run_agent(req: AgentRequest) -> AgentResult:
    """Run one headless session to its end or its wall-time limit; never raises for agent failures."""
    cmd = [*agent_command(), "run", "--cwd", str(req.workspace), "--model", req.model,
           "--permission-mode", "auto", "--output-format", "json", "--prompt-file", str(req.prompt_file),
           "--no-trust"]  # an instance repository is somebody else's code: its config, servers and hooks never run
    if req.max_turns is not None:
        cmd += ["--max-turns", str(req.max_turns)]
    if req.max_cost is not None:
        cmd += ["--max-cost", f"{req.max_cost:g}"]
    if req.wall_time is not None:
        cmd += ["--max-wall-time", f"{req.wall_time:g}"]
    req.state_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **req.extra_env, "CODER_STATE_DIR": str(req.state_dir)}
    env.pop("CODER_MODEL", None)
    log = open(req.log_path, "w", encoding="utf-8") if req.log_path else subprocess.DEVNULL
    start = time.monotonic()
    timed_out = False
    try:
        proc = subprocess.Popen(cmd, cwd=req.workspace, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=log, text=True)
        with _RUNNING_LOCK:
            _RUNNING.add(proc)
        try:
            # The CLI stops itself at --max-wall-time; this is the backstop for a hung process.
            out, _ = proc.communicate(timeout=None if req.wall_time is None else req.wall_time + WALL_GRACE_S)
        except subprocess.TimeoutExpired:
            timed_out = True
            out = _stop(proc)
        finally:
            with _RUNNING_LOCK:
                _RUNNING.discard(proc)
    except OSError as exc:
        return AgentResult(exit_reason="error", error=f"could not start {cmd[0]}: {exc}")
    finally:
        if log is not subprocess.DEVNULL:
            log.close()
    elapsed = time.monotonic() - start
    data = _last_json_object(out or "")
    if data is None:
        tail = ""
        if req.log_path and req.log_path.is_file():
            tail = req.log_path.read_text(encoding="utf-8", errors="replace")[-1500:]
        result = AgentResult(exit_reason="wall_time" if timed_out else "error", returncode=proc.returncode,
                             error=None if timed_out else
                             f"coder run exited {proc.returncode} without a result: {tail.strip()}")
    else:
        result = AgentResult.from_json(data, proc.returncode)
        if timed_out:
            result.exit_reason = "wall_time"
    result.duration_s = result.duration_s or elapsed
    return result


def interrupt_all() -> int:
    """SIGINT every running agent (used on SIGTERM; a Ctrl-C in the terminal reaches them directly, since they
    share the batch's process group). Each then prints its result and exits as "interrupted"."""
    with _RUNNING_LOCK:
        procs = list(_RUNNING)
    for proc in procs:
        try:
            proc.send_signal(signal.SIGINT)
        except ProcessLookupError:
            pass
    return len(procs)


def _stop(proc: subprocess.Popen[str]) -> str:
    """SIGINT first (the CLI then prints its result and leaves the session resumable), then SIGKILL.

    The agents share the batch's process group on purpose: killing the batch (Ctrl-C, `kill -- -PGID`, a job
    scheduler) takes them along instead of leaving orphans that keep spending money."""
    for stop, wait in ((lambda: proc.send_signal(signal.SIGINT), 10.0), (proc.kill, 5.0)):
        try:
            stop()
        except ProcessLookupError:
            pass
        try:
            out, _ = proc.communicate(timeout=wait)
            return out or ""
        except subprocess.TimeoutExpired:
            continue
    return ""


def export_session(state_dir: Path, session_id: str, dest: Path, workspace: Path | None = None) -> bool:
    """`coder sessions export ID` into `dest` (our JSONL trajectory). False when there is nothing to export."""
    if not session_id:
        return False
    env = {**os.environ, "CODER_STATE_DIR": str(state_dir)}
    proc = subprocess.run([*agent_command(), "sessions", "export", session_id], capture_output=True, text=True,
                          env=env, cwd=workspace or state_dir, timeout=120)
    if proc.returncode != 0 or not proc.stdout.strip():
        return False
    dest.write_text(proc.stdout if proc.stdout.endswith("\n") else proc.stdout + "\n", encoding="utf-8")
    return True
