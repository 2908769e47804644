"""TieredContext: fit every request into a token budget, cheapest tier first, and keep the cache warm.

Per request the engine calls `prepare`. Long new tool outputs are clipped at first sight (tier 1), before any
request carries them. When the request passes `compact_at` tokens, one compaction runs: observations older than
the last K turns are masked (tier 2: every old one, or only superseded ones, `[context] mask`) and, if that leaves
the request above `mask_target` of compact_at and above `target`, a structured handoff replaces the oldest turns
(tier 3). Between compactions the view is the previous view plus the new
messages, byte for byte, so the provider's cache serves the whole prefix; a compaction is one large step that
buys many cheap requests after it.

All state lives in the Compaction records returned to the engine (which persists them), so `restore` rebuilds
exactly the same view after a resume.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from coder.base.errors import CoderError, ContextOverflowError, Interrupted
from coder.base.events import CompactionStarted, Event
from coder.config.sections import ContextSettings
from coder.context.base import Compaction, Pinned, Prepared
from coder.context.clipping import ClipTier, cut_user_texts
from coder.context.history import assistant_indexes, fingerprint, repair_pairing, replace_results
from coder.context.images import drop_images, old_images
from coder.context.masking import MaskTier
from coder.context.summary import (
    EXTENSION,
    LLMSummarizer,
    Summarizer,
    SummaryState,
    code_narrative,
    collect_facts,
    extractive_narrative,
    handoff,
    instruction,
    narrative_of,
    render,
    summary_request,
)
from coder.context.tokens import TokenEstimator
from coder.models.types import (
    Message,
    ModelProvider,
    ModelRequest,
    TextBlock,
    ToolSpec,
    Usage,
)


@dataclass
class ContextStats:
    """What the session spent, for the status line and the benchmark: cached share of input tokens."""

    requests: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    summary_calls: int = 0
    summary_input_tokens: int = 0
    summary_output_tokens: int = 0
    compactions: int = 0
    breaker_trips: int = 0

    @property
    def total_input(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def cached_share(self) -> float:
        return self.cache_read_tokens / self.total_input if self.total_input else 0.0


class TieredContext:
    """The context manager the engine uses (implements coder.context.base.ContextManager)."""

    def __init__(self, provider: ModelProvider, config: ContextSettings | None, state_dir: Path,
                 summarizer: Summarizer | None = None, cancel: threading.Event | None = None,
                 on_event: Callable[[Event], None] | None = None) -> None:
        """`cancel`: the session's interrupt, honoured by the summary call. `on_event`: told when a slow step (the
        summary call) starts, so a frontend can show it (the session sets it to its `emit`)."""
        self.config = config or ContextSettings()
        self.state_dir = Path(state_dir)
        self.provider = provider
        self.estimator = TokenEstimator(self.config.chars_per_token)
        self.summarizer: Summarizer = summarizer or LLMSummarizer(provider, cancel=cancel)
        self.on_event = on_event
        self.clipper = ClipTier(self.state_dir, self.config.clip_chars, self.config.clip_head_lines,
                                self.config.clip_tail_lines)
        self.masker = MaskTier(self.state_dir, self.config.recent_turns, self.config.mask_min_chars,
                               mode=self.config.mask)
        self.stats = ContextStats()
        self._reset_state()
        self._last_system = ""
        self._last_tools: list[ToolSpec] = []
        self._last_estimate = 0

    @property
    def provider(self) -> ModelProvider:
        return self._provider

    @provider.setter
    def provider(self, provider: ModelProvider) -> None:
        """Switching models (`/model`) changes the window, hence the budget, and the model that summarises."""
        self._provider = provider
        self.window = int(getattr(provider, "context_window", 200_000) or 200_000)
        self.budget = self.config.budget_tokens(self.window)
        self.compact_at = self.config.compact_at_tokens(self.budget)
        self.target = int(self.compact_at * self.config.target)
        if isinstance(getattr(self, "summarizer", None), LLMSummarizer):
            self.summarizer.provider = provider  # type: ignore[union-attr]

    def _reset_state(self) -> None:
        self.replacements: dict[str, str] = {}
        self.dropped_images: dict[str, str] = {}  # image digest -> the note that stands for it (coder/context/images)
        self.summary: SummaryState | None = None
        self.hard_text_limit: int | None = None
        self._breaker_until = 0
        self._forced = False
        self._prev_view: list[Message] = []  # the last view sent: what the cache holds

    # ----------------------------------------------------------------- the protocol
    def prepare(self, system: str, history: list[Message], tools: list[ToolSpec], pinned: Pinned) -> Prepared:
        system = self._system(system, pinned)
        self._last_system, self._last_tools = system, list(tools)
        compactions: list[Compaction] = []
        clipped = self.clipper.run(history, self.replacements)
        if clipped:
            before = self.estimator.request(system, self._view(history), tools)
            self.replacements.update(clipped)
            after = self.estimator.request(system, self._view(history), tools)
            compactions.append(Compaction("truncate", before, after, {"replacements": clipped}))
        view = self._view(history)
        tokens = self._count(system, view, tools)
        forced, self._forced = self._forced, False
        if forced or tokens > self.budget or (tokens > self.compact_at and tokens > self._breaker_until
                                              and self._worth_compacting(view, tokens)):
            compactions += self._compact(system, history, view, tools, pinned, tokens, forced)
            view = self._view(history)
            tokens = self._count(system, view, tools)
        if tokens > self.budget:
            view, tokens, cut = self._hard_cut(system, view, tools, tokens)
            compactions.append(cut)
            if tokens > self.budget:
                raise ContextOverflowError(
                    f"the request needs about {tokens} tokens even after compaction and cutting every long "
                    f"output, over the budget of {self.budget} (window {self.window}); raise [context] budget "
                    "or start a new session with a shorter task text")
        self.stats.compactions += sum(1 for c in compactions if c.kind != "breaker")
        request = ModelRequest(system, view, list(tools), self.config.max_output_tokens, True,
                               self._breakpoints(view))
        self._prev_view = view
        self._last_estimate = tokens
        return Prepared(request, compactions, tokens)

    def restore(self, compactions: list[Compaction]) -> None:
        """Rebuild the state from persisted compactions, oldest first (dicts are accepted too)."""
        self._reset_state()
        for item in compactions:
            comp = Compaction(**item) if isinstance(item, dict) else item
            data = comp.data
            if comp.kind in ("truncate", "mask"):
                self.replacements.update(data.get("replacements", {}))
                if data.get("hard_text_limit"):
                    self.hard_text_limit = int(data["hard_text_limit"])
            elif comp.kind == "images":
                self.dropped_images.update(data.get("dropped", {}))
            elif comp.kind == "summary":
                self.summary = SummaryState(data["text"], int(data["covered"]), data["anchor"],
                                            data.get("narrative", narrative_of(data["text"])))
            elif comp.kind == "breaker":
                self._breaker_until = int(data.get("resume_above", 0))

    def compact_now(self, history: list[Message], pinned: Pinned, focus: str = "") -> Compaction | None:
        """`/compact [focus]`: summarise everything but the last two turns, now, whatever the size."""
        system = self._system(self._last_system, pinned) if self._last_system else ""
        view = self._view(history)
        before = self.estimator.request(system, view, self._last_tools)
        comp = self._summarize(system, history, view, self._last_tools, pinned, target=0, focus=focus,
                               keep_turns=min(2, self.config.recent_turns), tokens_before=before, trigger="manual")
        if comp is not None:
            self.stats.compactions += 1
        return comp

    def force_compaction(self) -> None:
        """The provider said the last request overflowed: our estimate was low. Learn from it, and compact
        on the next `prepare` whatever the count says (the engine then retries once)."""
        if 0 < self._last_estimate < self.window:
            self.estimator.calibrate(self._last_estimate, self.window + 1)
        self._forced = True

    def record_usage(self, usage: Usage) -> None:
        """The usage of the answer to the last prepared request: calibrates the estimate, tracks cached share."""
        self.stats.requests += 1
        self.stats.input_tokens += usage.input_tokens
        self.stats.cache_read_tokens += usage.cache_read_tokens
        self.stats.cache_write_tokens += usage.cache_write_tokens
        if self._last_estimate and usage.total_input:
            self.estimator.calibrate(self._last_estimate, usage.total_input)

    # ----------------------------------------------------------------- views and counting
    def _system(self, system: str, pinned: Pinned) -> str:
        """The system prompt, with the project instructions appended when the engine did not already include
        them; it never carries volatile pins (they would break the cache of everything after it)."""
        if pinned.instructions.strip() and pinned.instructions.strip() not in system:
            return f"{system}\n\n# Project instructions (AGENTS.md)\n{pinned.instructions.strip()}"
        return system

    def _summary_applies(self, history: list[Message]) -> bool:
        s = self.summary
        return bool(s and 0 < s.covered < len(history) and fingerprint(history[s.covered - 1]) == s.anchor)

    def _view(self, history: list[Message]) -> list[Message]:
        if self.summary and self._summary_applies(history):
            # the first message (the task) stays first and verbatim: with system and tools it is a prefix that
            # no compaction changes, so it stays cached across compactions (a breakpoint sits on it)
            view = handoff(history, self.summary) + replace_results(history, self.replacements, self.summary.covered)
        else:
            view = replace_results(history, self.replacements)
        view = drop_images(view, self.dropped_images)
        if self.hard_text_limit:
            view = cut_user_texts(view, self.state_dir, self.hard_text_limit)
        return repair_pairing(view)

    def _count(self, system: str, view: list[Message], tools: list[ToolSpec]) -> int:
        estimate = self.estimator.request(system, view, tools)
        mode = self.config.count_with_provider
        near = any(0.9 * limit <= estimate <= 1.1 * limit for limit in (self.compact_at, self.budget))
        if mode == "always" or (mode == "threshold" and (near or estimate > self.budget)):
            try:
                exact = int(self.provider.count_tokens(ModelRequest(system, view, list(tools))))
            except (CoderError, OSError, ValueError, RuntimeError):
                return estimate  # a counter that fails must not stop the session; the estimate is conservative
            if exact > 0:
                self.estimator.calibrate(estimate, exact)
                return exact
        return estimate

    def _breakpoints(self, view: list[Message]) -> list[int]:
        """Cache breakpoints where they pay (the provider adds one after system + tools), at most three, in this
        order while there is room: this request's end; after a compaction, the end of what this view shares with
        the previous request (what the cache can still serve); just before the first output a later mask may
        change (`MaskTier.floor`); the first message (system, tools and task never change, so every request and
        every summary reads them); the end of the part before the last turn (the previous request's end, which
        the end's breakpoint finds by itself unless the last turn has more than 20 blocks).
        The API looks back only 20 blocks from a breakpoint for a prefix an earlier request cached: without the
        floor's breakpoint in the requests before it, a mask far back in the history finds nothing cached after
        the task and writes the whole tail again."""
        stable = 0
        for old, new in zip(self._prev_view, view, strict=False):
            if old is not new and old != new:
                break
            stable += 1
        turns = [i for i, m in enumerate(view) if m.role == "assistant"]
        changed = stable - 1 if 0 < stable < len(self._prev_view) else -1
        points = [len(view) - 1, changed, self.masker.floor(view) - 1, 0, turns[-1] - 1 if turns else -1]
        return sorted(list(dict.fromkeys(p for p in points if 0 <= p < len(view)))[:3])

    # ----------------------------------------------------------------- compaction
    def _worth_compacting(self, view: list[Message], tokens: int) -> bool:
        """Whether the part a compaction may touch (everything before the last K turns) is big enough to free
        the minimum gain once replaced by a handoff. When the recent turns alone fill the threshold, compacting
        would free little and break the cache for nothing: wait until older turns pile up."""
        turns = [i for i, m in enumerate(view) if m.role == "assistant"]
        if len(turns) <= self.config.recent_turns:
            return False
        older = view[:turns[-self.config.recent_turns]] if self.config.recent_turns else view
        kept_text = sum(self.estimator.text(b.text) for m in older if m.role == "user" for b in m.content
                        if isinstance(b, TextBlock))  # user messages are copied into the handoff verbatim
        gain = self.estimator.messages(older) - kept_text - self.config.summary_max_tokens
        return gain >= max(int(self.config.min_gain * tokens), 256)

    def _compact(self, system: str, history: list[Message], view: list[Message], tools: list[ToolSpec],
                 pinned: Pinned, tokens_before: int, forced: bool) -> list[Compaction]:
        out: list[Compaction] = []
        saved, saved_images = dict(self.replacements), dict(self.dropped_images)
        try:
            return self._compact_tiers(system, history, view, tools, pinned, tokens_before, forced, out)
        except BaseException:
            # nothing of a failed compaction may survive: it was never persisted
            self.replacements, self.dropped_images = saved, saved_images
            raise

    def _compact_tiers(self, system: str, history: list[Message], view: list[Message], tools: list[ToolSpec],
                       pinned: Pinned, tokens_before: int, forced: bool, out: list[Compaction]) -> list[Compaction]:
        tokens = tokens_before
        images = old_images(history, self.config.recent_turns, self.dropped_images)
        if images:  # images first (issue 35): the most tokens for the least loss
            self.dropped_images.update(images)
            tokens = self.estimator.request(system, self._view(history), tools)
            out.append(Compaction("images", tokens_before, tokens, {"dropped": images}))
        enough = images and tokens <= self.target and not forced  # the images alone freed enough
        masks = {} if enough else self.masker.run(history, self.replacements)
        if masks:
            self.replacements.update(masks)
            tokens = self.estimator.request(system, self._view(history), tools)
            out.append(Compaction("mask", tokens_before, tokens, {"replacements": masks}))
        # forced: the provider refused the request, so our count was wrong; halve what we send at least
        target = min(self.target, tokens_before // 2) if forced else self.target
        # the cheap tiers (images, masking) alone got low enough: no summary (issue 33 round 2, issue 35)
        masked_enough = bool(masks or images) and not forced and tokens <= self.config.mask_target * self.compact_at
        if tokens > target and not masked_enough:
            comp = self._summarize(system, history, view, tools, pinned, target, "", self.config.recent_turns,
                                   tokens)
            if comp is not None:
                out.append(comp)
                tokens = comp.tokens_after
        gain = tokens_before - tokens
        needed = max(int(self.config.min_gain * tokens_before), 256)
        if gain < needed:
            self._breaker_until = tokens_before + needed
            self.stats.breaker_trips += 1
            out.append(Compaction("breaker", tokens_before, tokens, {
                "reason": f"compaction freed {gain} tokens, less than the minimum {needed}; not retried until "
                          f"the context passes {self._breaker_until} tokens",
                "resume_above": self._breaker_until}))
        return out

    def _summarize(self, system: str, history: list[Message], view: list[Message], tools: list[ToolSpec],
                   pinned: Pinned, target: int, focus: str, keep_turns: int,
                   tokens_before: int, trigger: str = "auto") -> Compaction | None:
        """Replace the oldest turns by a handoff: the fewest turns that bring the request down to `target`,
        never the last `keep_turns`. `view` is the view the previous request was built from, so the summary
        call reads its prefix from the cache."""
        turns = assistant_indexes(history)
        done = self.summary.covered if self.summary and self._summary_applies(history) else 0
        limit = turns[-keep_turns] if keep_turns and len(turns) > keep_turns else (
            turns[-1] if turns and not keep_turns else 0)
        candidates = [i for i in turns if max(done, 1) < i <= limit]  # history[0] always stays
        if not candidates:
            return None
        fixed = self.estimator.request(system, history[:1], tools) + self.config.summary_max_tokens + 400
        tail = replace_results(history, self.replacements, candidates[0])
        sizes = [self.estimator.message(m) for m in tail]
        suffix = [0] * (len(sizes) + 1)
        for i in range(len(sizes) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + sizes[i]
        cut = candidates[-1]
        for i in candidates:
            if fixed + suffix[i - candidates[0]] <= target:
                cut = i
                break
        by_code = self.config.handoff == "code" and trigger == "auto"  # `/compact` is asking the model for one
        if self.on_event is not None:
            self.on_event(CompactionStarted(cut - 1, tokens_before, trigger, "code" if by_code else "model"))
        started = time.monotonic()
        # the summary reads what it replaces: the view up to the first kept turn, which is what the previous request
        # sent (all of it in the cache); the kept turns stay verbatim after the handoff and need no summary
        kept_at = next((i for i, m in enumerate(view) if m is history[cut]), len(view))
        seen = view[:kept_at] if kept_at > 1 else view
        # a summary extends the previous one (the model writes only what the turns since add) until the narrative
        # reaches half the cap; then, and for a /compact focus, it is written anew
        previous = self.summary.narrative if done and self.summary else ""
        extend = bool(previous) and not focus and self.estimator.text(previous) <= self.config.summary_max_tokens // 2
        usage: Usage | None = None
        if by_code:
            narrative, kept, fallback = code_narrative(history[done:cut], previous), previous, ""
        else:
            narrative, fallback, usage = self._ask_summary(system, tools, seen, history[done:cut],
                                                           instruction(len(turns) - turns.index(cut), focus, extend))
            if extend:
                narrative = previous.rstrip() + EXTENSION + narrative.strip()
            kept = narrative
        facts = collect_facts(history[:cut], pinned, self.state_dir, self.config.instruction_max_chars,
                              first_kept=True,
                              calls_chars=int(self.config.calls_tokens * self.config.chars_per_token))
        text = render(facts, narrative, cut - 1)
        self.summary = SummaryState(text, cut, fingerprint(history[cut - 1]), kept)
        after = self.estimator.request(system, self._view(history), tools)
        return Compaction("summary", tokens_before, after, duration_s=time.monotonic() - started, data={
            "text": text, "covered": cut, "anchor": self.summary.anchor, "fallback": fallback,
            "extended": extend and not by_code, "narrative": kept, "by": "code" if by_code else "model",
            "usage": asdict(usage) if usage is not None else None, "focus": focus,
            "cost_usd": 0.0 if by_code else float(getattr(self.summarizer, "last_cost", 0.0))})

    def _ask_summary(self, system: str, tools: list[ToolSpec], seen: list[Message], covered: list[Message],
                     prompt: str) -> tuple[str, str, Usage | None]:
        """The model's account of the turns `seen` ends with (narrative, why it fell back, usage): one call, whose
        prefix the cache holds; a model-free stand-in when the model fails or says nothing."""
        request = summary_request(system, tools, seen, prompt, self.config.summary_max_tokens, self._breakpoints(seen))
        fallback = ""
        usage: Usage | None = None
        try:
            narrative, usage = self.summarizer(request)
        except Interrupted:
            raise
        except CoderError as exc:  # the model failed: keep the session going with a model-free handoff
            narrative, fallback = "", f"{type(exc).__name__}: {exc}"
        if not narrative.strip():
            fallback = fallback or "the model returned no text"
            narrative = extractive_narrative(covered, fallback)
        self.stats.summary_calls += 1
        if usage is not None:
            self.stats.summary_input_tokens += usage.total_input
            self.stats.summary_output_tokens += usage.output_tokens
        return narrative, fallback, usage

    def _hard_cut(self, system: str, view: list[Message], tools: list[ToolSpec],
                  tokens: int) -> tuple[list[Message], int, Compaction]:
        """A single turn bigger than the budget: cut every long output and text once (never in a loop)."""
        text_limit = max(self.config.hard_clip_chars, int(self.budget * self.config.chars_per_token) // 4)
        new_view, replacements = self.clipper.hard_cut(view, self.config.hard_clip_chars)
        new_view = cut_user_texts(new_view, self.state_dir, text_limit)
        self.replacements.update(replacements)
        self.hard_text_limit = text_limit
        after = self._count(system, new_view, tools)
        return new_view, after, Compaction("truncate", tokens, after, {
            "replacements": replacements, "hard_text_limit": text_limit, "hard": True})
