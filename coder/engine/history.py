"""Rebuilding a session from its persisted events, and the light input check done before a tool runs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from coder.base.events import EVENT_TYPES, Event, event_from_dict
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


def rebuild(events: Iterable[dict[str, Any]]) -> Restored:
    """History, counters and compactions from event dicts in order. Tool calls that never finished (a killed
    process) get an error result, so the history is valid for the API again."""
    out = Restored()
    files: set[str] = set()
    pending: list[str] = []  # tool_use ids of the last assistant message without a result yet
    results: dict[str, ToolResultBlock] = {}
    notices: list[TextBlock] = []  # a mode notice waiting for the user message it goes with

    def flush() -> None:
        if pending:
            blocks = [results.get(i) or ToolResultBlock(i, INTERRUPTED, True) for i in pending]
            out.history.append(Message("user", list(blocks)))
            pending.clear()
            results.clear()

    for event in events:
        kind = event["type"]
        if kind == "user_message":
            flush()
            attached = blocks(event.get("attachments") or [])  # `@path` files, sent again as they were
            out.history.append(Message("user", [*notices, TextBlock(event["text"]), *(TextBlock(b) for b in attached),
                                                *stored_images(event.get("images") or [])]))
            out.task = out.task or event["text"]
            notices.clear()
        elif kind == "mode_notice":  # ahead of the next user message's text (coder/engine/mode_notice.py)
            notices[:] = [TextBlock(event["text"])]
            out.mode = event["mode"]
        elif kind == "session_start":
            out.mode = out.mode or str(event.get("mode") or "")
        elif kind == "plan_decision" and event.get("outcome") == "approved":
            out.mode = str(event.get("mode") or out.mode)
        elif kind == "assistant_message":
            flush()
            message = Message.from_dict(event["message"])
            out.history.append(message)
            pending.extend(u.id for u in message.tool_uses())
        elif kind == "tool_call_finished":
            results[event["id"]] = ToolResultBlock(event["id"], event["output"], bool(event["is_error"]),
                                                  tool_references=_references(event),
                                                  images=stored_images(event.get("images") or []))
            files.update(event.get("files_changed") or [])
        elif kind in ("stuck", "agent_news") and event.get("note") and event.get("tool_id") in results:
            # what was appended to that result (a nudge, the news of background agents) is what the model read
            block = results[event["tool_id"]]
            results[event["tool_id"]] = replace(block, content=f"{block.content}\n\n{event['note']}")
        elif kind == "hook_context":
            flush()
            add_hook_context(out.history, event["event"], event["text"])
        elif kind == "checkpoint":
            flush()
            out.history_at[str(event["id"])] = int(event.get("history_len", len(out.history)))
            if not str(event.get("label", "")).startswith("before turn"):
                files.update(event.get("files_changed") or [])
        elif kind == "rewind":
            flush()
            del out.history[int(event["history_len"]):]
            forget_after(out.history_at, int(event["history_len"]))
        elif kind == "usage":
            out.turns += 1
            out.cost_usd = float(event.get("total_cost_usd", out.cost_usd))
        elif kind == "compaction":
            out.compactions.append(Compaction(event["kind"], event["tokens_before"], event["tokens_after"],
                                              event.get("data") or {}))
    flush()
    if out.history and out.history[-1].role == "assistant" and not out.history[-1].content:
        out.history[-1].content.append(TextBlock("(no answer)"))
    out.files_changed = sorted(files)
    return out


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,),
}


def validate_input(schema: dict[str, Any], args: Any) -> str | None:
    """A readable problem with `args` against the top level of `schema`, or None. Deep validation is the tool's."""
    if not isinstance(args, dict):
        return f"the input must be a JSON object, got {type(args).__name__}"
    if "_invalid_json" in args:
        return f"the input is not valid JSON: {str(args['_invalid_json'])[:200]!r}"
    missing = [k for k in schema.get("required", []) if k not in args]
    if missing:
        return "missing required field(s): " + ", ".join(missing)
    for key, value in args.items():
        spec = schema.get("properties", {}).get(key)
        if not spec or "type" not in spec:
            continue
        wanted = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        allowed = tuple(t for w in wanted for t in _JSON_TYPES.get(w, (object,)))
        bool_mismatch = isinstance(value, bool) and "boolean" not in wanted
        if value is not None and (not isinstance(value, allowed) or bool_mismatch):
            return f"field {key!r} must be {' or '.join(wanted)}, got {type(value).__name__}"
        if "enum" in spec and value not in spec["enum"]:
            return f"field {key!r} must be one of {spec['enum']}, got {value!r}"
    return None


def stored_events(store: Any, session_id: str) -> list[Event]:
    """The stored events of a session as Event objects, for a resumed session's transcript (the app, the REPL)
    and an editor's `session/load` (ACP). Rows of a type this version does not know, or cannot read, are left out."""
    out: list[Event] = []
    for row in store.events(session_id):
        if row.type in EVENT_TYPES:
            try:
                out.append(event_from_dict(row.to_dict()))
            except TypeError:
                continue
    return out


def _references(event: dict[str, Any]) -> list[str]:
    """The deferred tools a finished call loaded (the tool search's result), as its event recorded them."""
    data = event.get("data")
    return [str(n) for n in data.get("tool_references", [])] if isinstance(data, dict) else []
