"""From the engine's events to the screen: the drain loop and what each event becomes. A part of the app
(coder/tui/app.py).

Threads: the engine's events are appended to the app's queue (never blocking the engine) and drained on the app's
thread. What a drain costs decides how the app keeps up with a fast agent (issue 32), so:

- a drain takes everything queued, and the blocks it makes are mounted together at its end (coder/tui/transcript.py);
- a message whose end is already in the queue becomes its final block at once; only text still being written
  streams into a Markdown block;
- drains are paced (`Pacer`): while the engine works, the app thread's CPU time stays a fraction (DUTY) of the
  process's, however fast events come; a key typed meanwhile waits at most one short drain. Keys never wait for
  the queue: they are handled between drains.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING, Any

from textual.app import App

from coder.base import events as ev
from coder.base.termsafe import visible
from coder.evidence.record import Evidence, nudge_line
from coder.frontend.compaction import compaction_line, compaction_started
from coder.tui.agents_part import AGENT_EVENTS, agent_note
from coder.tui.blocks import ToolBlock, UserBlock, assistant_block
from coder.tui.messages import AgentEvent, Asked, Drained, TurnEnded, WorkEvent
from coder.tui.part import Part
from coder.tui.state import AppState
from coder.tui.transcript import MAX_BLOCKS, Transcript
from coder.tui.widgets import Conversation
from coder.tui.work_view import plan_blocks

if TYPE_CHECKING:
    from coder.tools.base import CallFacts

#: the app thread's share of the process's CPU time while the engine works; the rest is the engine's (they share
#: one interpreter, so every millisecond drawing is one the agent waits)
DUTY = 0.25
MIN_INTERVAL, MAX_INTERVAL = 0.05, 0.5


class Pacer:
    """When the next drain comes. While the engine works, the app thread's CPU time is kept to DUTY of the
    process's: a drain and the frame it causes cost about the same however many events they draw, so fewer of
    them when the engine is busy. Measured in CPU time, not wall time: on a loaded machine both threads get less
    of the CPU, and the share is what matters. With the engine idle, drains come every MIN_INTERVAL."""

    def __init__(self) -> None:
        self.interval = MIN_INTERVAL
        self.app_cpu, self.all_cpu, self.wall = time.thread_time(), time.process_time(), time.monotonic()

    def next_interval(self) -> float:
        app_cpu, all_cpu, wall = time.thread_time(), time.process_time(), time.monotonic()
        drawing = app_cpu - self.app_cpu  # drains, frames and keys since the last drain
        others = max(all_cpu - self.all_cpu - drawing, 0.0)  # the engine (and Textual's own threads)
        elapsed = max(wall - self.wall, 1e-6)
        self.app_cpu, self.all_cpu, self.wall = app_cpu, all_cpu, wall
        rate = others / elapsed  # how busy the engine is: CPU seconds per second
        if rate < 0.05:
            self.interval = MIN_INTERVAL
        else:  # the next interval lets the engine spend (1 - DUTY) / DUTY times what drawing spent
            self.interval = drawing * (1 - DUTY) / DUTY / rate
        self.interval = min(MAX_INTERVAL, max(MIN_INTERVAL, self.interval))
        return self.interval


class EventFeed(Part):
    """Drains the state's `queue`. It holds the transcript, the one part a part holds (coder/tui/app.py says
    why): what the other parts do with an event comes after the drain, as a message (AgentEvent, WorkEvent,
    Asked, TurnEnded, Drained), and their lines in the conversation are drawn here, in order (`agent_note`,
    `plan_blocks`)."""

    HOLDS = frozenset({"transcript"})

    def __init__(self, app: App[Any], state: AppState, transcript: Transcript) -> None:
        super().__init__(app, state)
        self.transcript = transcript
        self.queue = state.queue
        self.lock = asyncio.Lock()
        self.pacer = Pacer()

    def start(self) -> None:
        self.app.set_timer(MIN_INTERVAL, self._tick)

    async def _tick(self) -> None:
        if self.app.query_one_optional(Conversation) is None:
            return  # the app is closing: its widgets are gone, and so is the feed
        await self.drain()
        self.app.set_timer(self.pacer.next_interval(), self._tick)

    # ---- the drain --------------------------------------------------------------------------------------------
    async def drain(self) -> None:
        """Hand the queued events on, one drain at a time: the timer and the opening both drain, and two drains
        interleaving at an await (a stream write) could take events out of order."""
        async with self.lock:
            await self._drain()

    async def _drain(self) -> None:
        transcript = self.transcript
        if not self.queue:
            if self.state.running:
                transcript.tick()  # the clocks of running calls move while nothing arrives; the status bar's too,
            self.app.post_message(Drained(False))  # and the running agents' (issue 36)
            return
        text: list[str] = []
        transcript.batching = True
        try:
            while self.queue:
                item = self.queue.popleft()
                if isinstance(item, ev.TextDelta):
                    text.append(item.text)
                    self.state.info.streamed += len(item.text)
                    continue
                if text and isinstance(item, ev.UsageEvent):  # the request's figures come before its message
                    self._usage(item)
                    continue
                if text and not (isinstance(item, ev.AssistantMessage) and transcript.stream is None):
                    await transcript.stream_text("".join(text))  # the message goes on: it streams
                await self.handle(item)
                text = []  # a finished message became its block whole (`handle`)
            if text:
                await transcript.stream_text("".join(text))
        finally:
            transcript.batching = False
            transcript.flush()
        self.app.post_message(Drained(True))  # the status bar; a question must be seen, even by someone reading up

    # ---- one event --------------------------------------------------------------------------------------------
    async def handle(self, item: Any, replay: bool = False) -> None:
        transcript, info = self.transcript, self.state.info
        if isinstance(item, tuple) and item[0] == "question":  # the question an engine thread now waits on
            self.app.post_message(Asked(item[1]))
            return
        if isinstance(item, tuple):  # ("replay", the stored events of a resumed session)
            events: list[ev.Event] = item[1]
            for event in events[:-MAX_BLOCKS * 2]:  # not drawn, but counted: the tokens are the whole session's
                if isinstance(event, ev.UsageEvent):
                    self._usage(event)
            for event in events[-MAX_BLOCKS * 2:]:
                await self.handle(event, replay=True)
            if events:
                transcript.note("── resumed: earlier conversation above ──")
            return
        if isinstance(item, ev.SessionStart):
            info.model, info.sandbox = item.model, item.sandbox
            self.app.post_message(WorkEvent(item, replay))  # a new session has no task list yet (issue 19)
            self.app.post_message(AgentEvent(item, replay))  # nor agents: a resumed one's ended with its process
            if not replay:
                transcript.note(f"session {item.session_id} · {_home(item.workspace)}" +
                                (" (resumed)" if item.resumed else ""))
        elif isinstance(item, ev.UserMessage):
            transcript.add_block(UserBlock(item.text))
            if item.attachments:  # `@path`: the file went along (coder/engine/mentions.py)
                transcript.note("attached " + ", ".join(_attached(a) for a in item.attachments))
            if item.images:  # issue 35: a chip with its size for each image that went along
                from coder.engine.mentions import chips  # start-up time: after the first paint

                transcript.note(visible(chips(item.images)))
        elif isinstance(item, ev.AssistantMessage):
            streamed = await transcript.end_stream()
            texts = [b.get("text", "") for b in item.message.get("content", []) if b.get("type") == "text"]
            if not streamed and any(t.strip() for t in texts):
                transcript.add_block(assistant_block("\n\n".join(texts)))
        elif isinstance(item, ev.ToolCallRequested):
            await transcript.end_stream()
            facts = self._facts(item.tool, item.input)
            transcript.start_tool(ToolBlock(item.id, item.tool, facts.title), facts.shell is not None)
        elif isinstance(item, (ev.PlanProposed, ev.PlanDecision, ev.TodoUpdated)):
            for block in plan_blocks(item, replay):  # issue 19: plans and the task list (coder/tui/work_view.py)
                transcript.add_block(block)
            self.app.post_message(WorkEvent(item, replay))
        elif isinstance(item, ev.PermissionRequest):
            pass  # put up when `ask` takes it (the ("question", request) item above), not when it is said
        elif isinstance(item, AGENT_EVENTS):  # issue 36 (coder/tui/agents_part.py)
            if (note := agent_note(item)) is not None:
                transcript.note(*note)
            self.app.post_message(AgentEvent(item, replay))
        elif isinstance(item, (ev.ToolCallApproved, ev.ToolCallDenied)):
            block = transcript.running(item.id)
            if block is not None and (item.by != "policy" or isinstance(item, ev.ToolCallDenied)):
                block.note(f"{'allowed' if isinstance(item, ev.ToolCallApproved) else 'denied'} by {item.by}")
        elif isinstance(item, ev.ToolCallFinished):
            block = transcript.take(item.id)
            if block is None:  # folded out while it ran: the result gets a block of its own
                block = ToolBlock(item.id, item.tool, self._facts(item.tool, item.input).title)
                transcript.add_block(block)
            block.finish(item.output, item.is_error, item.duration_s, str(item.data.get("diff", "") or ""),
                         item.data)
        elif isinstance(item, ev.ToolOutput):  # a running command's output, as it comes
            block = transcript.running(item.id)
            if block is not None:
                block.progress(item.text)
        elif isinstance(item, ev.BackgroundEnded):  # a command sent to the background ended (Ctrl+B)
            transcript.note(f"background job {item.id} ({item.command[:60]}) {item.state}",
                            "ok" if item.exit_code == 0 else "error" if item.exit_code else "")
        elif isinstance(item, ev.ReviewStage):  # /review and /commit say what they are doing as they go
            mark = {"pass": "✓", "fail": "✗", "warn": "!", "skipped": "·"}.get(item.status, "·")
            transcript.note(f"review {mark} {item.name}: {item.status} ({item.duration:.1f}s)" +
                            (f" · {item.note[:100]}" if item.note else ""))
        elif isinstance(item, ev.RetryWait) and not replay:  # a wait on a rate limit: why, and a countdown
            info.retry_until = time.monotonic() + item.seconds
            transcript.note(f"model request failed ({item.reason}); retry {item.attempt} of {item.max_retries} "
                            f"in {item.seconds:.0f}s")
        elif isinstance(item, ev.UsageEvent):
            self._usage(item)
        elif isinstance(item, ev.CompactionStarted):  # a summary is a model call: said when it starts (issue 45)
            if started := compaction_started(item):
                transcript.note(started)
        elif isinstance(item, ev.CompactionEvent):
            info.ctx = item.tokens_after  # the figure the next request will start from
            transcript.note(compaction_line(item))
        elif isinstance(item, ev.CheckpointEvent):
            files = ", ".join(item.files_changed[:5])
            transcript.note(f"checkpoint {item.id}" + (f": {files}" if files else "") + " (/undo)")
        elif isinstance(item, ev.ReviewEvent):
            transcript.note(f"review: {item.verdict} ({len(item.findings)} findings)")
        elif isinstance(item, ev.CommitEvent):
            transcript.note(f"committed {item.sha[:10]}: {item.message.splitlines()[0]}", "ok")
        elif isinstance(item, ev.StuckEvent) and item.action != "nudge":  # issue 22: nudges go to the model only
            transcript.stuck(item)
        elif isinstance(item, ev.LeftBehind):  # issue 43: what a command left that runs later, and what was done
            transcript.note(item.text, "error")
        elif isinstance(item, ev.ErrorEvent):
            transcript.note(("error: " if item.fatal else "note: ") + item.message, "error" if item.fatal else "")
        elif isinstance(item, ev.VerifyNudge):  # issue 49: why the model goes on after it said it was done
            transcript.note(nudge_line(item.action), "")
        elif isinstance(item, ev.TurnEvidence):  # issue 49: the turn's line says what proves its change
            record = Evidence.from_dict(item.record)
            transcript.note(record.line(), {"warn": ""}.get(record.tone, record.tone))
        elif isinstance(item, ev.TurnEnd) and not replay:
            await transcript.end_stream()
            transcript.end_turn()
            self.app.post_message(TurnEnded(item.reason))

    def _usage(self, item: ev.UsageEvent) -> None:
        """The status bar's tokens: every token of every request (input, output, cache read and write), the
        same total `/cost` shows."""
        self.state.info.count_usage(item.input_tokens + item.output_tokens + item.cache_read_tokens +
                                    item.cache_write_tokens, item.total_cost_usd, item.context_tokens,
                                    item.context_window)

    def _facts(self, tool: str, args: dict[str, Any]) -> CallFacts:
        from coder.tools.registry import describe  # start-up time: the tools load after the app's first paint

        session = self.state.session
        return describe(tool, args, session.parts.tools if session is not None else None)


def _home(path: str) -> str:
    """The workspace as people say it: ~/x for paths under HOME (shorter, and the same on every machine)."""
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home != "/" and (path == home or path.startswith(home + "/")) else path


def _attached(a: dict[str, Any]) -> str:
    from coder.engine.mentions import Attachment  # lazy: the engine's imports come after the first paint

    return visible(Attachment(**a).label())
