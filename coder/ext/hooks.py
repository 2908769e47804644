"""User hooks: commands from config that run on session events.

    [[hooks.before_tool]]          # also: after_tool, before_commit, turn_end, session_end, notification
    match = "bash"                 # tool-name pattern (fnmatch), tool events only; default "*"
    command = "python3 .coder/check.py"
    timeout = 30                   # seconds (default 30)
    sandbox = true                 # default; false runs the hook on the host, as the user asked (below)

A hook receives the event as JSON on stdin. A before-hook (before_tool, before_commit) that exits 2 blocks the
action, and what it printed goes to the model as the reason. Any other failure (another exit code, a timeout) is
reported and the action goes on, so a broken hook cannot wedge a session; only exit 2 is a decision.

A host hook (`sandbox = false`, only from the user's own config) runs through the door (coder/host): `bash -c`
in a neutral folder, with the scrubbed environment and CODER_WORKSPACE naming the workspace. One whose command
names a file in the workspace (`python3 scripts/check.py`) runs in the sandbox all the same, and the session says
so once: the sandboxed shell can rewrite that file, and on the host it would run whatever the model left there
(coder/trust/commands.py). The files it names are read-only in the sandbox (coder/trust/protected.py).

`notification` hooks run when the app or the REPL notifies the user (a turn ended, a permission question waits;
`[notifications] when` decides, see coder/frontend/notify.py) with {"kind": "turn_end" | "permission", "message"}.
"""

from __future__ import annotations

import fnmatch
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from coder.base import events as ev
from coder.config.programs import HooksSettings
from coder.host import TimeoutExpired, safe_env, scrubbed_env
from coder.host import run as host_run
from coder.sandbox.exec import run_sandboxed
from coder.sandbox.profile import SandboxConfig
from coder.tools.base import ToolResult
from coder.trust.commands import WorkspaceUse, shell_use
from coder.trust.protected import protect_command_files

EVENTS = tuple(f.name for f in fields(HooksSettings))
BLOCK_EXIT = 2
OUTPUT_CAP = 4000


@dataclass
class Hook:
    event: str
    command: str
    match: str = "*"
    timeout: float = 30.0
    sandbox: bool = True


@dataclass
class HookOutcome:
    exit_code: int | None
    output: str  # stdout and stderr as they came
    timed_out: bool
    stdout: str = ""
    stderr: str = ""

    @property
    def blocks(self) -> bool:
        return self.exit_code == BLOCK_EXIT


def run_hook_command(command: str, workspace: Path, sandbox: SandboxConfig | None, timeout: float, stdin: str,
                     on_host: bool, env: dict[str, str] | None = None, purpose: str = "a hook") -> HookOutcome:
    """Run one hook command with `stdin`, in the sandbox or (`on_host`, see `host_or_sandbox`) through the door,
    keeping its stdout and stderr apart (a Claude Code hook answers in JSON on stdout, its reasons on stderr).

    In the sandbox, the one-shot runner merges the two streams, so the command runs under a wrapper that sends
    its stderr to a file of the sandbox's private /tmp and appends it after a marker nobody can guess."""
    if not on_host:
        mark = secrets.token_hex(16)
        wrapper = ('f=$(mktemp) || exit 125; /bin/bash -c "$CODER_HOOK_COMMAND" 2>"$f"; rc=$?; '
                   f'printf "\\n{mark}\\n"; cat "$f"; exit $rc')
        run = run_sandboxed(wrapper, workspace, sandbox, timeout, stdin=stdin,
                            env={**(env or {}), "CODER_HOOK_COMMAND": command})
        out, found, err = run.output.partition(f"\n{mark}\n")
        if not found:
            out, err = run.output, ""
        return HookOutcome(run.exit_code, (out + err)[-OUTPUT_CAP:], run.timed_out, out, err)
    try:
        proc = host_run(["/bin/bash", "-c", command], purpose=purpose, input=stdin, text=True, timeout=timeout,
                        env=host_env(workspace, env))
    except TimeoutExpired:
        return HookOutcome(None, "", True)
    except OSError as exc:
        return HookOutcome(126, f"could not start: {exc}", False, "", f"could not start: {exc}")
    return HookOutcome(proc.returncode, (proc.stdout + proc.stderr)[-OUTPUT_CAP:], False, proc.stdout, proc.stderr)


def host_env(workspace: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A host hook's environment: the scrubbed one, CODER_WORKSPACE and what the hook's kind adds."""
    return safe_env({**scrubbed_env(), "CODER_WORKSPACE": str(workspace), **(extra or {})})


def host_or_sandbox(command: str, workspace: Path, env: dict[str, str]) -> str:
    """Where a hook that asks for the host runs: "" on the host; otherwise what it names in the workspace, which
    the sandboxed shell can rewrite, so it runs in the sandbox (coder/trust/commands.py)."""
    use = shell_use(command, workspace, env)
    if use is not None and not use.any:
        return ""
    return ", ".join(use.paths) if use is not None else \
        "something only the shell can tell (a $(...), a variable it does not know)"


def parse_hooks(section: HooksSettings) -> list[Hook]:
    """The configured hooks (checked at load: coder/config/programs.py `HooksSettings`), event by event."""
    return [Hook(event, e.command, e.match, e.timeout, e.sandbox) for event in EVENTS for e in getattr(section, event)]


class HookRunner:
    """Implements the engine's Hooks protocol over the configured commands."""

    def __init__(self, hooks: list[Hook], workspace: Path, sandbox: SandboxConfig | None = None,
                 session_id: str = "", report: Callable[[str], None] | None = None) -> None:
        """`sandbox`: the session's `[sandbox]`, which the sandboxed hooks run in."""
        self.hooks = hooks
        self.workspace = workspace
        self.sandbox = sandbox
        self.report = report or (lambda message: None)
        self.session_id = session_id
        self._said: set[str] = set()
        for hook in hooks:  # what a host hook names stays as the user wrote it: read-only to the sandbox
            use = self.workspace_use(hook) if not hook.sandbox else None
            if use is not None:
                protect_command_files(workspace, use.files)

    def workspace_use(self, hook: Hook) -> WorkspaceUse | None:
        """What a host hook names in the workspace (coder/trust/commands.py); None when that cannot be known."""
        return shell_use(hook.command, self.workspace, host_env(self.workspace))

    def _on_host(self, hook: Hook) -> bool:
        """Whether `hook` runs on the host: asked for, and naming nothing in the workspace."""
        if hook.sandbox:
            return False
        what = host_or_sandbox(hook.command, self.workspace, host_env(self.workspace))
        if what and hook.command not in self._said:
            self._said.add(hook.command)
            self.report(f"hook `{hook.command}` ({hook.event}) asks for the host but names {what} in the "
                        "workspace, which the sandbox can rewrite: it runs in the sandbox")
        return not what

    def _run(self, hook: Hook, payload: dict[str, Any]) -> HookOutcome:
        data = json.dumps({"event": hook.event, "session_id": self.session_id, "workspace": str(self.workspace),
                           **payload}, ensure_ascii=False, default=str)
        outcome = run_hook_command(hook.command, self.workspace, self.sandbox, hook.timeout, data,
                                   self._on_host(hook), purpose=f"the {hook.event} hook")
        if outcome.timed_out:
            self.report(f"hook `{hook.command}` ({hook.event}) timed out after {hook.timeout:g}s; ignored")
        elif outcome.exit_code not in (0, BLOCK_EXIT):
            self.report(f"hook `{hook.command}` ({hook.event}) exited {outcome.exit_code}: "
                        f"{outcome.output.strip()[:300]}")
        return outcome

    def _matching(self, event: str, tool: str | None = None) -> list[Hook]:
        return [h for h in self.hooks if h.event == event and (tool is None or fnmatch.fnmatchcase(tool, h.match))]

    def _first_block(self, event: str, payload: dict[str, Any], tool: str | None = None) -> str | None:
        for hook in self._matching(event, tool):
            outcome = self._run(hook, payload)
            if outcome.blocks:
                return outcome.output.strip() or f"hook `{hook.command}` blocked this ({event})"
        return None

    # ---- the engine's Hooks protocol --------------------------------------------------------------------------
    def before_tool(self, tool: str, args: dict[str, Any]) -> str | None:
        return self._first_block("before_tool", {"tool": tool, "input": args}, tool)

    def after_tool(self, tool: str, args: dict[str, Any], result: ToolResult) -> None:
        for hook in self._matching("after_tool", tool):
            self._run(hook, {"tool": tool, "input": args, "output": result.output, "is_error": result.is_error})

    def before_commit(self, message: str, diff: str) -> str | None:
        return self._first_block("before_commit", {"message": message, "diff": diff})

    def notification(self, kind: str, message: str) -> None:
        """A frontend notifies the user (not an engine event: the engine knows nothing of terminals)."""
        for hook in self._matching("notification"):
            self._run(hook, {"kind": kind, "message": message})

    def on_event(self, event: ev.Event) -> None:
        if isinstance(event, (ev.TurnEnd, ev.SessionEnd)):
            for hook in self._matching(event.type):
                self._run(hook, event.to_dict())
