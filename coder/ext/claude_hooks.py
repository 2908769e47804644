"""Claude Code's hooks, as its hooks reference documents them, run at the matching moments of a coder session.

    {"hooks": {"PreToolUse": [{"matcher": "Bash|Edit",
                               "hooks": [{"type": "command", "timeout": 30,
                                          "command": "\\"$CLAUDE_PROJECT_DIR\\"/.claude/hooks/check.sh"}]}]}}

from `~/.claude/settings.json` (the user's), `.claude/settings.json` and `.claude/settings.local.json` (the
repository's, only when it is trusted) and the `hooks/hooks.json` of each enabled plugin (coder/ext/plugins.py).

- Events: PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop, SubagentStop,
  SessionStart, SessionEnd, PreCompact, Notification. Others are reported once and ignored.
- Matchers: tool events match the tool's Claude Code name (`Bash`, `Edit`, `mcp__github__.*`, what each tool says
  of itself: `Tool.claude_call`) or coder's own name, as a regular expression over the whole name; empty or `*`
  matches everything. SessionStart matches its source, SessionEnd its reason, PreCompact its trigger,
  Notification its type.
- Input: the documented JSON on stdin (session_id, transcript_path, cwd, permission_mode, hook_event_name and
  the event's fields, tool_input as Claude Code shapes it). Environment: CLAUDE_PROJECT_DIR, CLAUDE_PLUGIN_ROOT
  (plugin hooks), CODER_WORKSPACE. Timeout: the hook's `timeout` in seconds, default 60. Every matching hook runs
  at once; identical commands run once.
- Output: exit 0 with JSON (`continue`/`stopReason`, `systemMessage`, `decision`/`reason`, `hookSpecificOutput`
  with `permissionDecision`, `updatedInput`, `additionalContext`), or plain stdout (context for UserPromptSubmit
  and SessionStart); exit 2 blocks with stderr as the reason, as each event documents; any other exit is reported
  to the user and the session goes on.

Where they run and what they may decide (docs/decisions/37-claude-code-compat.md): the user's and plugins' hooks
run on the host like coder's `sandbox = false` hooks (and, like them, in the sandbox when the command names
something in the workspace); the repository's run in the sandbox like its `[hooks]`, and
can narrow what happens but never widen it: their `allow` decisions are dropped (the policy decides), their `deny`,
`ask`, blocks, rewrites (checked by the policy again) and context count.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.ext.hookapi import NO_VERDICT, HookVerdict
from coder.ext.hooks import BLOCK_EXIT, HookOutcome, host_env, host_or_sandbox, run_hook_command
from coder.ext.manifests import ClaudeHooks
from coder.sandbox.profile import SandboxConfig
from coder.tools.base import ClaudeCall, ToolCall, ToolResult
from coder.trust.commands import shell_use
from coder.trust.protected import protect_command_files

TOOL_EVENTS = ("PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure")
EVENTS = (*TOOL_EVENTS, "UserPromptSubmit", "Stop", "SubagentStop", "SessionStart", "SessionEnd", "PreCompact",
          "Notification")
#: the payload field a non-tool event's matcher is matched against
MATCHED_FIELD = {"SessionStart": "source", "SessionEnd": "reason", "PreCompact": "trigger",
                 "Notification": "notification_type"}
#: coder's permission modes by the names Claude Code's hooks read
PERMISSION_MODES = {"plan": "plan", "ask": "default", "auto-edit": "acceptEdits", "auto": "bypassPermissions"}
DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class ClaudeHook:
    event: str
    matcher: str
    command: str
    timeout: float = DEFAULT_TIMEOUT
    #: where it came from, for messages: `~/.claude/settings.json`, `.claude/settings.json`, `plugin NAME`
    source: str = ""
    #: True for the repository's hooks: run in the sandbox, and their `allow` decisions never count
    repository: bool = False
    plugin_root: str = ""

    def matches(self, subjects: tuple[str, ...]) -> bool:
        if self.matcher in ("", "*") or not subjects:
            return True
        try:
            pattern = re.compile(self.matcher)
        except re.error:
            return self.matcher in subjects
        return any(pattern.fullmatch(s) for s in subjects)


def parse_claude_hooks(hooks: ClaudeHooks, source: str, *, repository: bool = False, plugin_root: str = "",
                       notes: list[str] | None = None) -> list[ClaudeHook]:
    """The command hooks of one settings file's `hooks` object, already checked (ClaudeHooks: coder/ext/
    manifests.py). An event coder has no moment for, or a hook type other than `command`, is noted and skipped."""
    notes = notes if notes is not None else []
    out: list[ClaudeHook] = []
    for event, groups in hooks.items():
        where = f"{source}: hooks.{event}"
        if event not in EVENTS:
            notes.append(f"{where}: coder has no {event} moment; ignored (it runs {', '.join(EVENTS)})")
            continue
        for i, group in enumerate(groups):
            for j, entry in enumerate(group.hooks):
                if entry.type != "command":
                    notes.append(f"{where}[{i}].hooks[{j}]: type {entry.type!r} is not supported by coder "
                                 "(only command hooks); ignored")
                    continue
                out.append(ClaudeHook(event, group.matcher, entry.command, entry.timeout, source, repository,
                                      plugin_root))
    return out


class ClaudeHookRunner:
    """Runs the Claude Code hooks of one session; every method returns what they decided as a `HookVerdict`."""

    def __init__(self, hooks: list[ClaudeHook], workspace: Path, cwd: Path, sandbox: SandboxConfig | None,
                 session_id: str, mode: Callable[[], str],
                 report: Callable[[str], None] | None = None) -> None:
        """`sandbox`: the session's `[sandbox]`, which the repository's hooks (and host hooks that name the
        workspace) run in."""
        self.hooks = hooks
        self.workspace, self.cwd, self.sandbox, self.session_id = workspace, cwd, sandbox, session_id
        self.mode = mode
        self.report = report or (lambda message: None)
        self._said: set[str] = set()
        for hook in hooks:  # what a host hook names stays as the user wrote it: read-only to the sandbox
            use = None if hook.repository else shell_use(hook.command, workspace, host_env(workspace, self._env(hook)))
            if use is not None:
                protect_command_files(workspace, use.files)

    # ---- the events ---------------------------------------------------------------------------------------------
    def pre_tool(self, use_id: str, call: ToolCall) -> HookVerdict:
        theirs = call.tool.claude_call(call.params, self.cwd)
        verdict = self.fire("PreToolUse", {"tool_name": theirs.name, "tool_input": theirs.input,
                                           "tool_use_id": use_id}, (theirs.name, call.name))
        return self._own_input(verdict, call, theirs)

    def permission_request(self, call: ToolCall) -> HookVerdict:
        theirs = call.tool.claude_call(call.params, self.cwd)
        verdict = self.fire("PermissionRequest", {"tool_name": theirs.name, "tool_input": theirs.input,
                                                  "permission_suggestions": []}, (theirs.name, call.name))
        return self._own_input(verdict, call, theirs)

    def post_tool(self, use_id: str, call: ToolCall, result: ToolResult) -> HookVerdict:
        theirs = call.tool.claude_call(call.params, self.cwd)
        payload: dict[str, Any] = {"tool_name": theirs.name, "tool_input": theirs.input, "tool_use_id": use_id}
        if result.is_error:
            return self.fire("PostToolUseFailure", {**payload, "error": result.output, "is_interrupt": False},
                             (theirs.name, call.name))
        return self.fire("PostToolUse", {**payload, "tool_response": {"output": result.output,
                                                                      "files_changed": result.files_changed}},
                         (theirs.name, call.name))

    def prompt(self, text: str) -> HookVerdict:
        return self.fire("UserPromptSubmit", {"prompt": text})

    def stopping(self, active: bool, last_text: str, subagent: bool) -> HookVerdict:
        return self.fire("SubagentStop" if subagent else "Stop",
                         {"stop_hook_active": active, "last_assistant_message": last_text})

    def session_start(self, source: str, model: str) -> HookVerdict:
        return self.fire("SessionStart", {"source": source, "model": model})

    def session_end(self, reason: str) -> None:
        self.fire("SessionEnd", {"reason": reason})

    def pre_compact(self, trigger: str, instructions: str = "") -> None:
        self.fire("PreCompact", {"trigger": trigger, "custom_instructions": instructions})

    def notification(self, kind: str, message: str) -> None:
        kinds = {"permission": "permission_prompt", "turn_end": "idle_prompt"}
        self.fire("Notification", {"message": message, "notification_type": kinds.get(kind, kind)})

    # ---- running ------------------------------------------------------------------------------------------------
    def fire(self, event: str, fields: dict[str, Any], tool_names: tuple[str, ...] = ()) -> HookVerdict:
        """Run every hook of `event` that matches, at once (identical commands once), and merge their verdicts."""
        subjects = tool_names or ((str(fields[MATCHED_FIELD[event]]),) if event in MATCHED_FIELD else ())
        chosen: dict[tuple[str, bool, str], ClaudeHook] = {}
        for hook in self.hooks:
            if hook.event == event and hook.matches(subjects):
                chosen.setdefault((hook.command, hook.repository, hook.plugin_root), hook)
        if not chosen:
            return NO_VERDICT
        payload = json.dumps({"session_id": self.session_id, "transcript_path": "", "cwd": str(self.cwd),
                              "permission_mode": PERMISSION_MODES.get(self.mode(), "default"),
                              "hook_event_name": event, **fields}, ensure_ascii=False, default=str)
        hooks = list(chosen.values())
        with ThreadPoolExecutor(max_workers=min(8, len(hooks))) as pool:
            outcomes = list(pool.map(lambda h: self._run(h, payload), hooks))
        verdict = HookVerdict()
        for hook, outcome in zip(hooks, outcomes, strict=True):
            verdict = verdict.merge(self._read(hook, outcome))
        return verdict

    def _env(self, hook: ClaudeHook) -> dict[str, str]:
        env = {"CLAUDE_PROJECT_DIR": str(self.workspace), "CODER_WORKSPACE": str(self.workspace)}
        if hook.plugin_root:
            env["CLAUDE_PLUGIN_ROOT"] = hook.plugin_root
        return env

    def _on_host(self, hook: ClaudeHook, env: dict[str, str]) -> bool:
        """The user's and plugins' hooks run on the host unless they name something in the workspace (issue 29's
        rule for every host hook: coder/ext/hooks.py `host_or_sandbox`); the repository's never do."""
        if hook.repository:
            return False
        what = host_or_sandbox(hook.command, self.workspace, host_env(self.workspace, env))
        if what and hook.command not in self._said:
            self._said.add(hook.command)
            self.report(f"{hook.event} hook `{hook.command}` ({hook.source}) names {what} in the workspace, which "
                        "the sandbox can rewrite: it runs in the sandbox")
        return not what

    def _run(self, hook: ClaudeHook, payload: str) -> HookOutcome:
        env = self._env(hook)
        try:
            return run_hook_command(hook.command, self.workspace, self.sandbox, hook.timeout, payload,
                                    self._on_host(hook, env), env, purpose=f"the {hook.event} hook")
        except Exception as exc:  # noqa: BLE001 - a hook that cannot start is reported, the session goes on
            return HookOutcome(None, "", False, "", f"could not start: {exc}")

    def _read(self, hook: ClaudeHook, outcome: HookOutcome) -> HookVerdict:
        """One hook's outcome as its event documents it."""
        name = f"{hook.event} hook `{hook.command}` ({hook.source})"
        if outcome.timed_out:
            return HookVerdict(notes=[f"{name} timed out after {hook.timeout:g}s; ignored"])
        stderr = outcome.stderr.strip()
        if outcome.exit_code == BLOCK_EXIT:
            return _blocked(hook.event, stderr or f"blocked by {name}")
        if outcome.exit_code != 0:
            return HookVerdict(notes=[f"{name} exited {outcome.exit_code}: {stderr[:300]}"])
        text = outcome.stdout.strip()
        try:
            answer = json.loads(text) if text.startswith("{") else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            plain = hook.event in ("UserPromptSubmit", "SessionStart") and text
            return HookVerdict(context=[text] if plain else [])
        verdict = _answered(hook.event, answer)
        if hook.repository and verdict.permission == "allow":  # a repository's hook never widens the policy
            verdict.permission, verdict.permission_reason = None, ""
        return verdict

    def _own_input(self, verdict: HookVerdict, call: ToolCall, theirs: ClaudeCall) -> HookVerdict:
        """A rewritten input, in Claude Code's shape, back in the tool's own (which the engine parses again)."""
        if verdict.updated_input is not None:
            rewritten = ClaudeCall(theirs.name, verdict.updated_input)
            verdict.updated_input = call.tool.from_claude(rewritten, call.params, self.cwd)
        return verdict


def _blocked(event: str, reason: str) -> HookVerdict:
    """Exit code 2: what it means for each event (Claude Code's hooks reference, "Exit code 2 behavior")."""
    if event in ("PreToolUse", "PermissionRequest"):
        return HookVerdict(permission="deny", permission_reason=reason)
    if event in ("PostToolUse", "PostToolUseFailure"):
        return HookVerdict(context=[reason])  # the tool already ran: the model reads why
    if event in ("UserPromptSubmit", "Stop", "SubagentStop"):
        return HookVerdict(block=reason)
    return HookVerdict(notes=[reason])  # SessionStart, SessionEnd, PreCompact, Notification: the user sees it


def _answered(event: str, answer: dict[str, Any]) -> HookVerdict:
    """Exit code 0 with a JSON object: the common fields and the event's own."""
    verdict = HookVerdict()
    if answer.get("continue") is False:
        verdict.stop = str(answer.get("stopReason") or f"a {event} hook stopped the turn")
    if isinstance(answer.get("systemMessage"), str):
        verdict.notes.append(answer["systemMessage"])
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    if isinstance(specific.get("additionalContext"), str) and specific["additionalContext"]:
        verdict.context.append(specific["additionalContext"])
    decision, reason = answer.get("decision"), str(answer.get("reason") or "")
    if event == "PreToolUse":
        permission = specific.get("permissionDecision") or {"approve": "allow", "block": "deny"}.get(str(decision))
        if permission in ("allow", "deny", "ask"):
            verdict.permission = permission
            verdict.permission_reason = str(specific.get("permissionDecisionReason") or reason)
        if isinstance(specific.get("updatedInput"), dict):
            verdict.updated_input = specific["updatedInput"]
    elif event == "PermissionRequest":
        chosen = specific.get("decision")
        chosen = chosen if isinstance(chosen, dict) else {}
        if chosen.get("behavior") in ("allow", "deny"):
            verdict.permission = chosen["behavior"]
            verdict.permission_reason = str(chosen.get("message") or "")
            if chosen.get("interrupt") is True and chosen["behavior"] == "deny":
                verdict.stop = verdict.permission_reason or "a PermissionRequest hook stopped the turn"
        if isinstance(chosen.get("updatedInput"), dict):
            verdict.updated_input = chosen["updatedInput"]
    elif decision == "block" and event in ("PostToolUse", "PostToolUseFailure"):
        verdict.context.insert(0, reason or f"a {event} hook objected")
    elif decision == "block" and event in ("UserPromptSubmit", "Stop", "SubagentStop"):
        verdict.block = reason or f"blocked by a {event} hook"
    return verdict
