"""The session loop: ask the model, hand each tool call to the dispatch (coder/engine/dispatch.py: the door, the
hooks, the policy, the tool), feed the results back; around it the turn's limits, its end (the evidence's nudge,
Stop hooks, the stuck detector), the checkpoints and the rewind.

Everything concrete (which provider, which tools, how context is shaped, where events go) arrives through
`SessionParts` (coder/engine/session_parts.py); `coder.engine.builder` assembles the defaults.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, replace

from coder.base import events as ev
from coder.base.errors import ContextOverflowError, ModelError
from coder.engine.dispatch import Dispatch
from coder.engine.history import Restored, add_hook_context
from coder.engine.hook_steps import noted
from coder.engine.mentions import Attached, as_dicts, blocks
from coder.engine.mode_notice import ModeSwitches
from coder.engine.session_parts import SessionParts, SessionStats, TurnOutcome
from coder.engine.turns import forget_after
from coder.models.model_table import model_info
from coder.models.retry import retry_listener
from coder.models.types import Block, Message, ModelProvider, ModelResponse, TextBlock, ToolResultBlock
from coder.stuck.guard import StuckGuard
from coder.tools.base import ToolResult


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
        self.calls = Dispatch(parts, self.emit, self._account)
        parts.context.on_event = self.emit  # a summary's start is shown as it happens (CompactionStarted)

    # ---- public API used by frontends -------------------------------------------------------------------------
    def started(self, source: str) -> None:
        """The session is open (`startup`) or resumed (`resume`): SessionStart hooks may give the model context."""
        if self.parts.hooks is not None:
            verdict = noted(self.parts.hooks.started(source), self.emit)
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
            verdict = noted(self.parts.hooks.prompt(text), self.emit)
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

    def _account(self, result: ToolResult) -> None:
        """What a tool call's result spent (a subagent's, a web fetch's summary) and changed."""
        self.add_cost(float(result.data.get("cost_usd", 0.0)))
        if result.files_changed:
            self.stats.files_changed.update(result.files_changed)
            self.parts.pinned.files_touched = sorted(self.stats.files_changed)

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
                    self._append_results([self.calls.not_run(u, "interrupted by the user") for u in uses])
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
                    results.append(self.calls.not_run(use, "interrupted by the user"))
                else:
                    results.append(self.calls.call(use, self.history))
                    self._hook_stop = self._hook_stop or self.calls.stop
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
        nudge = self.parts.evidence.before_end(self.parts) if self.parts.evidence is not None else None
        block = ""
        if nudge is None:
            if self.parts.hooks is None:
                return done
            verdict = noted(self.parts.hooks.stopping(active, self.last_text), self.emit)
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
