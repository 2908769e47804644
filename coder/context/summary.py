"""Tier 3: a structured handoff replaces the oldest turns.

Two halves, on purpose. The facts a summary must never lose (the task and every user message verbatim, the
files touched, the plan, the last test result and the last error) are copied by code from the full history and
the pinned state, so no model can drop them. The model writes only the judgement half (intent, decisions and why,
file state, errors and fixes, plan and next), prompted by `prompts/compact.md`.

The summarising request is what it replaces, the previous request's messages (the view up to the first kept
turn), plus the instruction appended at its end, with the same system prompt and tools: its whole prefix is
already in the provider's cache, so the summary costs cache reads, not a fresh pass over the history, and the
kept turns, which follow the handoff verbatim, are not summarised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from coder.base.errors import Interrupted
from coder.base.resources import template
from coder.context.base import Pinned
from coder.context.calllog import CALLS_HEADER, call_log
from coder.context.history import loaded_tools, observations, user_texts
from coder.context.masking import command_of, exit_status, is_failure, keys_of
from coder.models.types import (
    Message,
    ModelProvider,
    ModelRequest,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Usage,
)
from coder.store.outputs import clip_output

HEADER = "[Context handoff]"
NARRATIVE_HEADER = "## Handoff\n"  # the model's part comes last, after everything code copies
#: between a narrative and what a later summary added to it
EXTENSION = "\n\n(added at a later compaction)\n"


@dataclass
class HandoffFacts:
    """What code copies verbatim into every summary."""

    task: str = ""
    user_messages: list[str] = field(default_factory=list)
    files_touched: list[str] = field(default_factory=list)
    plan: str = ""
    last_test_result: str = ""
    last_error: str = ""
    todos: str = ""  # the task list (pinned), as Markdown checkboxes
    #: one line per call the handoff replaces: what ran, its status, and its output inline or by handle (calllog)
    calls: list[str] = field(default_factory=list)


def collect_facts(covered: list[Message], pinned: Pinned, state_dir: Path, max_chars: int = 6000,
                  first_kept: bool = False, calls_chars: int = 12_000) -> HandoffFacts:
    """Facts from the messages being summarised (`covered`, straight from the full history) and the pins.
    `first_kept`: the first message stays in the view ahead of the handoff, so its text is not copied again.
    `calls_chars`: the call log's budget (coder/context/calllog.py)."""
    texts = [t for t in user_texts(covered) if not t.startswith(HEADER)]
    first = user_texts(covered[:1]) if first_kept else []
    task = pinned.task or (texts[0] if texts else "")
    others = [t for t in texts if t.strip() != task.strip() and t not in first]
    if first_kept and task.strip() in "\n".join(first):
        task = ""  # the task is the first message, still verbatim in the view

    def keep(text: str) -> str:
        return clip_output(text, state_dir, max_chars, 40, 40).text

    files: list[str] = list(dict.fromkeys(pinned.files_touched))
    last_error = ""
    for obs in observations(covered):
        for key in sorted(keys_of(obs).writes):
            path = key.removeprefix("file:")
            if key.startswith("file:") and path not in files and not path.startswith("/dev/"):
                files.append(path)
        if obs.result_index is not None and is_failure(obs):
            tail = obs.content[-1500:]
            last_error = f"`{' '.join(command_of(obs).split())[:200]}` ({exit_status(obs)}):\n{tail}"
    return HandoffFacts(keep(task), [keep(t) for t in others], files, pinned.plan,
                        pinned.last_test_result[-3000:], last_error, pinned.todo_text(),
                        call_log(covered, state_dir, budget_chars=calls_chars))


def render(facts: HandoffFacts, narrative: str, covered_count: int) -> str:
    """The text of the summary message that stands in for the covered turns."""
    intro = (f"{HEADER} {covered_count} earlier messages of this session were compacted into this handoff. "
             "Outputs named output://... can be read back in full with the read_output tool.")
    parts = [intro]
    if facts.task:
        parts.append("## Task (verbatim)\n" + facts.task)
    if facts.user_messages:
        parts.append("## User messages since the task (verbatim, in order)\n"
                     + "\n".join(f"{i}. {t}" for i, t in enumerate(facts.user_messages, 1)))
    if facts.plan:
        parts.append("## Current plan (pinned)\n" + facts.plan)
    if facts.todos:
        parts.append("## Task list (pinned; update it with the todo tool)\n" + facts.todos)
    if facts.files_touched:
        parts.append("## Files touched\n" + "\n".join(f"- {p}" for p in facts.files_touched))
    if facts.last_test_result:
        parts.append("## Last test result (pinned)\n" + facts.last_test_result)
    if facts.last_error:
        parts.append("## Last error before this handoff\n" + facts.last_error)
    if facts.calls:
        parts.append(CALLS_HEADER + "\n" + "\n".join(facts.calls))
    parts.append(NARRATIVE_HEADER + (narrative.strip() or "(no narrative)"))
    return "\n\n".join(parts)


#: the assistant turn between the first message and the handoff (the roles must alternate)
ACK = "[Earlier turns were compacted; the handoff follows.]"


@dataclass
class SummaryState:
    text: str
    covered: int  # history[:covered] is replaced by the summary message
    anchor: str  # fingerprint of history[covered - 1]: a rewound history no longer matches
    narrative: str = ""  # the model's part, which the next summary extends


def handoff(history: list[Message], summary: SummaryState) -> list[Message]:
    """The task, the acknowledgement and the handoff that stand in for history[:covered]. Tools loaded on demand in
    the covered turns are loaded again here (a call of the tool search and its result, made up deterministically),
    so a compaction never unloads a tool the kept turns or the next step may use."""
    caller, names = loaded_tools(history[: summary.covered])
    ack: list[Any] = [TextBlock(ACK)]
    text: list[Any] = [TextBlock(summary.text)]
    if caller and names:
        call_id = f"toolu_reload_{summary.covered}"
        ack.append(ToolUseBlock(call_id, caller, {"query": "select:" + ",".join(names)}))
        text.insert(0, ToolResultBlock(call_id, "Loaded again after the compaction: " + ", ".join(names),
                                       tool_references=names))
    return [history[0], Message("assistant", ack), Message("user", text)]


def last_remarks(covered: list[Message], limit: int, width: int = 300) -> str:
    """The model's own last remarks in `covered`, one shortened line each (a model-free account of the work)."""
    remarks = [m.text().strip() for m in covered if m.role == "assistant" and m.text().strip()]
    return "\n".join(f"- {' '.join(r.split())[:width]}" for r in remarks[-limit:])


def extractive_narrative(covered: list[Message], reason: str, limit: int = 12) -> str:
    """A model-free stand-in when the summary call fails: the model's own last remarks, shortened."""
    return (f"(extractive: the summary call failed: {reason})\nThe model's last remarks before the cut:\n"
            + last_remarks(covered, limit))


def code_narrative(covered: list[Message], previous: str, limit: int = 3) -> str:
    """`[context] handoff = "code"`: no summary call. The account a model wrote earlier (a `/compact`), if any,
    stays; then the model's own last remarks before the cut, where the work stood."""
    head = f"{previous.rstrip()}\n\n" if previous.strip() else ""
    remarks = last_remarks(covered, limit, 240)
    return head + ("(written by code, no summary: the calls above are the record of the covered turns)"
                   + (f"\nYour last remarks before the cut:\n{remarks}" if remarks else ""))


def instruction(kept_turns: int, focus: str, extend: bool = False) -> str:
    """prompts/compact.md, filled: how many turns stay visible, and the user's focus (`/compact FOCUS`); with
    `extend`, prompts/compact_extend.md: only what the turns since the previous handoff add to it."""
    focus_text = f"\nFocus the handoff on: {focus.strip()}\n" if focus.strip() else ""
    name = "compact_extend.md" if extend else "compact.md"
    return template(name, ("kept_turns", "focus")).render(kept_turns=kept_turns, focus=focus_text)


def narrative_of(handoff_text: str) -> str:
    """The model-written part of a rendered handoff (what a later summary may extend)."""
    return handoff_text.partition(NARRATIVE_HEADER)[2]


def summary_request(system: str, tools: list[ToolSpec], view: list[Message], prompt: str, max_tokens: int,
                    breakpoints: list[int]) -> ModelRequest:
    """The current view with the instruction appended, so the cached prefix is reused."""
    messages = list(view)
    while messages and messages[-1].role == "assistant" and any(
            isinstance(b, ToolUseBlock) for b in messages[-1].content):
        messages.pop()  # a call without its result would be rejected; the summary does not need it
    if messages and messages[-1].role == "user":
        messages[-1] = Message("user", list(messages[-1].content) + [TextBlock(prompt)])
    else:
        messages.append(Message("user", [TextBlock(prompt)]))
    # a breakpoint on the last message too: its lookback finds the previous request's end just before the
    # instruction, so everything before the instruction is read from the cache
    points = sorted({i for i in breakpoints if i < len(messages) - 1} | {len(messages) - 1})
    return ModelRequest(system, messages, list(tools), max_tokens, True, points[-3:])


class Summarizer(Protocol):
    def __call__(self, request: ModelRequest) -> tuple[str, Usage | None]:
        """The handoff text for `request`, and what it cost."""
        ...


@dataclass
class LLMSummarizer:
    """The real summarizer: one call to the session's own model."""

    provider: ModelProvider
    on_text: Callable[[str], None] | None = None
    #: the session's interrupt: an interrupted summary is not half a summary, it is no compaction
    cancel: threading.Event | None = None
    #: USD of the last call, which the session adds to its cost
    last_cost: float = 0.0

    def __call__(self, request: ModelRequest) -> tuple[str, Usage | None]:
        self.last_cost = 0.0
        response = self.provider.complete(request, self.on_text, self.cancel)
        self.last_cost = response.cost_usd
        if response.stop_reason == "interrupted":
            raise Interrupted("compaction interrupted")
        return response.message.text().strip(), response.usage
