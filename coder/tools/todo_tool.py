"""`todo`: the task list the model keeps and the user watches (issue 19).

The model writes the whole list each call (as Claude Code's TodoWrite and Codex's update_plan do): a list is
small, and a whole list cannot drift out of step with partial updates. The tool checks it and hands it to the
session's `todo_sink` service (coder/engine/work.py), which pins it in context (it survives compaction and
resume) and emits it as an event the frontends draw. A session without the service (a subagent) still gets the
check and the rendered list back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from coder.base.settings import SettingError
from coder.tools.base import CallFacts, Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params

Status = Literal["pending", "in_progress", "done"]
STATUSES: tuple[Status, ...] = ("pending", "in_progress", "done")
MAX_ITEMS = 50
MAX_TEXT = 300
#: how a status reads in a one-line list (Markdown checkboxes, with a mark for the item being worked on)
MARKS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


@dataclass(frozen=True)
class TodoItem(Params):
    id: str
    text: str
    status: Status


@dataclass(frozen=True)
class TodoParams(Params):
    """tools/todo.json: the whole list."""

    todos: list[TodoItem]

    @classmethod
    def normalize(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """An item's status as other agents' lists write it (Claude Code's `completed`, `In progress`), and an item
        without an id numbered by its place."""
        todos = raw.get("todos")
        if not isinstance(todos, list):
            return raw
        items = []
        for number, item in enumerate(todos, 1):
            if isinstance(item, dict):
                status = item.get("status")
                if isinstance(status, str):
                    status = status.strip().lower().replace(" ", "_").replace("-", "_")
                    item = {**item, "status": "done" if status == "completed" else status}
                if not str(item.get("id") or "").strip():
                    item = {**item, "id": str(number)}
            items.append(item)
        return {**raw, "todos": items}

    def check(self) -> None:
        if len(self.todos) > MAX_ITEMS:
            raise SettingError("todos", f"the list has {len(self.todos)} items; keep it to {MAX_ITEMS} (merge "
                                        "small steps)")
        seen: set[str] = set()
        for number, item in enumerate(self.todos, 1):
            if not item.text.strip():
                raise SettingError(f"todos.#{number}.text", f"item {item.id} has no text")
            if item.id in seen:
                raise SettingError(f"todos.#{number}.id", f"two items have the id {item.id!r}; ids must be unique")
            seen.add(item.id)


def as_dicts(items: list[TodoItem]) -> list[dict[str, str]]:
    """The list as the session keeps it (pinned, stored, drawn): ids and texts on one line, texts cut."""
    return [asdict(TodoItem(i.id.strip(), " ".join(i.text.split())[:MAX_TEXT], i.status)) for i in items]


def counts(items: list[dict[str, Any]] | list[TodoItem]) -> dict[str, int]:
    out: dict[str, int] = dict.fromkeys(STATUSES, 0)
    for item in items:
        status = item["status"] if isinstance(item, dict) else item.status
        out[status] = out.get(status, 0) + 1
    return out


def render(items: list[dict[str, Any]]) -> str:
    """The list as Markdown checkboxes: what the model reads back, `/todo` shows and a handoff pins."""
    if not items:
        return "(the task list is empty)"
    return "\n".join(f"- {MARKS.get(i['status'], '[ ]')} {i['text']}" + (" (in progress)"
                     if i["status"] == "in_progress" else "") for i in items)


def summary(items: list[dict[str, Any]]) -> str:
    c = counts(items)
    return f"{c['done']}/{len(items)} done" + (f", {c['in_progress']} in progress" if c["in_progress"] else "")


class TodoTool(Tool[TodoParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract

    def run(self, params: TodoParams, ctx: ToolContext) -> ToolResult:
        items = as_dicts(params.todos)
        sink = ctx.services.get("todo_sink")
        if sink is not None:
            sink(items)
        note = ""
        if counts(items)["in_progress"] > 1:
            note = "\nNote: more than one item is in progress; finish one before starting the next."
        return ToolResult(f"Task list updated ({summary(items) if items else 'empty'}):\n{render(items)}{note}",
                          data={"todos": items})

    def facts(self, params: TodoParams) -> CallFacts:
        items = params.todos
        doing = [i.text for i in items if i.status == "in_progress"]
        done = sum(1 for i in items if i.status == "done")
        title = f"todo: {done}/{len(items)} done" + (f", now: {doing[0][:60]}" if doing else "")
        shown = "\n".join(f"- {MARKS[i.status]} {i.text}" for i in items)
        return CallFacts(title, shown[:600], maskable=False, plans=True)
