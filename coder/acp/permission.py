"""Permission questions asked of the ACP client (`session/request_permission`), and its answer applied.

The engine asks only when the policy says `ask` (the same policy, modes and rules as every frontend); the client
then shows its own approval UI. Its choice maps back to a `PermissionAnswer`: "allow always" remembers the rule the
policy suggested for this session, as the REPL's `a` does. A cancelled question (the client cancelled the turn)
denies the call and stops the turn, like Esc in the REPL.
"""

from __future__ import annotations

from typing import Any

from acp import helpers
from acp.schema import PermissionOption

from coder.base import events as ev
from coder.policy.base import PermissionAnswer

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT_ONCE = "reject_once"


def options(request: ev.PermissionRequest) -> list[PermissionOption]:
    """What the client offers: always-allow only when the policy has a rule to remember (a protected path has
    none, so nothing can allow it for good)."""
    if isinstance(request, ev.PlanProposed):
        return [PermissionOption(option_id=ALLOW_ONCE, name="Approve the plan", kind="allow_once"),
                PermissionOption(option_id=REJECT_ONCE, name="Keep planning", kind="reject_once")]
    out = [PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once")]
    if request.suggested_rule:
        out.append(PermissionOption(option_id=ALLOW_ALWAYS, name=f"Always allow {request.suggested_rule} "
                                    "(this session)", kind="allow_always"))
    out.append(PermissionOption(option_id=REJECT_ONCE, name="Deny", kind="reject_once"))
    return out


def tool_call(request: ev.PermissionRequest, title: str, detail: str, diff: str = "", call_id: str = "") -> Any:
    """The tool call the question is about (`call_id`: the running call when the question has an id of its own,
    as a plan's approval has), with what the approval prompts of the other frontends show."""
    body = f"{detail}\n\n{request.reason}".strip() if request.reason else detail
    if isinstance(request, ev.PlanProposed):
        body = request.plan
    content = [helpers.tool_content(helpers.text_block(body))] if body else []
    if diff:
        content.append(helpers.tool_content(helpers.text_block(f"```diff\n{diff.rstrip()}\n```")))
    return helpers.update_tool_call(call_id or request.id, title=title, status="pending", content=content,
                                    raw_input=request.input)


def answer(response: Any, request: ev.PermissionRequest) -> tuple[PermissionAnswer, bool]:
    """(the engine's answer, whether the turn should stop) for the client's response."""
    outcome = getattr(response, "outcome", None)
    if outcome is None or getattr(outcome, "outcome", "") != "selected":
        return PermissionAnswer(False, message="the user cancelled the turn"), True
    chosen = getattr(outcome, "option_id", "")
    if chosen == ALLOW_ONCE:
        return PermissionAnswer(True), False
    if chosen == ALLOW_ALWAYS and request.suggested_rule:
        return PermissionAnswer(True, "session", request.suggested_rule), False
    return PermissionAnswer(False, message="the user denied this call"), False
