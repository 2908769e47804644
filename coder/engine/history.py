"""Rebuilding a session from its persisted events, and the light input check done before a tool runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from coder.base import events as ev
from coder.base.schema import SchemaError
from coder.context.base import Compaction
from coder.engine.mentions import blocks, stored_images
from coder.engine.turns import forget_after
from coder.models.types import Message, TextBlock, ToolResultBlock

INTERRUPTED = "Not run: the session stopped before this tool call finished."


def add_hook_context(history: list[Message], event: str, text: str) -> None:
    """A hook's text for the model: with the last user message, or as a new one after the model's."""
    block = TextBlock(f"[{event} hook]\n{text}")
    if history and history[-1].role == "user":
        history[-1].content.append(block)
    else:
        history.append(Message("user", [block]))


@dataclass
class Restored:
    history: list[Message] = field(default_factory=list)
    turns: int = 0
    cost_usd: float = 0.0
    files_changed: list[str] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    task: str = ""
    history_at: dict[str, int] = field(default_factory=dict)  # checkpoint id -> history length
    #: the permission mode the model last knew: the one the session opened in, a mode notice's, an approved plan's
    mode: str = ""


def rebuild(events: Iterable[ev.Event]) -> Restored:
    """History, counters and compactions from a session's stored events in order (`SessionStore.stored`: parsed
    through the schema layer). Tool calls that never finished (a killed process) get an error result, so the
    history is valid for the API again."""
    out = Restored()
    files: set[str] = set()
    pending: list[str] = []  # tool_use ids of the last assistant message without a result yet
    results: dict[str, ToolResultBlock] = {}
    notices: list[TextBlock] = []  # a mode notice waiting for the user message it goes with
    paused = False  # the last answer paused a server-tool turn: the next answer continues its message

    def flush() -> None:
        if pending:
            blocks = [results.get(i) or ToolResultBlock(i, INTERRUPTED, True) for i in pending]
            out.history.append(Message("user", list(blocks)))
            pending.clear()
            results.clear()

    for event in events:
        if isinstance(event, (ev.UserMessage, ev.HookContext, ev.RewindEvent)):
            paused = False
        if isinstance(event, ev.UserMessage):
            flush()
            attached = blocks(event.attachments)  # `@path` files, sent again as they were
            out.history.append(Message("user", [*notices, TextBlock(event.text), *(TextBlock(b) for b in attached),
                                                *stored_images(event.images)]))
            out.task = out.task or event.text
            notices.clear()
        elif isinstance(event, ev.ModeNotice):  # ahead of the next user message's text (coder/engine/mode_notice.py)
            notices[:] = [TextBlock(event.text)]
            out.mode = event.mode
        elif isinstance(event, ev.SessionStart):
            out.mode = out.mode or event.mode
        elif isinstance(event, ev.PlanDecision) and event.outcome == "approved":
            out.mode = event.mode or out.mode
        elif isinstance(event, ev.AssistantMessage):
            flush()
            message = Message.from_dict(event.message)
            if paused and out.history and out.history[-1].role == "assistant":  # as Session._record_response
                out.history[-1].content.extend(message.content)
            else:
                out.history.append(message)
            paused = event.stop_reason == "pause_turn"
            pending.extend(u.id for u in message.tool_uses())
        elif isinstance(event, ev.ToolCallFinished):
            results[event.id] = ToolResultBlock(event.id, event.output, event.is_error,
                                                tool_references=_references(event.data),
                                                images=stored_images(event.images))
            files.update(event.files_changed)
        elif isinstance(event, (ev.StuckEvent, ev.AgentNews)) and event.note and event.tool_id in results:
            # what was appended to that result (a nudge, the news of background agents) is what the model read
            block = results[event.tool_id]
            results[event.tool_id] = replace(block, content=f"{block.content}\n\n{event.note}")
        elif isinstance(event, ev.HookContext):
            flush()
            add_hook_context(out.history, event.event, event.text)
        elif isinstance(event, ev.VerifyNudge):  # what coder told the model when its turn ended without proof
            flush()
            out.history.append(Message("user", [TextBlock(event.text)]))
        elif isinstance(event, ev.CheckpointEvent):
            flush()
            out.history_at[event.id] = event.history_len if event.history_len else len(out.history)
            if not event.label.startswith("before turn"):
                files.update(event.files_changed)
        elif isinstance(event, ev.RewindEvent):
            flush()
            del out.history[event.history_len:]
            forget_after(out.history_at, event.history_len)
        elif isinstance(event, ev.UsageEvent):
            out.turns += 1
            out.cost_usd = event.total_cost_usd
        elif isinstance(event, ev.CompactionEvent):
            out.compactions.append(Compaction(event.kind, event.tokens_before, event.tokens_after, event.data))
    flush()
    if out.history and out.history[-1].role == "assistant" and not out.history[-1].content:
        out.history[-1].content.append(TextBlock("(no answer)"))
    out.files_changed = sorted(files)
    return out


def stored_events(store: Any, session_id: str) -> list[ev.Event]:
    """The stored events of a session as Event objects, for a resumed session's transcript (the app, the REPL)
    and an editor's `session/load` (ACP). Rows of a type this version does not know, or cannot read, are left out
    (a resume reads them strictly: `SessionStore.stored`)."""
    out: list[ev.Event] = []
    for row in store.events(session_id):
        if row.known:
            try:
                out.append(row.event)
            except SchemaError:
                continue
    return out


def _references(data: dict[str, Any]) -> list[str]:
    """The deferred tools a finished call loaded (the tool search's result), as its event recorded them."""
    names = data.get("tool_references")
    return [str(n) for n in names] if isinstance(names, list) else []
