"""The engine's events as ACP session updates.

Why a translator with state rather than a pure mapping: ACP wants a file edit as a diff of whole texts (old and
new), while the engine reports a unified diff. The translator reads the files a writing call names when the call is
requested and again when it finishes, so the editor gets the exact before and after. It also remembers whether a
model answer was already streamed (TextDelta), so the whole message that follows is not sent twice.

Thinking arrives whole with the model's message (the engine streams only text), so it is sent as one thought
chunk when the message is complete.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from acp import helpers
from acp.schema import ToolCallLocation

from coder.base import events as ev
from coder.evidence.record import Evidence, nudge_line
from coder.tools.base import CallFacts
from coder.tools.registry import describe

#: larger files are not sent as diff texts (the tool's own output still says what changed)
DIFF_FILE_LIMIT = 512_000
#: how much of a tool's output the editor gets as the call's content
OUTPUT_LIMIT = 8_000
#: a running command's output as the editor sees it while it runs: its newest lines, at most every LIVE_EVERY s
#: (the engine bounds what arrives: coder/engine/live_output.py)
LIVE_LINES, LIVE_CHARS, LIVE_EVERY = 20, 2_000, 0.5
#: coder's todo statuses as ACP plan entry statuses
PLAN_STATUS: dict[str, Literal["pending", "in_progress", "completed"]] = {
    "pending": "pending", "in_progress": "in_progress", "done": "completed"}
#: why a turn ended, as ACP stop reasons (the ones ACP has no word for end the turn and say why in a message)
STOP_REASONS = {"done": "end_turn", "interrupted": "cancelled", "max_turns": "max_turn_requests"}


def tool_kind(name: str, facts: CallFacts) -> str:
    """The ACP tool kind, so the editor can pick an icon: from what the call does, not from its name alone."""
    if facts.plans:
        return "think"
    if facts.shell is not None:
        return "execute"
    if facts.writes:
        return "edit"
    if "search" in name or "grep" in name or name in ("glob", "find"):
        return "search"
    if facts.reads:
        return "read"
    if "fetch" in name:
        return "fetch"
    return "other"


def _text_of(message: dict[str, Any], kind: str) -> str:
    key = "text" if kind == "text" else "thinking"
    return "\n\n".join(str(b.get(key, "")) for b in message.get("content", []) if b.get("type") == kind
                       and str(b.get(key, "")).strip())


@dataclass
class Translator:
    """Turns one session's events into ACP updates (a list per event: none, one or a few)."""

    cwd: Path
    tools: dict[str, Any] = field(default_factory=dict)
    streamed: bool = False
    #: tool call id -> {absolute path: text before the call} for calls that write files
    before: dict[str, dict[str, str | None]] = field(default_factory=dict)
    #: the tool call running now: a plan's approval question (its own id) is about this call (exit_plan)
    current_call: str = ""
    #: tool call id -> (its newest output, when it was last sent) while it runs
    live: dict[str, tuple[str, float]] = field(default_factory=dict)

    def facts(self, tool: str, args: dict[str, Any]) -> CallFacts:
        try:
            return describe(tool, args, self.tools)
        except Exception:  # noqa: BLE001 - a malformed input still gets a title; the engine reports the problem
            return CallFacts(title=tool, detail="")

    def paths(self, facts: CallFacts) -> list[Path]:
        return [(self.cwd / p).resolve() if not Path(p).is_absolute() else Path(p) for p in facts.paths]

    def convert(self, event: ev.Event) -> list[Any]:
        if isinstance(event, ev.TextDelta):
            self.streamed = True
            return [helpers.update_agent_message_text(event.text)] if event.text else []
        if isinstance(event, ev.AssistantMessage):
            out: list[Any] = []
            thinking = _text_of(event.message, "thinking")
            if thinking:
                out.append(helpers.update_agent_thought_text(thinking))
            text = _text_of(event.message, "text")
            if text and not self.streamed:
                out.append(helpers.update_agent_message_text(text))
            self.streamed = False
            return out
        if isinstance(event, ev.PermissionRequest):
            return []  # asked through session/request_permission (permission.py)
        if isinstance(event, ev.ToolCallRequested):
            return [self.tool_started(event)]
        if isinstance(event, ev.ToolCallApproved):
            return [helpers.update_tool_call(event.id, status="in_progress")]
        if isinstance(event, ev.ToolOutput):
            return self.tool_output(event)
        if isinstance(event, ev.ToolCallFinished):
            self.live.pop(event.id, None)
            return [self.tool_finished(event)]
        if isinstance(event, ev.TodoUpdated):
            return [plan_update(event.items)]
        if isinstance(event, ev.PlanDecision) and event.outcome == "approved" and event.mode:
            return [helpers.update_current_mode(event.mode)]  # approving a plan leaves plan mode
        if isinstance(event, ev.ErrorEvent) and event.fatal:
            return [helpers.update_agent_message_text(f"\n\ncoder: error: {event.message}")]
        if isinstance(event, ev.VerifyNudge):  # issue 49: why the agent goes on after it said it was done
            return [helpers.update_agent_message_text(f"\n\ncoder: {nudge_line(event.action)}\n\n")]
        if isinstance(event, ev.TurnEvidence):  # issue 49: what proves the turn's change works, or that nothing does
            return [helpers.update_agent_message_text(f"\n\ncoder: {Evidence.from_dict(event.record).line()}")]
        if isinstance(event, ev.StuckEvent) and event.action == "stop":
            return [helpers.update_agent_message_text(f"\n\ncoder: stopped as stuck: {event.detail}")]
        return []

    def tool_started(self, event: ev.ToolCallRequested) -> Any:
        self.current_call = event.id
        facts = self.facts(event.tool, event.input)
        paths = self.paths(facts)
        if facts.writes:
            self.before[event.id] = {str(p): _read(p) for p in paths}
        return helpers.start_tool_call(
            event.id, facts.title, kind=tool_kind(event.tool, facts), status="pending",  # type: ignore[arg-type]
            locations=[ToolCallLocation(path=str(p)) for p in paths], raw_input=event.input)

    def tool_output(self, event: ev.ToolOutput) -> list[Any]:
        """The newest lines of a running command, sent at most every LIVE_EVERY seconds (the content of a tool
        call update replaces the last: each says what the command shows now)."""
        tail, sent = self.live.get(event.id, ("", 0.0))
        tail = (tail + event.text)[-LIVE_CHARS:]
        now = time.monotonic()
        if now - sent < LIVE_EVERY:
            self.live[event.id] = (tail, sent)
            return []
        self.live[event.id] = (tail, now)
        shown = "\n".join(tail.splitlines()[-LIVE_LINES:])
        return [helpers.update_tool_call(event.id, status="in_progress",
                                         content=[helpers.tool_content(helpers.text_block(shown))])]

    def tool_finished(self, event: ev.ToolCallFinished) -> Any:
        content: list[Any] = []
        for path, old in self.before.pop(event.id, {}).items():
            new = _read(Path(path))
            if new is not None and new != old:
                content.append(helpers.tool_diff_content(path, new, old))
        output = event.output if len(event.output) <= OUTPUT_LIMIT else event.output[:OUTPUT_LIMIT] + "\n…"
        if output:
            content.append(helpers.tool_content(helpers.text_block(output)))
        return helpers.update_tool_call(event.id, status="failed" if event.is_error else "completed",
                                        content=content, raw_output={"output": output, "is_error": event.is_error})


def plan_update(items: list[dict[str, Any]]) -> Any:
    """The todo tool's list as an ACP plan (the whole list each time, as ACP asks)."""
    return helpers.update_plan(helpers.plan_entry(str(item.get("text", "")),
                                                  status=PLAN_STATUS.get(str(item.get("status")), "pending"))
                               for item in items)


def replay(events: list[ev.Event], cwd: Path) -> list[Any]:
    """A stored conversation as the updates `session/load` sends before it answers: the user's messages, the
    model's answers and thoughts, each tool call with its final status, and the last task list."""
    translator = Translator(cwd)
    out: list[Any] = []
    for event in events:
        if isinstance(event, ev.UserMessage):
            out.append(helpers.update_user_message_text(event.text))
        elif isinstance(event, ev.ToolCallRequested | ev.ToolCallFinished | ev.AssistantMessage | ev.TodoUpdated):
            out.extend(translator.convert(event))
    return out


def _read(path: Path) -> str | None:
    """The text of a file, or None when it does not exist, is too big or is not text."""
    try:
        if not path.is_file() or path.stat().st_size > DIFF_FILE_LIMIT:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
