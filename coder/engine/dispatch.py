"""One tool call's way from the model's answer to its result: the door (`parse_call`, once), the PreToolUse hooks
(which may stop the turn, rewrite the call, or answer for the policy), the permission policy and the person's
answer, coder's own `before_tool` hooks, the tool with its live output, the PostToolUse hooks. The order is
coder/engine/hook_steps.py's. The session (coder/engine/session.py) hands each call here and hears back through
`emit` (the events) and `account` (what the result spent and changed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, replace

from coder.base import events as ev
from coder.base.errors import ToolError
from coder.engine.hook_steps import hook_permission, noted, with_feedback
from coder.engine.live_output import LiveOutput
from coder.engine.session_parts import SessionParts
from coder.ext.hookapi import NO_VERDICT, HookVerdict
from coder.models.types import Message, ToolResultBlock, ToolUseBlock
from coder.tools.base import ToolCall, ToolResult, parse_call
from coder.tools.params import ToolInputError
from coder.tools.tool_search_tool import not_loaded


class Dispatch:
    """The tool calls of one session. `stop`: what a hook's `continue: false` during the last call said, or None."""

    def __init__(self, parts: SessionParts, emit: Callable[[ev.Event], None],
                 account: Callable[[ToolResult], None]) -> None:
        self.parts = parts
        self.emit = emit
        self.account = account
        self.stop: str | None = None

    def call(self, use: ToolUseBlock, history: list[Message]) -> ToolResultBlock:
        parts = self.parts
        self.stop = None
        self.emit(ev.ToolCallRequested(use.id, use.name, use.input))
        tool = parts.tools.get(use.name)
        if tool is None:
            known = ", ".join(sorted(parts.tools))
            return self.finish(use, ToolResult(f"Unknown tool {use.name!r}. Available tools: {known}.", True))
        unloaded = not_loaded(parts.tools, use.name, history)
        if unloaded:  # a deferred tool never loaded: the model has no definition of it, its input is a guess
            return self.finish(use, ToolResult(unloaded, True))
        try:
            call = parse_call(tool, use.input)  # the one door: every step below asks the call's params
        except ToolInputError as exc:
            return self.finish(use, ToolResult(str(exc), True))
        gate = noted(parts.hooks.pre_tool(use.id, call), self.emit) if parts.hooks else NO_VERDICT
        if gate.stop is not None:
            self.stop = gate.stop
            return self.not_run(use, f"a hook stopped the turn ({gate.stop})")
        if gate.updated_input is not None:  # the hook rewrote the call: what runs comes through the door again
            try:
                call = parse_call(tool, gate.updated_input)
            except ToolInputError as exc:
                return self.finish(use, ToolResult(f"A hook rewrote this call's input wrongly: {exc}", True))
            use = replace(use, input=call.input)
        blocked = self._permission(use, call, gate)
        if blocked is not None:
            return blocked
        if parts.hooks is not None:
            reason = parts.hooks.before_tool(call)
            if reason is not None:
                self.emit(ev.ToolCallDenied(use.id, use.name, reason, "hook"))
                return self.finish(use, ToolResult(f"Blocked by a hook: {reason}", True))
        started = time.monotonic()
        live = LiveOutput(lambda text: self.emit(ev.ToolOutput(use.id, text)))  # shown as it comes, bounded
        parts.tool_ctx.progress = live
        parts.tool_ctx.detach.clear()  # a Ctrl+B meant for an earlier call
        try:
            result = call.tool.run(call.params, parts.tool_ctx)
        except ToolError as exc:
            result = ToolResult(str(exc), True)
        except Exception as exc:  # noqa: BLE001 - a tool bug is a result the model can read, never a crash
            result = ToolResult(f"{use.name} failed: {type(exc).__name__}: {exc}", True)
        finally:
            parts.tool_ctx.progress = None
            live.close()  # nothing of this call's live output comes after its result
        if parts.hooks is not None:
            feedback = noted(parts.hooks.after_tool(use.id, call, result), self.emit)
            result = with_feedback(result, feedback)
            self.stop = feedback.stop
        return self.finish(use, result, time.monotonic() - started)

    def _permission(self, use: ToolUseBlock, call: ToolCall, gate: HookVerdict = NO_VERDICT) -> ToolResultBlock | None:
        """None when the call may run; otherwise the denial result. `gate` is what the PreToolUse hooks said."""
        parts = self.parts
        permission = call.tool.permission_for(call.params, parts.tool_ctx)
        facts = call.tool.facts(call.params)
        decision = hook_permission(parts.policy.decide(use.name, permission, use.input, facts), gate)
        if decision.action == "ask" and parts.hooks is not None:  # a PermissionRequest hook may answer first
            asked = noted(parts.hooks.permission_request(call), self.emit)
            if asked.permission in ("allow", "deny"):
                decision = hook_permission(decision, asked, answers_question=True)
        if decision.action == "ask":
            request = ev.PermissionRequest(use.id, use.name, use.input, decision.reason, decision.suggested_rule)
            self.emit(request)
            answer = parts.ask(request)
            if answer.allow:
                if answer.remember:
                    parts.policy.remember(answer)
                self.emit(ev.ToolCallApproved(use.id, use.name, answer.rule, "user", answer.remember))
                return None
            reason = answer.message or "the user denied this call"
            self.emit(ev.ToolCallDenied(use.id, use.name, reason, "user"))
            return self.finish(use, ToolResult(f"Permission denied: {reason}.", True))
        if decision.action == "deny" and decision.rule == "hook":
            self.emit(ev.ToolCallDenied(use.id, use.name, decision.reason, "hook"))
            return self.finish(use, ToolResult(f"Blocked by a hook: {decision.reason}", True))
        if decision.action == "deny":
            self.emit(ev.ToolCallDenied(use.id, use.name, decision.reason, "policy"))
            return self.finish(use, ToolResult(f"Permission denied by policy ({decision.rule}): {decision.reason}",
                                               True))
        self.emit(ev.ToolCallApproved(use.id, use.name, decision.rule, "hook" if decision.rule == "hook" else "policy"))
        return None

    def finish(self, use: ToolUseBlock, result: ToolResult, duration: float = 0.0) -> ToolResultBlock:
        """The call's result: accounted, told, and as the model reads it."""
        self.account(result)
        self.emit(ev.ToolCallFinished(use.id, use.name, use.input, result.output, result.is_error,
                                      list(result.files_changed), round(duration, 4), result.data,
                                      [asdict(i) for i in result.images]))
        return ToolResultBlock(use.id, result.output, result.is_error,  # the tools a tool search loads:
                               tool_references=list(result.data.get("tool_references", [])),
                               images=list(result.images))

    def not_run(self, use: ToolUseBlock, why: str) -> ToolResultBlock:
        return self.finish(use, ToolResult(f"Not run: {why}.", True))
