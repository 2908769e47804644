"""How plan decisions read (issue 19), in the app's conversation and the REPL's scrollback alike."""

from __future__ import annotations

from coder.base import events as ev


def plan_line(item: ev.PlanDecision) -> str:
    """One line for a decision."""
    if item.outcome == "approved":
        how = "from the plan file" if item.source == "file" else "by the user"
        return f"plan approved {how}; mode {item.mode}"
    if item.outcome == "revise":
        return "keep planning" + (f": {item.feedback}" if item.feedback else "")
    if item.outcome == "headless":
        return "plan recorded as the result (headless)"
    if item.outcome == "not_planning":
        return f"exit_plan outside plan mode (mode {item.mode}): nothing to approve"
    return "plan not approved" + (f": {item.feedback}" if item.feedback else "")
