"""The plain REPL's side of plans and the task list (issue 19): the plan printed as Markdown with its question,
and the task list printed whenever the model changes it (the scrollback has no panel that stays); and the lines
of work in progress (issue 24: review stages, waits before a retry)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coder.base import events as ev
from coder.engine.mentions import chips
from coder.engine.work import PlanVerdict
from coder.frontend.choices import Question, plan_question
from coder.frontend.work import plan_line

_MARKS = {"done": "✓", "in_progress": "▶", "pending": "○"}


def print_work(printer: Any, event: ev.Event, replay: bool) -> None:
    """Plan and task-list events as the REPL prints them."""
    if isinstance(event, ev.PlanProposed):
        printer.line("Plan proposed:", "bold")
        printer.markdown(event.plan)
    elif isinstance(event, ev.PlanDecision):
        printer.line(plan_line(event), "green" if event.outcome == "approved" else "yellow")
    elif isinstance(event, ev.TodoUpdated) and not replay:
        printer.line(todo_lines(event.items), "cyan")


def todo_lines(items: list[dict[str, Any]]) -> str:
    done = sum(1 for i in items if i.get("status") == "done")
    rows = [f"  {_MARKS.get(str(i.get('status')), '○')} {i.get('text', '')}" for i in items]
    return "\n".join([f"Tasks {done}/{len(items)}:"] + rows) if items else "Tasks: (the list is empty)"


def ask_plan(show: Callable[[Question], None], reader: Any, keep: Callable[[str], None], session: Any) -> PlanVerdict:
    """The plan question (the plan itself was printed with its event; `show` prints the lines on offer), with
    numbered choices typing cannot answer (coder/frontend/choices.py): approving in auto-edit is a lasting grant,
    confirmed after a pause; keys typed as it appears are the next message's type-ahead (`keep`). Keep planning
    asks what to change. Esc, Ctrl+C or the end of input stop the turn."""
    question = plan_question()
    show(question)
    try:
        answer = reader.ask_choice(question, keep, show)
        if answer in ("auto-edit", "ask"):
            return PlanVerdict("approved", answer)
        while answer == "revise":
            feedback = reader.ask("feedback (what to change) > ").strip()
            if feedback:
                return PlanVerdict("revise", "plan", feedback)
    except (KeyboardInterrupt, EOFError):
        pass
    session.interrupt()
    return PlanVerdict("rejected", "plan", "interrupted by the user")


def progress_line(event: ev.Event) -> str:
    """A review stage that ended, a wait before a retry of the model request, or the files a message attached
    with `@path` (coder/engine/mentions.py), as one line; "" when there is nothing to say."""
    if isinstance(event, ev.ReviewStage):
        return f"review {event.name}: {event.status} ({event.duration:.1f}s)"
    if isinstance(event, ev.UserMessage):
        files = [f"{a['path']}:{a['start']}-{a['end']}" for a in event.attachments]
        line = "attached " + ", ".join(files) if files else ""
        return "\n".join(x for x in (line, chips(event.images)) if x)
    assert isinstance(event, ev.RetryWait)
    return (f"model request failed ({event.reason}); retry {event.attempt} of {event.max_retries} in "
            f"{event.seconds:.0f}s")
