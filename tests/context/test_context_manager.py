"""TieredContext: thresholds, large steps, stable prefixes, pins, restore, and the safety rules."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

import pytest
from context_helpers import HistoryBuilder, lines

from coder.base import events as ev
from coder.base.errors import ConfigError, ContextOverflowError, Interrupted, ModelError
from coder.config.layers import settings
from coder.context.base import Compaction, Pinned
from coder.context.history import pairing_problems
from coder.context.manager import TieredContext
from coder.models.scripted import ScriptedProvider
from coder.models.types import Message, ModelRequest, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock, Usage

HANDOFF = "## Intent\nMake greet polite.\n## Plan and next\n1. rerun the tests"
SCRIPT = {"turns": [{"when": "about to be compacted", "repeat": True, "text": HANDOFF}]}
TOOLS = [ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})]
#: the summary tier's tests: only superseded outputs are masked and masking alone is never enough, so every
#: compaction writes a summary (the masking-first path has its own tests in test_context_masking_first.py)
SUMMARY_FIRST = {"mask": "stale", "mask_target": 0.01}
SMALL = {"budget": 40_000, "compact_at": 6_000, "target": 0.5, "recent_turns": 2, **SUMMARY_FIRST}


def manager(tmp_path: Path, config: dict[str, Any] | None = None, **kw: Any) -> TieredContext:
    return TieredContext(ScriptedProvider(SCRIPT), settings({"context": config or SMALL}).context, tmp_path, **kw)


def grow(h: HistoryBuilder, i: int) -> None:
    """One realistic turn: alternate views, runs and edits of a few files, ~2.5k chars each."""
    path = f"src/mod{i % 4}.py"
    if i % 3 == 0:
        h.view(path, lines(50, f"mod{i % 4}"))
    elif i % 3 == 1:
        h.bash("python -m pytest -q tests", lines(45, "test") + "\nFAILED tests/test_app.py::test_greet",
               exit_code=1)
    else:
        h.edit(path, "old", f"new{i}")


def run_session(cm: TieredContext, turns: int, pinned: Pinned | None = None) -> tuple[HistoryBuilder, list[Any]]:
    h = HistoryBuilder(task="Make greet() polite; keep the API.")
    prepared = []
    for i in range(turns):
        grow(h, i)
        if i == 3:
            h.user("From now on use single quotes only.")
        prepared.append(cm.prepare("SYSTEM PROMPT", h.messages, TOOLS, pinned or Pinned()))
    return h, prepared


def test_under_threshold_the_history_passes_unchanged_with_breakpoints(tmp_path: Path) -> None:
    cm = manager(tmp_path, {"compact_at": 200_000, "budget": 300_000})
    h = HistoryBuilder()
    h.bash("ls", "a\nb")
    first = cm.prepare("S", h.messages, TOOLS, Pinned())
    assert first.compactions == [] and first.request.messages == h.messages
    assert first.request.cache_breakpoints == [0, len(h.messages) - 1]
    h.bash("ls -la", "a\nb")
    second = cm.prepare("S", h.messages, TOOLS, Pinned())
    assert second.request.cache_breakpoints == [0, 2, 4], "task, end of the previous request, end of this one"
    assert second.tokens > first.tokens > 0


def test_long_session_compacts_in_large_steps_and_keeps_pairs_and_pins(tmp_path: Path) -> None:
    cm = manager(tmp_path)
    pinned = Pinned(task="Make greet() polite; keep the API.", plan="1. edit\n2. test",
                    files_touched=["src/mod0.py"], last_test_result="1 failed")
    h, prepared = run_session(cm, 40, pinned)
    summaries = [(n, c) for n, p in enumerate(prepared) for c in p.compactions if c.kind == "summary"]
    assert 2 <= len(summaries) <= 12, "compaction happens, but in steps, not every turn"
    for _, comp in summaries:
        assert comp.tokens_after < comp.tokens_before * 0.75
    for p in prepared:
        assert pairing_problems(p.request.messages) == []
        assert p.tokens <= cm.budget
    stable = 0
    for prev, cur in itertools.pairwise(prepared):
        if not cur.compactions:
            assert cur.request.messages[:len(prev.request.messages)] == prev.request.messages
            stable += 1
    assert stable >= 25, "most requests extend the previous one exactly (cache-friendly)"
    last = prepared[-1].request
    assert last.messages[0] is h.messages[0], "the task stays first, verbatim"
    head = last.messages[0].text() + last.messages[2].text()
    assert last.messages[2].text().startswith("[Context handoff]")
    for needle in ("Make greet() polite; keep the API.", "From now on use single quotes only.", "1. edit",
                   "src/mod0.py", "src/mod3.py", "1 failed", HANDOFF):
        assert needle in head
    assert last.cache_breakpoints[0] == 0, "a breakpoint on the task: it stays cached across compactions"
    assert cm.stats.summary_calls == len(summaries)


def test_restore_rebuilds_the_same_view(tmp_path: Path) -> None:
    cm = manager(tmp_path)
    h, prepared = run_session(cm, 30)
    events = [c for p in prepared for c in p.compactions]
    assert any(c.kind == "summary" for c in events)
    again = manager(tmp_path)
    again.restore([Compaction(c.kind, c.tokens_before, c.tokens_after, dict(c.data)) for c in events])
    a = cm.prepare("SYSTEM PROMPT", h.messages, TOOLS, Pinned())
    b = again.prepare("SYSTEM PROMPT", h.messages, TOOLS, Pinned())
    assert a.compactions == b.compactions == []
    assert a.request.messages == b.request.messages
    again.restore([{"kind": c.kind, "tokens_before": c.tokens_before, "tokens_after": c.tokens_after,
                    "data": c.data} for c in events])
    assert again.prepare("SYSTEM PROMPT", h.messages, TOOLS, Pinned()).request.messages == a.request.messages


def test_a_rewound_history_drops_the_stale_summary(tmp_path: Path) -> None:
    cm = manager(tmp_path)
    h, prepared = run_session(cm, 30)
    covered = next(c for p in prepared for c in p.compactions if c.kind == "summary").data["covered"]
    short = h.messages[:covered - 1]
    if short[-1].role == "assistant":
        short = short[:-1]
    view = cm.prepare("SYSTEM PROMPT", short, TOOLS, Pinned()).request.messages
    assert view[0].text().startswith("Make greet()") or view[0].text().startswith("[Context handoff]")
    assert pairing_problems(view) == []


def test_a_turn_over_budget_trips_the_breaker_once_then_is_cut(tmp_path: Path) -> None:
    # everything is in the last K turns: a compaction frees nothing -> one clear breaker event, then a hard
    # cut of the long output; the next request makes no new attempt
    cm = manager(tmp_path, {"budget": 4_000, "compact_at": 2_000, "recent_turns": 5, "hard_clip_chars": 2_000})
    h = HistoryBuilder()
    h.bash("cat a.log", lines(300))
    first = cm.prepare("S", h.messages, TOOLS, Pinned())
    kinds = [c.kind for c in first.compactions]
    assert kinds == ["breaker", "truncate"] and first.compactions[-1].data["hard"]
    assert "less than the minimum" in first.compactions[0].data["reason"]
    assert first.tokens <= cm.budget
    h.bash("echo small", "small")
    assert cm.prepare("S", h.messages, TOOLS, Pinned()).compactions == []


def test_a_compaction_that_frees_too_little_is_not_repeated(tmp_path: Path) -> None:
    # a huge pinned plan makes every handoff as big as what it replaces
    cm = manager(tmp_path)
    pinned = Pinned(plan=lines(400, "plan step"))
    _, prepared = run_session(cm, 14, pinned)
    events = [(n, c.kind) for n, p in enumerate(prepared) for c in p.compactions]
    breakers = [n for n, kind in events if kind == "breaker"]
    summaries = [n for n, kind in events if kind == "summary"]
    assert breakers, "the useless compaction is reported"
    assert len(summaries) <= 3, "and not retried on every request"
    resume = next(c for p in prepared for c in p.compactions if c.kind == "breaker").data["resume_above"]
    for n in range(breakers[0] + 1, len(prepared)):
        if prepared[n].compactions:
            assert prepared[n - 1].tokens > 0 and prepared[n].compactions[0].tokens_before > resume


def test_a_single_turn_bigger_than_the_window_is_cut_or_refused(tmp_path: Path) -> None:
    cm = manager(tmp_path, {"budget": 6_000, "compact_at": 3_000, "recent_turns": 1, "hard_clip_chars": 3_000})
    h = HistoryBuilder(task="Look at this: " + lines(4000, "paste"))
    out = cm.prepare("S", h.messages, TOOLS, Pinned())
    assert out.tokens <= cm.budget and "output://" in out.request.messages[0].text()
    tight = manager(tmp_path, {"budget": 1_200, "compact_at": 1_000, "recent_turns": 1})
    with pytest.raises(ContextOverflowError, match="budget"):
        tight.prepare("S" * 40_000, [Message.user_text("hi")], TOOLS, Pinned())


def test_force_compaction_compacts_on_the_next_prepare(tmp_path: Path) -> None:
    cm = manager(tmp_path, {"budget": 100_000, "compact_at": 90_000, "recent_turns": 2})
    h, prepared = run_session(cm, 12)
    assert not any(c.kind == "summary" for p in prepared for c in p.compactions)
    cm.force_compaction()
    after = cm.prepare("SYSTEM PROMPT", h.messages, TOOLS, Pinned())
    assert after.compactions and after.compactions[0].kind in ("mask", "summary")
    assert after.tokens <= after.compactions[0].tokens_before // 2, "at least halved"
    assert cm.estimator.scale > 1.0, "an overflow teaches the estimator that it counted low"


def test_compact_now_with_focus_and_fallback_when_the_model_fails(tmp_path: Path) -> None:
    seen: list[ModelRequest] = []

    def failing(request: ModelRequest) -> tuple[str, Usage | None]:
        seen.append(request)
        raise ModelError("the API is down")

    cm = manager(tmp_path, {"budget": 100_000, "compact_at": 90_000, "recent_turns": 2}, summarizer=failing)
    h, _ = run_session(cm, 10)
    comp = cm.compact_now(h.messages, Pinned(), focus="the greet tests")
    assert comp is not None and comp.kind == "summary"
    assert "Focus the handoff on: the greet tests" in seen[0].messages[-1].content[-1].text
    assert "the API is down" in comp.data["fallback"] and "extractive" in comp.data["text"]
    view = cm.prepare("SYSTEM PROMPT", h.messages, TOOLS, Pinned()).request.messages
    assert view[2].text() == comp.data["text"]
    assert cm.compact_now(h.messages[:3], Pinned()) is None, "nothing old enough to summarise"


def test_long_outputs_are_clipped_at_first_sight(tmp_path: Path) -> None:
    cm = manager(tmp_path, {"budget": 100_000, "compact_at": 90_000, "clip_chars": 4_000})
    h = HistoryBuilder()
    h.bash("pytest", lines(2000))
    out = cm.prepare("S", h.messages, TOOLS, Pinned())
    assert [c.kind for c in out.compactions] == ["truncate"]
    assert out.compactions[0].tokens_after < out.compactions[0].tokens_before
    assert "output://" in out.request.messages[-1].content[0].content  # type: ignore[union-attr]


def test_usage_calibrates_and_tracks_cached_share(tmp_path: Path) -> None:
    cm = manager(tmp_path)
    h = HistoryBuilder()
    h.bash("ls", "a")
    est = cm.prepare("S", h.messages, TOOLS, Pinned()).tokens
    cm.record_usage(Usage(input_tokens=10, cache_read_tokens=3 * est - 10, cache_write_tokens=est))
    assert cm.stats.cached_share > 0.5 and cm.estimator.scale > 1.5


def test_pinned_instructions_join_the_system_prompt_once(tmp_path: Path) -> None:
    cm = manager(tmp_path)
    pinned = Pinned(instructions="Run tests with `make test`.")
    req = cm.prepare("S", [Message.user_text("hi")], TOOLS, pinned).request
    assert req.system.count("Run tests with `make test`.") == 1
    req2 = cm.prepare("S\nRun tests with `make test`.", [Message.user_text("hi")], TOOLS, pinned).request
    assert req2.system == "S\nRun tests with `make test`."
    assert isinstance(req.messages[0].content[0], TextBlock)


def test_bad_config_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[context\] compact_after: unknown key \(did you mean compact_at\?"):
        manager(tmp_path, {"compact_after": 3})
    with pytest.raises(ConfigError, match=r"\[context\] target = 2: must be at most 0.99"):
        manager(tmp_path, {"target": 2})
    with pytest.raises(ConfigError, match=r"\[context\] recent_turns = 2.5: expected a whole number"):
        manager(tmp_path, {"recent_turns": 2.5})
    with pytest.raises(ConfigError, match="count_with_provider"):
        manager(tmp_path, {"count_with_provider": "sometimes"})
    cm = manager(tmp_path, {"budget": 0.5, "compact_at": 0.5})
    assert cm.budget == 100_000 and cm.compact_at == 50_000


def test_an_interrupted_summary_leaves_no_half_compaction(tmp_path: Path) -> None:
    cancel = threading.Event()
    status: list[ev.Event] = []
    cm = TieredContext(ScriptedProvider(SCRIPT), settings({"context": SMALL}).context, tmp_path, cancel=cancel,
                       on_event=status.append)
    h = HistoryBuilder(task="Make greet() polite; keep the API.")
    for i in range(40):
        grow(h, i)
        before = dict(cm.replacements)
        cancel.set()
        try:
            cm.prepare("SYSTEM PROMPT", h.messages, TOOLS, Pinned())
        except Interrupted:
            assert cm.replacements == before and cm.summary is None, "state rolled back"
            break
        finally:
            cancel.clear()
    else:
        pytest.fail("no compaction was attempted")
    assert status and isinstance(status[0], ev.CompactionStarted) and status[0].messages > 0
    done = cm.prepare("SYSTEM PROMPT", h.messages, TOOLS, Pinned())
    assert any(c.kind == "summary" for c in done.compactions), "the next request compacts normally"


def test_switching_the_model_moves_the_budget_and_the_summariser(tmp_path: Path) -> None:
    cm = manager(tmp_path, {"budget": 0.8, "compact_at": 0.5})
    small = ScriptedProvider(SCRIPT, context_window=32_000)
    cm.provider = small
    assert cm.budget == 32_000 - 8_192, "the window minus room for the answer, under 0.8 of it"
    assert cm.compact_at == int(0.5 * cm.budget)
    assert cm.summarizer.provider is small  # type: ignore[attr-defined]
    tiny = ScriptedProvider(SCRIPT, context_window=16_000)
    assert TieredContext(tiny, None, tmp_path).compact_at == int(0.6 * (16_000 - 8_192)), "10k default capped at 60%"


def test_tools_loaded_on_demand_stay_loaded_across_a_compaction(tmp_path: Path) -> None:
    """Issue 33: a deferred tool counts only once loaded, and a handoff that replaces its loading turn loads it
    again (a made-up call of the tool search with its result first in the handoff message), pairs intact."""
    deferred = ToolSpec("mcp__git__log", "Show the log. " * 200, {"type": "object", "properties": {}},
                        deferred=True)
    tools = [*TOOLS, ToolSpec("tool_search", "Load tools.", {"type": "object", "properties": {}}), deferred]
    cm = manager(tmp_path)
    h = HistoryBuilder(task="Find when greet changed.")
    assert cm.estimator.request("S", h.messages, tools) == cm.estimator.request("S", h.messages, tools[:2])
    h.messages.append(Message("assistant", [ToolUseBlock("t_load", "tool_search", {"query": "git log"})]))
    h.messages.append(Message("user", [ToolResultBlock("t_load", "Loaded", tool_references=["mcp__git__log"])]))
    loaded = cm.estimator.request("S", h.messages, tools)
    assert loaded > cm.estimator.request("S", h.messages, tools[:2]) + 500, "counted where it is loaded"
    prepared = []
    for i in range(30):
        grow(h, i)
        prepared.append(cm.prepare("SYSTEM PROMPT", h.messages, tools, Pinned()))
    assert any(c.kind == "summary" for p in prepared for c in p.compactions)
    view = prepared[-1].request.messages
    assert all(b.tool_use_id != "t_load" for m in view for b in m.content if isinstance(b, ToolResultBlock))
    reload = [b for b in view[2].content if isinstance(b, ToolResultBlock)]
    assert reload and reload[0].tool_references == ["mcp__git__log"] and view[2].content[0] is reload[0]
    assert view[1].tool_uses()[0].name == "tool_search" and view[1].tool_uses()[0].id == reload[0].tool_use_id
    assert pairing_problems(view) == []
