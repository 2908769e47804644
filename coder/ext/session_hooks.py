"""The session's hooks: coder's own (`[hooks]` in TOML, coder/ext/hooks.py) and Claude Code's (JSON settings,
coder/ext/claude_hooks.py), both run, behind the one protocol the engine calls (coder/engine/hook_steps.py).

coder's hooks keep their events and meaning (before_tool after the permission, exit 2 blocks; after_tool,
turn_end, session_end, before_commit, notification); Claude Code's add theirs. Either may be absent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from coder.base import events as ev
from coder.config.sections import Config
from coder.ext.claude_hooks import ClaudeHookRunner
from coder.ext.hookapi import NO_VERDICT, HookVerdict
from coder.ext.hooks import HookRunner, parse_hooks
from coder.tools.base import ToolCall, ToolResult


class SessionHooks:
    def __init__(self, coder: HookRunner | None = None, claude: ClaudeHookRunner | None = None,
                 model: str = "") -> None:
        self.coder = coder
        self.claude = claude
        self.model = model

    def started(self, source: str) -> HookVerdict:
        return self.claude.session_start(source, self.model) if self.claude else NO_VERDICT

    def prompt(self, text: str) -> HookVerdict:
        return self.claude.prompt(text) if self.claude else NO_VERDICT

    def pre_tool(self, use_id: str, call: ToolCall) -> HookVerdict:
        return self.claude.pre_tool(use_id, call) if self.claude else NO_VERDICT

    def permission_request(self, call: ToolCall) -> HookVerdict:
        return self.claude.permission_request(call) if self.claude else NO_VERDICT

    def before_tool(self, call: ToolCall) -> str | None:
        """coder's own hooks read the call as the model wrote it (`{"tool": NAME, "input": {...}}`)."""
        return self.coder.before_tool(call.name, call.input) if self.coder else None

    def after_tool(self, use_id: str, call: ToolCall, result: ToolResult) -> HookVerdict:
        if self.coder:
            self.coder.after_tool(call.name, call.input, result)
        return self.claude.post_tool(use_id, call, result) if self.claude else NO_VERDICT

    def stopping(self, active: bool, last_text: str, subagent: bool = False) -> HookVerdict:
        return self.claude.stopping(active, last_text, subagent) if self.claude else NO_VERDICT

    def before_commit(self, message: str, diff: str) -> str | None:
        return self.coder.before_commit(message, diff) if self.coder else None

    def notification(self, kind: str, message: str) -> None:
        """A frontend notifies the user (not an engine event: the engine knows nothing of terminals)."""
        if self.coder:
            self.coder.notification(kind, message)
        if self.claude:
            self.claude.notification(kind, message)

    def on_event(self, event: ev.Event) -> None:
        if self.coder:
            self.coder.on_event(event)
        if self.claude is None:
            return
        if isinstance(event, ev.SessionEnd):
            self.claude.session_end({"done": "other", "interrupted": "prompt_input_exit"}.get(event.reason, "other"))
        elif isinstance(event, ev.CompactionStarted) and event.trigger == "auto":  # a summary is about to be made
            self.claude.pre_compact("auto")  # (coder's cheaper tiers, clipping and masking, are not compaction)

    def compacting(self, instructions: str) -> None:
        """`/compact`: PreCompact (trigger `manual`) before the summary is made."""
        if self.claude:
            self.claude.pre_compact("manual", instructions)


def hooks_from_config(config: Config, workspace: Path, session_id: str = "",
                      report: Callable[[str], None] | None = None,
                      claude: ClaudeHookRunner | None = None, model: str = "") -> SessionHooks | None:
    """The hooks of `[hooks]` and, when given, Claude Code's; None when there are none (the engine then skips
    the calls)."""
    hooks = parse_hooks(config.hooks)
    runner = HookRunner(hooks, workspace, config.sandbox, session_id, report) if hooks else None
    if claude is not None and not claude.hooks:
        claude = None
    return SessionHooks(runner, claude, model) if runner or claude else None
