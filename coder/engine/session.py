"""The session loop: ask the model, route tool calls through the policy to the tools, feed results back.

Orchestration only. Everything concrete (which provider, which tools, how context is shaped, where events go)
arrives through `SessionParts`; `coder.engine.builder` assembles the defaults.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from coder.base import events as ev
from coder.base.errors import ContextOverflowError, ModelError, ToolError
from coder.context.base import ContextManager, Pinned
from coder.engine.history import Restored, add_hook_context
from coder.engine.hook_steps import Hooks, hook_permission, with_feedback
from coder.engine.live_output import LiveOutput
from coder.engine.mentions import Attached, as_dicts, blocks
from coder.engine.mode_notice import ModeSwitches
from coder.engine.turns import forget_after
from coder.ext.hookapi import NO_VERDICT, HookVerdict
from coder.models.model_table import model_info
from coder.models.retry import retry_listener
from coder.models.types import (
    Block,
    Message,
    ModelProvider,
    ModelResponse,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from coder.policy.base import PermissionAnswer, PermissionPolicy
from coder.stuck.guard import StuckGuard
from coder.tools.base import Tool, ToolCall, ToolContext, ToolResult, parse_call
from coder.tools.params import ToolInputError
from coder.tools.tool_search_tool import not_loaded

if TYPE_CHECKING:
    from coder.evidence.record import Evidence
    from coder.vcs.checkpoints import Checkpoint, RestoreResult
    from coder.vcs.repo import Repo
    from coder.vcs.restore_plan import RestorePlan

AskHandler = Callable[[ev.PermissionRequest], PermissionAnswer]


class Checkpointer(Protocol):
    """Snapshots of the working tree (coder/vcs). `snapshot` returns None when nothing changed; the rest is what
    /undo and /rewind use (coder/commands), declared here so they need no more than the session's parts."""

    def snapshot(self, label: str) -> Checkpoint | None: ...

    def list(self) -> list[Checkpoint]: ...

    def get(self, checkpoint_id: int | str) -> Checkpoint: ...

    def restore(self, checkpoint_id: int | str, force: bool = False) -> RestoreResult: ...

    def undo(self, force: bool = False) -> RestoreResult: ...

    def plan(self, checkpoint_id: int) -> RestorePlan: ...

    def current(self) -> Checkpoint | None: ...

    def delete_all(self) -> None: ...


class EvidenceWatch(Protocol):
    """The evidence of the session's changes (coder/engine/verify.py, issue 49): fed every event; asked once the
    model would end its turn (a note for the model, or None) and when the turn has ended (its record, or None)."""

    def observe(self, event: ev.Event) -> None: ...

    def before_end(self, session: Session) -> ev.VerifyNudge | None: ...

    def end_turn(self, final_text: str) -> Evidence | None: ...

    def current(self) -> Evidence | None: ...


@dataclass
class Limits:
    """`max_turns` (model requests) and `max_wall_time` (seconds) hold for each user turn, so an interactive
    session left open for hours keeps working; `max_cost` (USD) is the budget of the whole session."""

    max_turns: int = 100
    max_cost: float = 10.0
    max_wall_time: float = 3600.0


@dataclass
class TurnOutcome:
    reason: str  # done | max_turns | max_cost | wall_time | interrupted | error | stuck | hook
    final_text: str = ""
    error: str | None = None
    exit_code: int = 1  # for reason "error": 2 when the API refused the configuration (key, model)
    evidence: dict[str, Any] | None = None  # the turn's evidence record (coder/evidence), when it changed code


@dataclass
class SessionParts:
    session_id: str
    provider: ModelProvider
    tools: dict[str, Tool]
    policy: PermissionPolicy
    context: ContextManager
    tool_ctx: ToolContext
    system_prompt: str
    pinned: Pinned
    limits: Limits
    record: Callable[[ev.Event], None]  # persists (the store) and forwards to the frontend
    ask: AskHandler
    checkpointer: Checkpointer | None = None
    #: the repository the session works in (coder/vcs/repo.py), opened once by the builder; None outside one
    repo: Repo | None = None
    hooks: Hooks | None = None
    max_tokens: int = 8192
    thinking_budget: int | None = None
    #: the stuck detector (coder/stuck, issue 22); None: the defaults, warning only (the builder passes the
    #: configured one: it stops headless runs)
    stuck: StuckGuard | None = None
    #: what the model should hear of work that ran beside it (background subagents that ended, issue 36): asked
    #: after each step, the text is appended to the step's last tool result; empty: nothing new
    news: Callable[[], str] | None = None
    #: called first when the session closes (stopping background agents)
    on_close: list[Callable[[], None]] = field(default_factory=list)
    #: the evidence that the session's changes work (issue 49); None: not tracked
    evidence: EvidenceWatch | None = None


@dataclass
class SessionStats:
    turns: int = 0  # model requests
    cost_usd: float = 0.0
    cost_known: bool = True  # False once a model without a price answered: --max-cost cannot hold
    files_changed: set[str] = field(default_factory=set)
    turn_started: float = field(default_factory=time.monotonic)  # the current user turn's start
    turn_first_request: int = 0  # stats.turns when the current user turn started


class Session:
    def __init__(self, parts: SessionParts, restored: Restored | None = None) -> None:
        self.parts = parts
        self.id = parts.session_id
        self.history: list[Message] = []
        self.stats = SessionStats()
        self.cancel = parts.tool_ctx.cancel
        self.last_text = ""
        self._out_of_time = False
        #: checkpoint id -> messages in the history when it was taken ("0", the baseline, is the empty start)
        self.history_at: dict[str, int] = {"0": 0}
        self.stuck = parts.stuck if parts.stuck is not None else StuckGuard()
        #: a hook's `continue: false` this turn: the loop ends after the current step, and this says why
        self._hook_stop: str | None = None
        #: context a SessionStart hook gave, sent with the next user message
        self._start_context: list[str] = []
        self._cost_lock = threading.Lock()
        #: the last answer was a paused server-tool turn: the next answer continues its message
        self._paused = False
        #: mode switches the model has not heard of yet: a resumed session opened in another mode than the one its
        #: model last knew starts with one
        self.switches = ModeSwitches(restored.mode if restored and restored.mode not in ("", parts.policy.mode)
                                     else None)
        if restored is not None:
            self.history = restored.history
            self.stats.turns = restored.turns
            self.stats.cost_usd = restored.cost_usd
            self.stats.files_changed |= set(restored.files_changed)
            self.history_at.update(restored.history_at)
            parts.pinned.files_touched = sorted(self.stats.files_changed)
            parts.context.restore(restored.compactions)
            if not parts.pinned.task:
                parts.pinned.task = restored.task
            for message in restored.history:  # what tools the API runs itself counted (web search's cap)
                for tool in parts.tools.values():
                    if message.role == "assistant":
                        tool.saw_answer(message)
        parts.context.on_event = self.emit  # a summary's start is shown as it happens (CompactionStarted)

    # ---- public API used by frontends -------------------------------------------------------------------------
    def started(self, source: str) -> None:
        """The session is open (`startup`) or resumed (`resume`): SessionStart hooks may give the model context."""
        if self.parts.hooks is not None:
            verdict = self._heard(self.parts.hooks.started(source))
            self._start_context += verdict.context

    def compacting(self, instructions: str) -> None:
        """`/compact` is about to summarise the conversation: the PreCompact hooks run first. A Ctrl+C that stopped
        the turn before is spent (as `send` clears it): only one pressed during the summary stops it."""
        self.cancel.clear()
        if self.parts.hooks is not None:
            self.parts.hooks.compacting(instructions)

    def send(self, text: str | None, attached: Attached | None = None) -> TurnOutcome:
        """Run one user turn to its end. `text` None continues a session whose last message awaits the model.
        `attached`: what the person attached to it, resolved by the frontend from their own words
        (`Opened.attach`); the text itself is never read for files here (a model's, an agent's or a hook's text
        may name any file)."""
        self.cancel.clear()
        self._hook_stop = None
        context: list[str] = []
        if text is not None and self.parts.hooks is not None:
            verdict = self._heard(self.parts.hooks.prompt(text))
            why = verdict.block or verdict.stop
            if why is not None:  # the prompt never reaches the model
                self.emit(ev.ErrorEvent(f"prompt blocked by a hook: {why}"))
                self.emit(ev.TurnEnd(self.stats.turns, "hook"))
                return TurnOutcome("hook", self.last_text, why)
            context = verdict.context
        # the user may have edited files since the last turn: record that state so /undo stops there
        self._checkpoint(f"before turn {self.stats.turns + 1}", ours=False)
        if text is not None:
            self._paused = False  # a turn left paused ended: the user's message starts a new one
            given = attached or Attached()
            for why in given.refused:
                self.emit(ev.ErrorEvent(f"image not attached: {why}"))
            files, pictures = as_dicts(given.files), list(given.images)
            if pictures and not model_info(self.parts.provider.spec).vision:
                self.emit(ev.ErrorEvent(f"{self.parts.provider.spec} does not take images: each is sent as a note "
                                        "saying what it was; switch model (/model) to show them"))
            mode = str(self.parts.policy.mode)
            heard = self.switches.take(mode)
            if heard is not None:
                self.emit(ev.ModeNotice(mode, heard))
            self.emit(ev.UserMessage(text, files, [asdict(i) for i in pictures]))
            self.history.append(Message("user", [*([TextBlock(heard)] if heard else []), TextBlock(text),
                                                 *(TextBlock(b) for b in blocks(files)), *pictures]))
            self._add_context("SessionStart", self._start_context)
            self._add_context("UserPromptSubmit", context)
            self._start_context = []
            if not self.parts.pinned.task:
                self.parts.pinned.task = text
        self.stats.turn_started = time.monotonic()
        self.stats.turn_first_request = self.stats.turns
        watchdog = threading.Timer(self.parts.limits.max_wall_time, self._wall_time_up)
        watchdog.daemon = True
        watchdog.start()
        try:
            outcome = self._loop()
        finally:
            watchdog.cancel()
        if outcome.reason == "interrupted" and self._out_of_time:
            outcome.reason = "wall_time"
        self._checkpoint(f"turn {self.stats.turns}")
        record = self.parts.evidence.end_turn(outcome.final_text) if self.parts.evidence is not None else None
        if record is not None:
            outcome.evidence = record.to_dict()
            self.emit(ev.TurnEvidence(record.state, outcome.evidence))
        self.emit(ev.TurnEnd(self.stats.turns, outcome.reason))
        return outcome

    def set_mode(self, mode: str) -> None:
        """The user switched the permission mode (coder.commands.modes.set_mode: Shift+Tab, /mode, an editor over
        ACP): it holds at once, and the model hears of it with the next user message (coder/engine/mode_notice.py)."""
        self.switches.switch(self.parts.policy, mode)

    def interrupt(self) -> None:
        """Stop the stream and the running tool; the session stays consistent and resumable."""
        self.cancel.set()

    def background(self) -> None:
        """The user's Ctrl+B: a running shell command goes on in the background and its call returns at once."""
        self.parts.tool_ctx.detach.set()

    def _wall_time_up(self) -> None:
        """The wall-time limit also stops a model stream or a tool call that is running when it passes."""
        self._out_of_time = True
        self.cancel.set()

    def add_cost(self, usd: float) -> None:
        """Money spent for this session: its own requests, a compaction's summary, its subagents (whose threads
        call this as they spend, so the session's limit and total include them)."""
        with self._cost_lock:
            self.stats.cost_usd += usd

    def close(self, reason: str) -> None:
        for hook in self.parts.on_close:
            try:
                hook()
            except Exception as exc:  # noqa: BLE001 - closing must never mask the session's own outcome
                self.emit(ev.ErrorEvent(f"while closing: {type(exc).__name__}: {exc}"))
        self.emit(ev.SessionEnd(reason, self.stats.turns, round(self.stats.cost_usd, 6), self.stats.cost_known))
        for tool in self.parts.tools.values():
            try:
                tool.close()
            except Exception:  # noqa: BLE001 - closing must never mask the session's own outcome
                pass

    # ---- the loop ---------------------------------------------------------------------------------------------
    def _loop(self) -> TurnOutcome:
        stop_hook_active = False
        while True:
            if (limit := self._limit_reached()) is not None:
                return TurnOutcome(limit, self.last_text)
            if self.cancel.is_set():
                return TurnOutcome("interrupted", self.last_text)
            try:
                response = self._ask_model()
            except ModelError as exc:
                self.emit(ev.ErrorEvent(str(exc), fatal=True))
                return TurnOutcome("error", self.last_text, str(exc), exc.exit_code)
            message = self._record_response(response)
            uses = message.tool_uses()
            if response.stop_reason == "interrupted" or self.cancel.is_set():
                if uses:
                    self._append_results([self._not_run(u, "interrupted by the user") for u in uses])
                return TurnOutcome("interrupted", self.last_text)
            if response.stop_reason == "pause_turn" and not uses:
                continue  # the API paused a server-tool turn: the next request ends with the answer, which resumes
            if not uses:
                ended = self._turn_ends(stop_hook_active)
                if ended is not None:
                    return ended
                stop_hook_active = True  # a Stop hook kept the turn going
                continue
            results: list[ToolResultBlock] = []
            for use in uses:
                if self.cancel.is_set():
                    results.append(self._not_run(use, "interrupted by the user"))
                else:
                    results.append(self._call_tool(use))
            if self._stuck_after_step(results):
                return TurnOutcome("stuck", self.last_text, self.stuck_reason)
            if self._hook_stop is not None:
                self.emit(ev.ErrorEvent(f"a hook stopped the turn: {self._hook_stop}"))
                return TurnOutcome("hook", self.last_text, self._hook_stop)

    def _limit_reached(self) -> str | None:
        limits = self.parts.limits
        if self.stats.turns - self.stats.turn_first_request >= limits.max_turns:
            return "max_turns"
        if self.stats.cost_usd >= limits.max_cost:
            return "max_cost"
        if time.monotonic() - self.stats.turn_started >= limits.max_wall_time:
            return "wall_time"
        return None

    def _ask_model(self) -> ModelResponse:
        parts = self.parts
        tool_specs = [s for s in (t.spec() for t in parts.tools.values()) if s is not None]
        for attempt in (1, 2):
            prepared = parts.context.prepare(parts.system_prompt, self.history, tool_specs, parts.pinned)
            for c in prepared.compactions:
                self.add_cost(float(c.data.get("cost_usd", 0.0)))  # the summary call's own cost
                self.emit(c.event())
            request = prepared.request
            request.max_tokens = parts.max_tokens
            request.thinking_budget = parts.thinking_budget
            try:
                with retry_listener(self._retrying):  # waits on rate limits are shown, with their countdown
                    response = parts.provider.complete(request, on_text=self._on_text, cancel=self.cancel)
            except ContextOverflowError:
                if attempt == 2:
                    raise
                parts.context.force_compaction()
                continue
            self.stats.turns += 1
            self.add_cost(response.cost_usd)
            for tool in parts.tools.values():  # a tool the API runs itself counts its uses (web search's cap)
                tool.saw_answer(response.message)
            for note in response.notes:  # e.g. a model the model table does not know (the provider says it once)
                self.emit(ev.ErrorEvent(note))
            if not response.cost_known and self.stats.cost_known:
                self.stats.cost_known = False
                self.emit(ev.ErrorEvent(f"cost unknown: no price for {response.model}; --max-cost cannot be "
                                        f"enforced. Add [pricing.\"{response.model}\"] to the config."))
            parts.context.record_usage(response.usage)
            u = response.usage
            self.emit(ev.UsageEvent(u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens,
                                     round(response.cost_usd, 6), round(self.stats.cost_usd, 6),
                                     u.total_input, parts.provider.context_window, self.stats.cost_known))
            return response
        raise AssertionError("unreachable")

    def _retrying(self, seconds: float, attempt: int, max_retries: int, why: Exception) -> None:
        self.emit(ev.RetryWait(round(seconds, 1), attempt, max_retries, str(why)[:200]))

    def _on_text(self, delta: str) -> None:
        self.emit(ev.TextDelta(delta))

    def _record_response(self, response: ModelResponse) -> Message:
        """The answer into the history; the answer to a paused turn continues that turn's message (the API resumes
        it: one assistant message, as the next request sends it; history.rebuild merges the same way)."""
        message = response.message
        resumes, self._paused = self._paused, response.stop_reason == "pause_turn"
        if response.stop_reason == "interrupted":  # tool calls cut mid-stream never ran: keep the text only
            kept: list[Block] = [b for b in message.content if isinstance(b, TextBlock) and b.text]
            message = Message("assistant", kept or [TextBlock("[interrupted]")])
        resumes = resumes and bool(self.history) and self.history[-1].role == "assistant"
        if not message.content and not resumes:
            message = Message("assistant", [TextBlock("(no answer)")])
        if resumes:
            self.history[-1] = Message("assistant", [*self.history[-1].content, *message.content])
        else:
            self.history.append(message)
        if message.text():
            self.last_text = message.text()
        self.emit(ev.AssistantMessage(message.to_dict(), response.stop_reason))
        return message

    def _append_results(self, results: list[ToolResultBlock]) -> None:
        self.history.append(Message("user", list(results)))

    # ---- one tool call ----------------------------------------------------------------------------------------
    def _call_tool(self, use: ToolUseBlock) -> ToolResultBlock:
        parts = self.parts
        self.emit(ev.ToolCallRequested(use.id, use.name, use.input))
        tool = parts.tools.get(use.name)
        if tool is None:
            known = ", ".join(sorted(parts.tools))
            return self._finish(use, ToolResult(f"Unknown tool {use.name!r}. Available tools: {known}.", True))
        unloaded = not_loaded(parts.tools, use.name, self.history)
        if unloaded:  # a deferred tool never loaded: the model has no definition of it, its input is a guess
            return self._finish(use, ToolResult(unloaded, True))
        try:
            call = parse_call(tool, use.input)  # the one door: every step below asks the call's params
        except ToolInputError as exc:
            return self._finish(use, ToolResult(str(exc), True))
        gate = self._heard(parts.hooks.pre_tool(use.id, call)) if parts.hooks else NO_VERDICT
        if gate.stop is not None:
            self._hook_stop = gate.stop
            return self._not_run(use, f"a hook stopped the turn ({gate.stop})")
        if gate.updated_input is not None:  # the hook rewrote the call: what runs comes through the door again
            try:
                call = parse_call(tool, gate.updated_input)
            except ToolInputError as exc:
                return self._finish(use, ToolResult(f"A hook rewrote this call's input wrongly: {exc}", True))
            use = replace(use, input=call.input)
        blocked = self._permission(use, call, gate)
        if blocked is not None:
            return blocked
        if parts.hooks is not None:
            reason = parts.hooks.before_tool(call)
            if reason is not None:
                self.emit(ev.ToolCallDenied(use.id, use.name, reason, "hook"))
                return self._finish(use, ToolResult(f"Blocked by a hook: {reason}", True))
        started = time.monotonic()
        live = LiveOutput(lambda text: self.emit(ev.ToolOutput(use.id, text)))  # shown as it comes, bounded
        parts.tool_ctx.progress = live
        parts.tool_ctx.detach.clear()  # a Ctrl+B meant for an earlier call
        try:
            result = call.tool.run(call.params, parts.tool_ctx)
        except ToolError as exc:
            result = ToolResult(str(exc), True)
        except Exception as exc:  # noqa: BLE001 - a tool bug is a result the model can read, never a crash
            result = ToolResult(f"{use.name} failed: {type(exc).__name__}: {exc}", True)
        finally:
            parts.tool_ctx.progress = None
            live.close()  # nothing of this call's live output comes after its result
        if parts.hooks is not None:
            feedback = self._heard(parts.hooks.after_tool(use.id, call, result))
            result = with_feedback(result, feedback)
            self._hook_stop = self._hook_stop or feedback.stop
        return self._finish(use, result, time.monotonic() - started)

    def _permission(self, use: ToolUseBlock, call: ToolCall, gate: HookVerdict = NO_VERDICT) -> ToolResultBlock | None:
        """None when the call may run; otherwise the denial result. `gate` is what the PreToolUse hooks said."""
        parts = self.parts
        permission = call.tool.permission_for(call.params, parts.tool_ctx)
        facts = call.tool.facts(call.params)
        decision = hook_permission(parts.policy.decide(use.name, permission, use.input, facts), gate)
        if decision.action == "ask" and parts.hooks is not None:  # a PermissionRequest hook may answer first
            asked = self._heard(parts.hooks.permission_request(call))
            if asked.permission in ("allow", "deny"):
                decision = hook_permission(decision, asked, answers_question=True)
        if decision.action == "ask":
            request = ev.PermissionRequest(use.id, use.name, use.input, decision.reason, decision.suggested_rule)
            self.emit(request)
            answer = parts.ask(request)
            if answer.allow:
                if answer.remember:
                    parts.policy.remember(answer)
                self.emit(ev.ToolCallApproved(use.id, use.name, answer.rule, "user"))
                return None
            reason = answer.message or "the user denied this call"
            self.emit(ev.ToolCallDenied(use.id, use.name, reason, "user"))
            return self._finish(use, ToolResult(f"Permission denied: {reason}.", True))
        if decision.action == "deny" and decision.rule == "hook":
            self.emit(ev.ToolCallDenied(use.id, use.name, decision.reason, "hook"))
            return self._finish(use, ToolResult(f"Blocked by a hook: {decision.reason}", True))
        if decision.action == "deny":
            self.emit(ev.ToolCallDenied(use.id, use.name, decision.reason, "policy"))
            return self._finish(use, ToolResult(f"Permission denied by policy ({decision.rule}): {decision.reason}",
                                                True))
        self.emit(ev.ToolCallApproved(use.id, use.name, decision.rule, "hook" if decision.rule == "hook" else "policy"))
        return None

    def _finish(self, use: ToolUseBlock, result: ToolResult, duration: float = 0.0) -> ToolResultBlock:
        self.add_cost(float(result.data.get("cost_usd", 0.0)))  # money a tool spent
        if result.files_changed:
            self.stats.files_changed.update(result.files_changed)
            self.parts.pinned.files_touched = sorted(self.stats.files_changed)
        self.emit(ev.ToolCallFinished(use.id, use.name, use.input, result.output, result.is_error,
                                       list(result.files_changed), round(duration, 4), result.data,
                                       [asdict(i) for i in result.images]))
        return ToolResultBlock(use.id, result.output, result.is_error,  # the tools a tool search loads:
                               tool_references=list(result.data.get("tool_references", [])),
                               images=list(result.images))

    def _heard(self, verdict: HookVerdict) -> HookVerdict:
        """A hook's verdict, once what it tells the user is said."""
        for note in verdict.notes:
            self.emit(ev.ErrorEvent(f"hook: {note}"))
        return verdict

    def _add_context(self, event: str, texts: list[str]) -> None:
        for text in texts:
            self.emit(ev.HookContext(event, text))
            add_hook_context(self.history, event, text)

    def _turn_ends(self, active: bool) -> TurnOutcome | None:
        """The model ended its turn: the outcome, or None when the turn goes on: the changed code has no proof yet
        and the model is told so, once (issue 49, coder/engine/verify.py), or a Stop hook blocks the stop (its
        reason goes to the model; `active` tells the hook it already did so, as Claude Code's
        `stop_hook_active`). Either is a step the stuck detector counts like any other: a hook that never lets go
        while the model says the same thing is a loop it nudges, then stops (headless)."""
        done = TurnOutcome("hook" if self._hook_stop else "done", self.last_text, self._hook_stop)
        if self._hook_stop is not None or self.cancel.is_set():
            return done
        nudge = self.parts.evidence.before_end(self) if self.parts.evidence is not None else None
        block = ""
        if nudge is None:
            if self.parts.hooks is None:
                return done
            verdict = self._heard(self.parts.hooks.stopping(active, self.last_text))
            if verdict.stop is not None:
                self._hook_stop = verdict.stop
                return TurnOutcome("hook", self.last_text, verdict.stop)
            if verdict.block is None:
                return done
            block = verdict.block
        stuck = self.stuck.after_step()
        for event in stuck.events:
            self.emit(event)
        note = f"\n\n{stuck.note}" if stuck.note else ""
        if nudge is not None:
            nudge.text += note
            self.emit(nudge)
            self.history.append(Message("user", [TextBlock(nudge.text)]))
        else:
            self._add_context("Stop", [block + note])
        if stuck.stop:
            self.stuck_reason = stuck.reason
            return TurnOutcome("stuck", self.last_text, stuck.reason)
        return None

    def _not_run(self, use: ToolUseBlock, why: str) -> ToolResultBlock:
        return self._finish(use, ToolResult(f"Not run: {why}.", True))

    def _checkpoint(self, label: str, ours: bool = True) -> None:
        """Snapshot the work tree; `ours` counts its changes as the session's (what review and commit cover)."""
        if self.parts.checkpointer is None:
            return
        try:
            checkpoint = self.parts.checkpointer.snapshot(label)
        except Exception as exc:  # noqa: BLE001 - a failed snapshot is reported, the session goes on
            self.emit(ev.ErrorEvent(f"checkpoint failed: {exc}"))
            return
        if checkpoint is not None:
            changed = list(getattr(checkpoint, "files_changed", []))
            if ours:
                self.stats.files_changed.update(changed)
            self.history_at[str(checkpoint.id)] = len(self.history)
            self.emit(ev.CheckpointEvent(str(checkpoint.id), label, changed, len(self.history)))

    def rewind_conversation(self, checkpoint_id: str, keep: int | None = None) -> int:
        """Cut the conversation back to where it was when checkpoint `checkpoint_id` was taken, or to `keep`
        messages (before a user message, for /rewind N); the caller restores the files. Returns the number of
        messages dropped. KeyError for an unknown checkpoint."""
        keep = self.history_at[str(checkpoint_id)] if keep is None else keep
        dropped = len(self.history) - keep
        del self.history[keep:]
        self._paused = False
        forget_after(self.history_at, keep)
        self.emit(ev.RewindEvent(str(checkpoint_id), keep))
        return dropped

    def _stuck_after_step(self, results: list[ToolResultBlock]) -> bool:
        """Issue 22: the detector's note goes to the model with the step's last result; True: stop the turn."""
        verdict = self.stuck.after_step(results[-1].tool_use_id if results else "")
        news = self.parts.news() if self.parts.news is not None and results else ""
        if news:  # issue 36: background agents that ended, with their reports
            last = results[-1]
            results[-1] = ToolResultBlock(last.tool_use_id, f"{last.content}\n\n{news}", last.is_error)
            self.emit(ev.AgentNews(last.tool_use_id, news))
        if verdict.note and results:
            last = results[-1]
            notes = "".join(f"\n\n{e.note}" for e in verdict.events if e.note)  # as history.rebuild adds them
            results[-1] = replace(last, content=last.content + notes)
        for event in verdict.events:
            self.emit(event)
        self._append_results(results)
        self.stuck_reason = verdict.reason
        return verdict.stop

    def switch_model(self, provider: ModelProvider) -> None:
        """`/model`: later requests go to `provider`; a context manager that summarised with the old one follows
        (the tiered one holds a provider, the passthrough one none)."""
        old, self.parts.provider = self.parts.provider, provider
        if getattr(self.parts.context, "provider", None) is old:
            self.parts.context.provider = provider  # type: ignore[attr-defined]

    def emit(self, event: ev.Event) -> None:
        self.stuck.observe(event)
        if self.parts.evidence is not None:
            self.parts.evidence.observe(event)
        self.parts.record(event)
        if self.parts.hooks is not None:
            self.parts.hooks.on_event(event)


def no_questions(request: ev.PermissionRequest) -> PermissionAnswer:
    """The headless answer to `ask`: deny, never block. The model reads why; a call no rule can allow (a protected
    path: the policy offers no rule for it) gets no hint to allow it."""
    why = f": {request.reason}" if request.reason else ""
    hint = (" (allow it with --allow or a [permissions] rule, or use --permission-mode auto)"
            if request.suggested_rule else "")
    return PermissionAnswer(False, message=f"headless run, and the policy asks for approval that nobody can give"
                            f"{why}{hint}")

