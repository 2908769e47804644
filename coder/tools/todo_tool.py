"""`todo`: the task list the model keeps and the user watches (issue 19).

The model writes the whole list each call (as Claude Code's TodoWrite and Codex's update_plan do): a list is
small, and a whole list cannot drift out of step with partial updates. The tool checks it and hands it to the
session's `todo_sink` service (coder/engine/work.py), which pins it in context (it survives compaction and
resume) and emits it as an event the frontends draw. A session without the service (a subagent) still gets the
check and the rendered list back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from coder.base.errors import ToolError
from coder.tools.base import CallFacts, Tool, ToolContext, ToolResult

STATUSES = ("pending", "in_progress", "done")
MAX_ITEMS = 50
MAX_TEXT = 300
#: how a status reads in a one-line list (Markdown checkboxes, with a mark for the item being worked on)
MARKS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


@dataclass(frozen=True)
class TodoItem:
    id: str
    text: str
    status: str


def parse_items(raw: Any) -> list[TodoItem]:
    """The list from a tool input (or a stored event), checked: ToolError names the first problem."""
    if not isinstance(raw, list):
        raise ToolError("`todos` must be a list of items {id, text, status}")
    if len(raw) > MAX_ITEMS:
        raise ToolError(f"the list has {len(raw)} items; keep it to {MAX_ITEMS} (merge small steps)")
    items: list[TodoItem] = []
    seen: set[str] = set()
    for number, entry in enumerate(raw, 1):
        if not isinstance(entry, dict):
            raise ToolError(f"item {number} must be an object {{id, text, status}}")
        ident = str(entry.get("id", "")).strip() or str(number)
        text = " ".join(str(entry.get("text", "")).split())
        status = str(entry.get("status", "pending")).strip().lower().replace(" ", "_").replace("-", "_")
        if status == "completed":  # the word other agents' lists use
            status = "done"
        if status not in STATUSES:
            raise ToolError(f"item {ident}: status {entry.get('status')!r} is not one of {', '.join(STATUSES)}")
        if not text:
            raise ToolError(f"item {ident} has no text")
        if ident in seen:
            raise ToolError(f"two items have the id {ident!r}; ids must be unique")
        seen.add(ident)
        items.append(TodoItem(ident, text[:MAX_TEXT], status))
    return items


def as_dicts(items: list[TodoItem]) -> list[dict[str, str]]:
    return [asdict(item) for item in items]


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


class TodoTool(Tool):
    def __init__(self, contract: Any) -> None:
        self.contract = contract

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        items = as_dicts(parse_items(args.get("todos")))
        sink = ctx.services.get("todo_sink")
        if sink is not None:
            sink(items)
        note = ""
        if counts(items)["in_progress"] > 1:
            note = "\nNote: more than one item is in progress; finish one before starting the next."
        return ToolResult(f"Task list updated ({summary(items) if items else 'empty'}):\n{render(items)}{note}",
                          data={"todos": items})

    def facts(self, args: dict[str, Any]) -> CallFacts:
        raw = args.get("todos")
        items = raw if isinstance(raw, list) else []
        doing = [str(i.get("text", "")) for i in items if isinstance(i, dict) and i.get("status") == "in_progress"]
        done = sum(1 for i in items if isinstance(i, dict) and i.get("status") in ("done", "completed"))
        title = f"todo: {done}/{len(items)} done" + (f", now: {doing[0][:60]}" if doing else "")
        shown = "\n".join(f"- {MARKS.get(str(i.get('status')), '[ ]')} {i.get('text', '')}"
                          for i in items if isinstance(i, dict))
        return CallFacts(title, shown[:600], maskable=False, plans=True)
