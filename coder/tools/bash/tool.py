"""The `bash` tool: a persistent shell per session, sandboxed with bubblewrap unless `--no-sandbox`.

The shell lives in `ctx.services["shell"]` so `cd`, `export`, functions and an activated virtualenv carry over
between calls. What this module adds on top of `coder.sandbox.shell`: its params (`BashParams`), the timeout cap
from config, the refusal when no sandbox is available, and the text the model reads (output, notes, exit code, and
head+tail clipping with the full output behind an output:// handle). A command the user sends to the background
(Ctrl+B: `ctx.detach`) keeps its shell and sandbox as a job (coder/tools/bash/jobs.py) and the call returns at
once; the next call gets a new shell."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.base.errors import ConfigError, SandboxUnavailable, ShellError
from coder.base.schema import key
from coder.base.settings import SettingError
from coder.sandbox.check import require_sandbox
from coder.sandbox.network import network_for
from coder.sandbox.profile import SandboxConfig
from coder.sandbox.shell import PersistentShell
from coder.store.outputs import clip_output
from coder.tools.base import (
    DETAIL_LIMIT,
    CallFacts,
    ClaudeCall,
    Tool,
    ToolContext,
    ToolContract,
    ToolResult,
    one_line,
)
from coder.tools.bash.jobs import Jobs
from coder.tools.params import Params

UNSANDBOXED_NOTE = "[unsandboxed: --no-sandbox is on, this command ran with your full user rights]"


@dataclass(frozen=True)
class BashParams(Params):
    """tools/bash.json: a command, or a restart of the shell (or both: restart first)."""

    command: str | None = None
    #: seconds (default: `[sandbox] timeout`), capped by `[sandbox] max_timeout`
    timeout: float | None = key(None, above=0)
    restart: bool = False

    def check(self) -> None:
        if not self.restart and not (self.command or "").strip():
            raise SettingError("command", "nothing to run: give a `command` (or `restart: true` to restart the "
                                          "shell)")


class BashTool(Tool[BashParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract
        self._shell: Any = None
        self._network: Any = None
        self._jobs: Jobs | None = None
        self._lock = threading.Lock()

    def facts(self, params: BashParams) -> CallFacts:
        """A shell: the policy checks every part of the line, masking compares runs of the same command. A call
        without a command (a restart) runs the empty line."""
        line = params.command or ""
        return CallFacts(f"{self.contract.name}: {one_line(line or 'restart', 90)}", line[:DETAIL_LIMIT],
                         shell=line, maskable=self.contract.maskable)

    def claude_call(self, params: BashParams, cwd: Path) -> ClaudeCall:
        """Claude Code's `Bash`: the command, and the timeout in milliseconds."""
        call: dict[str, Any] = {"command": params.command or "", "description": ""}
        if params.timeout is not None:
            call["timeout"] = int(params.timeout * 1000)
        return ClaudeCall("Bash", call)

    def from_claude(self, updated: ClaudeCall, params: BashParams, cwd: Path) -> dict[str, Any]:
        """The hook's command and timeout (milliseconds, back in seconds); the rest of the call as it was."""
        out: dict[str, Any] = {"command": updated.input.get("command", params.command)}
        if params.restart:
            out["restart"] = True
        timeout = updated.input.get("timeout")
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
            out["timeout"] = timeout / 1000
        elif params.timeout is not None:
            out["timeout"] = params.timeout
        return out

    def _config(self, ctx: ToolContext) -> SandboxConfig:
        return ctx.config.sandbox

    def _shell_for(self, ctx: ToolContext, cfg: SandboxConfig) -> Any:
        shell = ctx.services.get("shell")
        if shell is None:
            workspace = ctx.workspace.resolve()
            cwd = ctx.cwd.resolve() if ctx.cwd else workspace
            if cwd != workspace and workspace not in cwd.parents:
                cwd = workspace

            network = network_for(ctx.services, cfg)  # the domain proxy, when a list is configured (issue 21)
            self._network = network
            shell = PersistentShell(workspace, cfg, sandboxed=cfg.enabled, cwd=cwd,
                                    network=network.link if network is not None else None,
                                    after_hooks=ctx.services.get("after_hooks"))  # what runs later: asked
            shell.start()
            ctx.services["shell"] = shell
            self._shell = shell
        return shell

    def run(self, params: BashParams, ctx: ToolContext) -> ToolResult:
        command, restart = params.command or "", params.restart
        cfg = self._config(ctx)
        timeout = params.timeout if params.timeout is not None else cfg.timeout
        notes: list[str] = []
        if timeout > cfg.max_timeout:
            if params.timeout is not None:
                notes.append(f"[timeout capped at {cfg.max_timeout:g}s by the sandbox config]")
            timeout = cfg.max_timeout
        if cfg.enabled:
            try:
                require_sandbox()
            except SandboxUnavailable as exc:
                return ToolResult(str(exc), is_error=True, data={"sandbox_unavailable": True, "exit_code": None,
                                                                  "timed_out": False, "truncated": False})
        job = None
        with self._lock:
            try:
                if restart:
                    shell = ctx.services.get("shell")
                    if shell is not None:
                        shell.close()
                        ctx.services.pop("shell", None)
                    shell = self._shell_for(ctx, cfg)
                    if not command.strip():
                        text = f"Shell restarted in {shell.cwd}."
                        if not cfg.enabled:
                            text += "\n" + UNSANDBOXED_NOTE
                        return ToolResult(text, data={"exit_code": 0, "timed_out": False, "truncated": False,
                                                      "restarted": True, "sandboxed": cfg.enabled})
                    notes.append("[the shell was restarted first]")
                shell = self._shell_for(ctx, cfg)
                if self._network is not None:
                    self._network.proxy.new_command()
                jobs = self._jobs = jobs_of(ctx)
                result = shell.run(command, float(timeout), cfg.idle_timeout, cancel=ctx.cancel,
                                   on_output=ctx.progress,  # a frontend shows the running command's last lines
                                   detach=ctx.detach if jobs.room() else None)
                if result.detached:  # the user's Ctrl+B: the shell, its sandbox and the command become a job
                    ctx.services.pop("shell", None)
                    self._shell = None
                    job = jobs.adopt(shell, command, result.output, time.monotonic() - result.duration)
            except (ShellError, ConfigError) as exc:
                ctx.services.pop("shell", None)
                return ToolResult(f"The shell could not run: {exc}", is_error=True,
                                  data={"exit_code": None, "timed_out": False, "truncated": False})
        text = result.output
        if result.detached:
            assert job is not None  # made above when the command was detached
            notes.append(f"[the user sent this command to the background after {result.duration:.1f}s, as job "
                         f"{job.id}: it keeps running in its sandbox. `bash_output` with id {job.id} shows what it "
                         "prints from here on and whether it ended (`kill: true` stops it). Your next bash command "
                         f"runs in a new shell in {result.cwd}: shell variables and functions stay with the job, "
                         "files in the workspace are shared, its /tmp and localhost are not]")
        if result.dropped_bytes:
            notes.append(f"[output passed {cfg.max_output_bytes} bytes: {result.dropped_bytes} more bytes were "
                         "dropped; redirect big outputs to a file and read parts of it]")
        notes += [f"[{note}]" for note in result.notes]
        if self._network is not None:
            notes += [f"[network: {message}]" for message in self._network.proxy.take_refusals()]
        if result.exit_code not in (0, None):
            notes.append(f"[exit code: {result.exit_code}]")
        if not cfg.enabled:
            notes.append(UNSANDBOXED_NOTE)
        notes += jobs.ended_notes()
        if not text.strip() and not notes:
            text = "(no output)"
        if notes:
            text = text + ("\n" if text and not text.endswith("\n") else "") + "\n".join(notes)
        clipped = clip_output(text, Path(ctx.state_dir), max_chars=cfg.max_output_chars)
        data = {
            "exit_code": result.exit_code, "timed_out": result.timed_out,
            "truncated": clipped.handle is not None or result.dropped_bytes > 0,
            "output_handle": clipped.handle, "cwd": result.cwd, "restarted": result.restarted,
            "sandboxed": cfg.enabled, "duration_ms": round(result.duration * 1000, 1),
        }
        if job is not None:
            data["background"] = job.id
        return ToolResult(clipped.text, is_error=False, data=data)

    def close(self) -> None:
        if self._jobs is not None:
            self._jobs.close()  # the session ends: background commands end with it
            self._jobs = None
        if self._shell is not None:
            self._shell.close()
            self._shell = None
        if self._network is not None:
            self._network.close()
            self._network = None


def jobs_of(ctx: ToolContext) -> Jobs:
    """The session's background jobs (made on first use); the engine's `background_ended` service, when there is
    one, tells the frontends that a job ended."""
    jobs = ctx.services.get("bash_jobs")
    if jobs is None:
        told = ctx.services.get("background_ended")
        jobs = ctx.services["bash_jobs"] = Jobs(Path(ctx.state_dir), told)
    return jobs
