"""`exit_plan`: the model hands its plan to the user, who approves it or asks for more planning (issue 19).

The tool only words the outcome for the model. Asking the user, switching the permission mode and pinning the
approved plan is the session's `plan_approval` service (coder/engine/work.py), injected by the engine the way
the `task` tool gets its spawner, so this module never imports the engine. A session without the service (a
subagent) is told to report its plan as its answer instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from coder.base.errors import ToolError
from coder.base.settings import SettingError
from coder.tools.base import CallFacts, Tool, ToolContext, ToolContract, ToolResult, one_line
from coder.tools.params import Params

MAX_PLAN_CHARS = 40_000


@dataclass(frozen=True)
class PlanVerdict:
    """What became of a proposed plan. `outcome`: approved | revise | rejected | headless | not_planning."""

    outcome: str
    #: the permission mode the session continues in (approved), or is in (not_planning)
    mode: str = ""
    #: what the user wrote: the feedback to plan on with (revise), or a note with the approval
    feedback: str = ""


def verdict_text(verdict: PlanVerdict) -> str:
    """The result the model reads for each outcome."""
    feedback = verdict.feedback.strip()
    if verdict.outcome == "approved":
        text = (f"The user approved the plan. Plan mode is over: the session is now in {verdict.mode} mode. Carry "
                "out the plan step by step; for work of several steps, write the task list (todo) first and keep "
                "it up to date.")
        return text + (f"\nThe user added: {feedback}" if feedback else "")
    if verdict.outcome == "revise":
        return ("The user did not approve the plan yet and wants you to keep planning (still in plan mode, read "
                f"only). Their feedback:\n{feedback or '(none given)'}\nRevise the plan, then call exit_plan again.")
    if verdict.outcome == "headless":
        return ("The plan is recorded as the result of this headless run: nobody can approve it here. End your "
                "turn now without calling more tools; the user reviews the plan and starts the work from it "
                "(coder run --plan-file).")
    if verdict.outcome == "not_planning":
        return (f"The session is not in plan mode (it is in {verdict.mode} mode), so no plan needs approving: go "
                "on with the work.")
    return ("The user stopped before approving the plan" + (f": {feedback}" if feedback else ".") +
            " Do not carry it out; end your turn.")


@dataclass(frozen=True)
class PlanParams(Params):
    """tools/exit_plan.json: the plan in Markdown."""

    plan: str

    def check(self) -> None:
        plan = self.plan.strip()
        if not plan:
            raise SettingError("plan", "the plan is empty: write it in Markdown in `plan`")
        if len(plan) > MAX_PLAN_CHARS:
            raise SettingError("plan", f"the plan has {len(plan)} characters; keep it under {MAX_PLAN_CHARS} (a "
                                       "plan lists steps, it does not contain the code)")


class ExitPlanTool(Tool[PlanParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def run(self, params: PlanParams, ctx: ToolContext) -> ToolResult:
        plan = params.plan.strip()
        approve = ctx.services.get("plan_approval")
        if approve is None:
            raise ToolError("exit_plan is not available in this session (a subagent reports its plan as its "
                            "final answer)")
        verdict: PlanVerdict = approve(plan, self.contract.name)
        return ToolResult(verdict_text(verdict), is_error=verdict.outcome == "rejected",
                          data={"plan": plan, "outcome": verdict.outcome, "mode": verdict.mode})

    def facts(self, params: PlanParams) -> CallFacts:
        plan = params.plan
        first = next((line.strip("# ").strip() for line in plan.splitlines() if line.strip()), "")
        return CallFacts(f"plan: {one_line(first, 80)}" if first else "plan", plan[:600], maskable=False,
                         plans=True)
