"""The hooks as the loop sees them: the protocol the session calls, and how a hook's verdict meets the policy's.

Order around one tool call, as Claude Code documents it: PreToolUse hooks first (they may deny, ask, allow or
rewrite the call), then the permission policy on the call as it will run, then PermissionRequest hooks when the
policy would ask the user (they may answer for the user), then coder's own `before_tool` hooks, the tool, and the
PostToolUse hooks (what they say is added to the result the model reads).

A hook never overrides a deny, and never skips the question on a protected path (coder/trust/protected.py). A
PreToolUse `allow` skips only the question the permission mode would ask, not one an `ask` rule asks (Claude
Code: "allow skips the prompt but not deny or ask rules"); a PermissionRequest `allow` answers that question
for the user. The repository's hooks cannot allow at all (coder/ext/claude_hooks.py drops their `allow`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from coder.base import events as ev
from coder.ext.hookapi import HookVerdict
from coder.policy.base import Decision
from coder.tools.base import ToolCall, ToolResult

#: the policy's rule for the questions that no hook may answer
PROTECTED_RULE = "protected"


class Hooks(Protocol):
    """The session's hooks (coder/ext/session_hooks.py: coder's own and Claude Code's together)."""

    def started(self, source: str) -> HookVerdict: ...

    def prompt(self, text: str) -> HookVerdict: ...

    def pre_tool(self, use_id: str, call: ToolCall) -> HookVerdict: ...

    def permission_request(self, call: ToolCall) -> HookVerdict: ...

    def before_tool(self, call: ToolCall) -> str | None:
        """coder's own `before_tool` hooks, after the permission: a reason to block the call, or None."""
        ...

    def after_tool(self, use_id: str, call: ToolCall, result: ToolResult) -> HookVerdict: ...

    def stopping(self, active: bool, last_text: str, subagent: bool = False) -> HookVerdict: ...

    def compacting(self, instructions: str) -> None:
        """The user asked for a compaction (`/compact`): before it is made."""
        ...

    def on_event(self, event: ev.Event) -> None: ...


def hook_permission(decision: Decision, verdict: HookVerdict, answers_question: bool = False) -> Decision:
    """The policy's `decision` once a hook's permission verdict is taken into account (see the module's rules).
    `answers_question`: a PermissionRequest hook's, which may answer an ask rule's question too."""
    reason = verdict.permission_reason
    if verdict.permission is None or decision.action == "deny":
        return decision
    if verdict.permission == "deny":
        return Decision("deny", reason or "a hook denied this call", rule="hook")
    if verdict.permission == "ask":
        if decision.action == "allow":
            return Decision("ask", reason or "a hook asks for your approval", rule="hook")
        return decision
    if decision.action != "ask" or decision.rule == PROTECTED_RULE:
        return decision
    if decision.rule and decision.rule != "hook" and not answers_question:
        return decision  # an ask rule's question: only the user (or a PermissionRequest hook) answers it
    return Decision("allow", reason or "allowed by a hook", rule="hook")


def with_feedback(result: ToolResult, verdict: HookVerdict) -> ToolResult:
    """A tool's result with what PostToolUse hooks said about it, which the model reads."""
    if not verdict.context:
        return result
    said = "\n".join(f"[PostToolUse hook] {text}" for text in verdict.context)
    return replace(result, output=f"{result.output}\n\n{said}")


def noted(verdict: HookVerdict, emit: Callable[[ev.Event], None]) -> HookVerdict:
    """A hook's verdict, once what it tells the user is said."""
    for note in verdict.notes:
        emit(ev.ErrorEvent(f"hook: {note}"))
    return verdict
