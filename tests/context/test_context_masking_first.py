"""Round 2 of issue 33: old observations are masked before any summary, a masking keeps the cached prefix before
it, and a summary request is the previous request (all cached) plus the instruction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from context_helpers import HistoryBuilder, lines, result_of

from coder.base.errors import ConfigError
from coder.config.layers import settings
from coder.config.sections import ContextSettings
from coder.context.base import Pinned
from coder.context.manager import TieredContext
from coder.context.masking import MaskTier
from coder.models.scripted import ScriptedProvider
from coder.models.types import ModelRequest, TextBlock, ToolSpec, Usage
from coder.models.wire import PrefixCache, build_anthropic_body, segments
from coder.store.outputs import load_output

TOOLS = [ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})]
HANDOFF = "## Intent\nMake greet polite.\n## Plan and next\n1. rerun the tests"
MODEL = "claude-sonnet-4-5"


def _guarded_history() -> tuple[HistoryBuilder, dict[str, str]]:
    """Old outputs of every kind the handoff guarantees, then filler turns."""
    h = HistoryBuilder()
    ids = {
        "view": h.view("src/app.py", lines(40, "app")),
        "grep": h.bash("grep -rn greet src", lines(20, "match")),
        "todo": h.turn(("todo", {"todos": [{"id": "1", "text": "make greet polite " + "x" * 300,
                                            "status": "in_progress"}]}, lines(10, "todo")))[0],
        "test": h.bash("python -m pytest tests/test_app.py", lines(10, "passed")),
        "fail": h.bash("python repro.py", "Traceback (most recent call last):\n" + lines(10) + "\nKeyError: 'x'",
                       exit_code=1),
    }
    h.user("Keep the public API unchanged.")
    for i in range(3):
        ids[f"ls{i}"] = h.bash(f"ls -la dir{i}", lines(12, f"entry{i}"))
    ids["recent"] = h.view("src/other.py", lines(30, "other"))
    return h, ids


def test_old_mode_masks_every_old_output_except_what_the_handoff_guarantees(tmp_path: Path) -> None:
    h, ids = _guarded_history()
    new = MaskTier(tmp_path, recent_turns=1, min_chars=100, mode="old").run(h.messages, {})
    assert {ids["view"], ids["grep"], ids["ls0"], ids["ls1"], ids["ls2"]} <= set(new), "old outputs are masked"
    assert ids["test"] not in new, "the last test run stays whole"
    assert ids["fail"] not in new, "the last failure stays whole"
    assert ids["todo"] not in new, "the task list (maskable: false) is never masked"
    assert ids["recent"] not in new, "the last turn stays whole"
    stub = new[ids["grep"]]
    assert stub.startswith("[old output masked (exit 0)") and "read_output output://" in stub and len(stub) < 120
    handle = stub.split("read_output ")[-1].rstrip("]")
    assert load_output(tmp_path, handle) == result_of(h.messages, ids["grep"]), "nothing is lost for good"
    # the control: the round-1 mode masks only superseded outputs, and none of these is superseded
    assert MaskTier(tmp_path, recent_turns=1, min_chars=100, mode="stale").run(h.messages, {}) == {}
    # a second run masks only what is new since the first
    h.bash("ls -la dir9", lines(12, "entry9"))
    again = MaskTier(tmp_path, recent_turns=1, min_chars=100, mode="old").run(h.messages, new)
    assert set(again) == {ids["recent"]}


def test_a_later_test_run_or_failure_releases_the_earlier_one(tmp_path: Path) -> None:
    h, ids = _guarded_history()
    h.bash("python -m pytest tests", lines(10, "passed"))
    h.bash("python repro.py", "Traceback (most recent call last):\n" + lines(10) + "\nValueError: y", exit_code=1)
    h.bash("echo tail", lines(5, "tail"))
    new = MaskTier(tmp_path, recent_turns=1, min_chars=100, mode="old").run(h.messages, {})
    assert ids["test"] in new and ids["fail"] in new


def _session(tmp_path: Path, config: dict[str, Any], turns: int,
             summaries: list[ModelRequest] | None = None) -> tuple[list[Any], list[ModelRequest], HistoryBuilder]:
    """A session of unique file views (no output is ever superseded), observation-heavy like real sessions."""

    def summarise(request: ModelRequest) -> tuple[str, Usage | None]:
        if summaries is not None:
            summaries.append(request)
        return HANDOFF, None

    cm = TieredContext(ScriptedProvider({"turns": []}), settings({"context": config}).context, tmp_path,
                       summarizer=summarise)
    h = HistoryBuilder(task="Make greet() polite; keep the API.")
    prepared, requests = [], []
    for i in range(turns):
        h.view(f"src/mod{i}.py", lines(40, f"mod{i}"))
        out = cm.prepare("SYSTEM PROMPT", h.messages, TOOLS, Pinned(task="Make greet() polite; keep the API."))
        prepared.append(out)
        requests.append(out.request)
    return prepared, requests, h


def _reads(requests: list[ModelRequest]) -> list[int]:
    cache = PrefixCache()
    return [cache.account(segments(build_anthropic_body(r, MODEL))).cache_read_tokens for r in requests]


def _prefix_tokens(request: ModelRequest, messages: int) -> int:
    cut = ModelRequest(request.system, request.messages[:messages], request.tools)
    return sum(s.tokens for s in segments(build_anthropic_body(cut, MODEL)))


def test_a_masking_that_is_enough_needs_no_summary_and_keeps_the_prefix_before_it_cached(tmp_path: Path) -> None:
    summaries: list[ModelRequest] = []
    config = {"budget": 40_000, "compact_at": 6_000, "recent_turns": 1, "mask": "old", "mask_target": 0.7}
    prepared, requests, _ = _session(tmp_path, config, 30, summaries)
    kinds = [[c.kind for c in p.compactions] for p in prepared]
    masked_at = [n for n, k in enumerate(kinds) if k]
    assert len(masked_at) >= 2 and all(kinds[n] == ["mask"] for n in masked_at), kinds
    assert summaries == [], "masking alone got the request under mask_target * compact_at"
    assert max(p.tokens for p in prepared) <= 6_000 * 1.2
    # the second masking changes nothing before its first newly masked output: that prefix is read from the cache
    second = masked_at[1]
    before, after = requests[second - 1].messages, requests[second].messages
    stable = next(i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b)
    assert stable > 3, "earlier masks stay as they were"
    assert stable - 1 in requests[second].cache_breakpoints
    # the request after the first masking marked the end of the part before its last turn, where this masking
    # starts: everything up to there is read
    reads = _reads(requests)
    assert reads[second] >= _prefix_tokens(requests[second], stable - 1) > _prefix_tokens(requests[second], 2)
    # the control: with the round-1 breakpoints (the task, the previous request's end, this end) only the task is
    # read after a masking
    plain = [ModelRequest(r.system, r.messages, r.tools, cache_breakpoints=[0, len(r.messages) - 1])
             if n in masked_at else r for n, r in enumerate(requests)]
    assert _reads(plain)[second] < _prefix_tokens(requests[second], 2)


def test_a_masking_far_behind_the_last_one_still_reads_the_prefix_before_it(tmp_path: Path) -> None:
    """The API looks back only 20 blocks from a breakpoint for a prefix an earlier request cached. A masking that
    starts many turns after the previous one's start (here 13 turns masked at once, then 12 more) finds nothing
    cached in those 20 blocks unless the requests before it carried a breakpoint just before the first output a
    mask may change (`MaskTier.floor`): without it the whole tail after the task is written again."""
    config = {"budget": 40_000, "compact_at": 12_000, "recent_turns": 5, "mask": "old", "mask_target": 0.7}
    prepared, requests, _ = _session(tmp_path, config, 40)
    masked_at = [n for n, p in enumerate(prepared) if p.compactions]
    assert len(masked_at) >= 2 and all([c.kind for c in prepared[n].compactions] == ["mask"] for n in masked_at)
    reads = _reads(requests)
    for n in masked_at[1:]:
        before, after = requests[n - 1].messages, requests[n].messages
        stable = next(i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b)
        first_masked = masked_at[masked_at.index(n) - 1]
        assert stable - _first_change(requests, first_masked) > 14, "more than 20 blocks behind the last masking"
        assert reads[n] >= _prefix_tokens(requests[n], stable), "all that the masking did not change is read"
        # the control: the same requests without the floor's breakpoint read only the task
        floorless = [ModelRequest(r.system, r.messages, r.tools, cache_breakpoints=[
            b for b in r.cache_breakpoints if b != stable - 1 or k == n]) for k, r in enumerate(requests)]
        assert _reads(floorless)[n] < _prefix_tokens(requests[n], stable) // 2


def _first_change(requests: list[ModelRequest], n: int) -> int:
    before, after = requests[n - 1].messages, requests[n].messages
    return next(i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b)


def test_when_masking_is_not_enough_a_summary_follows(tmp_path: Path) -> None:
    summaries: list[ModelRequest] = []
    config = {"budget": 40_000, "compact_at": 6_000, "target": 0.1, "recent_turns": 1, "mask": "old",
              "mask_target": 0.05}
    prepared, _, _ = _session(tmp_path, config, 12, summaries)
    kinds = [c.kind for p in prepared for c in p.compactions]
    assert "summary" in kinds and summaries


def test_the_summary_request_is_the_previous_request_plus_the_instruction(tmp_path: Path) -> None:
    summaries: list[ModelRequest] = []
    config = {"budget": 40_000, "compact_at": 6_000, "recent_turns": 1, "mask": "stale"}
    prepared, requests, h = _session(tmp_path, config, 12, summaries)
    n = next(i for i, p in enumerate(prepared) if any(c.kind == "summary" for c in p.compactions))
    summary, previous = summaries[0], requests[n - 1]
    assert summary.messages[:-1] == previous.messages[:-1]
    last, instruction = summary.messages[-1], summary.messages[-1].content[-1]
    assert last.content[:-1] == previous.messages[-1].content, "the previous request's last message, then"
    assert isinstance(instruction, TextBlock) and "about to be compacted" in instruction.text
    kept = prepared[n].request.messages[3]
    assert kept.role == "assistant" and kept not in summary.messages, "the kept turn is not summarised"
    cache = PrefixCache()
    for request in requests[:n]:
        cache.account(segments(build_anthropic_body(request, MODEL)))
    usage = cache.account(segments(build_anthropic_body(summary, MODEL)))
    assert usage.cache_read_tokens == _prefix_tokens(previous, len(previous.messages)), "all of it from the cache"
    assert usage.input_tokens + usage.cache_write_tokens < 600, "only the instruction is new"


@pytest.mark.parametrize(("setting", "message"), [({"mask": "all"}, r"\[context\] mask"),
                                                  ({"mask_target": 1.5}, r"\[context\] mask_target = 1.5")])
def test_bad_masking_settings_are_clear_errors(setting: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings({"context": setting})


def test_the_defaults_mask_old_outputs_first() -> None:
    config = ContextSettings()
    assert (config.mask, config.mask_target) == ("old", 0.7)
