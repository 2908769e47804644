"""The engine's side of plans, the task list and skills (issue 19), handed to the tools as services.

- `plan_approval`: what the plan tool (`exit_plan`) calls, with its plan and its own name. It records the plan as a
  `PlanProposed` event (a permission request the frontend answers through the session's ask callback), then applies
  the answer: approved switches the permission mode (auto-edit or ask) and pins the plan; anything else leaves plan
  mode on. A headless session (no one to ask) records the plan as the run's result and tells the model to stop.
- `todo_sink`: what `todo` calls with each new list: pinned, and emitted as a `TodoUpdated` event.
- `skills`: the catalog found when the session opened (coder/ext/skills.py).

Pins live in `Pinned` (coder/context/base.py), which every handoff copies verbatim, so the plan and the list
survive compaction; `restored_pins` reads them back from the stored events, so they survive a resume too.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable
from typing import Any

from coder.base import events as ev
from coder.config.sections import Config
from coder.context.base import Pinned
from coder.engine.session_parts import AskHandler, no_questions
from coder.ext.skills import discover, prompt_section, sandbox_mounts
from coder.tools.plan_tool import PlanVerdict
from coder.tools.skill_tool import SkillTool

__all__ = ["PlanVerdict", "adopt_plan", "install_work", "plan_approval", "restored_pins", "todo_sink"]

#: the modes a user may continue in after approving a plan (auto is chosen only explicitly: /mode auto)
APPROVE_MODES = ("auto-edit", "ask")


def plan_approval(record: Callable[[ev.Event], None], ask: AskHandler, policy: Any,
                  pinned: Pinned) -> Callable[[str, str], PlanVerdict]:
    def approve(plan: str, tool: str) -> PlanVerdict:
        mode = str(getattr(policy, "mode", "ask"))
        ident = _plan_id()
        if mode != "plan":
            verdict = PlanVerdict("not_planning", mode)
            record(ev.PlanDecision(ident, verdict.outcome, mode))
            return verdict
        request = ev.PlanProposed(ident, tool, {"plan": plan},
                                  "approve the plan to leave plan mode, or keep planning with feedback", None,
                                  plan=plan)
        record(request)
        if ask is no_questions:
            verdict = PlanVerdict("headless", "plan")
        else:
            verdict = _verdict(ask(request))
        if verdict.outcome == "approved":
            policy.mode = verdict.mode
            pinned.plan = plan
        record(ev.PlanDecision(ident, verdict.outcome, verdict.mode, verdict.feedback,
                               plan if verdict.outcome == "approved" else ""))
        return verdict

    return approve


def _plan_id() -> str:
    """Unique across processes: a resumed session's stored events must not repeat an earlier question's id."""
    return f"plan-{secrets.token_hex(6)}"


def _verdict(answer: Any) -> PlanVerdict:
    """A frontend's answer: a PlanVerdict from the app and the REPL, or a plain PermissionAnswer from a frontend
    that asked as for any call (allow: approve and continue in ask mode, the careful one)."""
    if isinstance(answer, PlanVerdict):
        if answer.outcome == "approved" and answer.mode not in APPROVE_MODES:
            return PlanVerdict("approved", "ask", answer.feedback)
        return answer
    if getattr(answer, "allow", False):
        return PlanVerdict("approved", "ask")
    message = str(getattr(answer, "message", "") or "")
    if message.startswith("interrupted"):
        return PlanVerdict("rejected", "plan", message)
    return PlanVerdict("revise", "plan", message)


def todo_sink(record: Callable[[ev.Event], None], pinned: Pinned) -> Callable[[list[dict[str, Any]]], None]:
    def sink(items: list[dict[str, Any]]) -> None:
        pinned.todos = [dict(item) for item in items]
        record(ev.TodoUpdated([dict(item) for item in items]))

    return sink


def install_work(services: dict[str, Any], record: Callable[[ev.Event], None], ask: AskHandler, policy: Any,
                 pinned: Pinned, skills: Any = None, tools: dict[str, Any] | None = None) -> None:
    """Put the services of `exit_plan`, `todo` and `skill` into a session's tool context. With no skill
    installed, the `skill` tool leaves the session's `tools`: its contract would cost every request tokens for
    nothing (skills are found once, when the session opens, so none can appear later)."""
    services["plan_approval"] = plan_approval(record, ask, policy, pinned)
    services["todo_sink"] = todo_sink(record, pinned)
    services["background_ended"] = lambda job: record(ev.BackgroundEnded(job.id, job.command, job.state(),
                                                                         job.exit_code))
    if skills is not None:
        services["skills"] = skills
    if tools is not None and not getattr(skills, "skills", None):
        for name in [n for n, tool in tools.items() if isinstance(tool, SkillTool)]:
            del tools[name]


def restored_pins(events: Iterable[ev.Event]) -> dict[str, Any]:
    """The approved plan and the task list of a stored session (its events, oldest first), for `Pinned` on resume.
    A rewind does not bring an older list back: the list is what the model last wrote."""
    out: dict[str, Any] = {}
    for event in events:
        if isinstance(event, ev.TodoUpdated):
            out["todos"] = list(event.items)
        elif isinstance(event, ev.PlanDecision) and event.outcome == "approved":
            out["plan"] = event.plan
    return out


def adopt_plan(session: Any, plan: str, source: str = "file") -> None:
    """`coder run --plan-file`: start from a plan the user approved outside this session: pinned, and stored as
    an approved decision so a resume pins it again."""
    session.parts.pinned.plan = plan
    session.emit(ev.PlanDecision(_plan_id(), "approved", str(getattr(session.parts.policy, "mode", "")),
                                 "", plan, source))


def plan_message(plan: str, task: str | None) -> str:
    """The first message of a run that starts from an approved plan."""
    head = "Carry out this plan, which the user has reviewed and approved:\n\n" + plan.strip()
    return head + (f"\n\nThe user adds:\n{task.strip()}" if task and task.strip() else "")


class WorkParts:
    """What a session opening needs of issue 19: the skills found, the pins of a resumed session, and the text
    the system prompt gains (skills by name and description; a word on plan mode when the session starts in it)."""

    def __init__(self, skills: Any, pins: dict[str, Any], prompt: str) -> None:
        self.skills = skills
        self.pins = pins
        self.prompt = prompt


def open_work(workspace: Any, config: Config, events: Iterable[ev.Event] | None,
              note: Callable[[str], None]) -> WorkParts:
    """Find the skills (the repository's only when trusted), mount the user's skill folders read-only in the
    sandbox (their scripts run there), and read the pins back from a resumed session's `events`."""
    skills = discover(workspace, config.trusted, config.repo_files, config.plugin_dirs.get("skills", []))
    for problem in skills.problems[:5]:
        note(f"skills: {problem}")
    # the skills' folders, read-only: added to this session's sandbox (not a setting: their provenance is the skill)
    config.sandbox.extra_ro += [m for m in sandbox_mounts(skills) if m not in config.sandbox.extra_ro]
    prompt = prompt_section(skills, config.skills.prompt_chars)
    if config.permission_mode == "plan":
        prompt += ("\n# Plan mode\nThis session started in plan mode (read only): research with the read-only "
                   "tools, then present your plan with `exit_plan`. Once the user approves it, the mode changes and "
                   "you carry the plan out.\n")
    return WorkParts(skills, restored_pins(events) if events is not None else {}, prompt)
