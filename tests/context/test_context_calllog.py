"""Issue 45: what a summary keeps of the turns it replaces. Every call is listed with its output inline or its
`output://` handle (so nothing the session ran is more than a read away), and a summary extends the previous
handoff instead of rewriting it, until the narrative reaches half the cap."""

from __future__ import annotations

from pathlib import Path

from context_helpers import HistoryBuilder, lines

from coder.base.events import Event
from coder.config.layers import settings
from coder.context.base import Pinned
from coder.context.calllog import CALLS_HEADER, call_log
from coder.context.manager import TieredContext
from coder.context.summary import EXTENSION, instruction
from coder.models.scripted import ScriptedProvider
from coder.models.types import ModelRequest, ToolSpec, Usage
from coder.store.outputs import load_output

TOOLS = [ToolSpec("bash", "Run a command.", {"type": "object", "properties": {"command": {"type": "string"}}})]


def _grep_session(n: int) -> HistoryBuilder:
    h = HistoryBuilder(task="Find where rows are padded.")
    for i in range(n):
        found = f"src/rows_{i}.py:{1100 + i}:def _pad_{i}(row):" if i % 2 else lines(40 + i, f"out{i}")
        h.bash(f"grep -rn '_pad_{i}' src && echo step {i}\nsecond line of the command", found)
    return h


def test_every_call_is_listed_inline_or_by_handle(tmp_path: Path) -> None:
    h = _grep_session(6)
    log = call_log(h.messages, tmp_path)
    assert len(log) == 6 and all(line.startswith("- `grep -rn '_pad_") for line in log)
    assert all(" …`" in line for line in log), "a command of several lines shows its first"
    assert "src/rows_1.py:1101:def _pad_1(row):" in log[1], "a short output is inline"
    handle = log[0].rsplit(" ", 1)[1]
    assert handle.startswith("output://") and load_output(tmp_path, handle).startswith("out0 00001")


def test_over_its_budget_the_oldest_calls_give_way_to_the_handle_of_the_whole_list(tmp_path: Path) -> None:
    h = _grep_session(60)
    log = call_log(h.messages, tmp_path, budget_chars=2_000)
    assert sum(len(line) + 1 for line in log) <= 2_000 and log[-1].startswith("- `grep -rn '_pad_59'")
    first = log[0]
    assert first.startswith("- (") and "earlier calls: the whole list is at output://" in first
    whole = load_output(tmp_path, first.rsplit(" ", 1)[1].rstrip(")"))
    assert whole.startswith(CALLS_HEADER) and whole.count("\n- `grep") == 60
    assert "src/rows_1.py:1101:def _pad_1(row):" in whole, "short outputs inline in the whole list too"


class Narrator:
    """A summarizer that answers with numbered parts and records the instruction it was given."""

    def __init__(self, size: int) -> None:
        self.size, self.asked = size, []

    def __call__(self, request: ModelRequest) -> tuple[str, Usage | None]:
        self.asked.append(request.messages[-1].content[-1].text)  # type: ignore[union-attr]
        return f"## Decisions\npart {len(self.asked)} " + "d" * self.size, None


def _compact_repeatedly(tmp_path: Path, narrator: Narrator, rounds: int) -> list[dict]:
    config = settings({"context": {"compact_at": 3000, "recent_turns": 1, "mask_target": 0.01,
                                   "summary_max_tokens": 600}}).context
    events: list[Event] = []
    cm = TieredContext(ScriptedProvider({"turns": []}), config, tmp_path, summarizer=narrator, on_event=events.append)
    h = HistoryBuilder()
    summaries = []
    for i in range(200):
        h.bash(f"cat notes_{i}.txt", lines(30, f"n{i}"))
        prepared = cm.prepare("SYSTEM", h.messages, TOOLS, Pinned())
        summaries += [c.data for c in prepared.compactions if c.kind == "summary"]
        if len(summaries) >= rounds:
            break
    return summaries


def test_a_summary_extends_the_previous_one_until_half_the_cap(tmp_path: Path) -> None:
    narrator = Narrator(size=200)
    summaries = _compact_repeatedly(tmp_path, narrator, rounds=5)
    assert len(summaries) == 5
    assert "Answer with the handoff only." in narrator.asked[0] and not summaries[0]["extended"]
    assert "Answer with the additions only." in narrator.asked[1] and summaries[1]["extended"]
    second = summaries[1]["narrative"]
    assert second.startswith(summaries[0]["narrative"]) and EXTENSION in second and "part 2" in second
    rewritten = [i for i, s in enumerate(summaries) if i and not s["extended"]]
    assert rewritten, "a narrative past half the cap (300 tokens) is written anew"
    again = summaries[rewritten[0]]["narrative"]
    assert EXTENSION not in again and again.startswith("## Decisions\npart")
    assert all(CALLS_HEADER in s["text"] for s in summaries)


def test_a_focus_and_a_first_summary_ask_for_the_whole_handoff() -> None:
    assert "Answer with the handoff only." in instruction(2, "the parser")
    assert "Focus the handoff on: the parser" in instruction(2, "the parser", extend=True)
    assert "stays as it is" in instruction(2, "", extend=True)


def test_a_code_handoff_asks_no_model_and_keeps_what_compact_had_the_model_write(tmp_path: Path) -> None:
    """`[context] handoff = "code"` (the `cost` preset): an automatic compaction writes the facts and the calls with
    no summary call; `/compact` still asks the model, and the next handoff by code keeps that account."""
    config = settings({"context": {"compact_at": 3000, "recent_turns": 1, "mask_target": 0.01,
                                   "summary_max_tokens": 600, "handoff": "code"}}).context
    narrator = Narrator(size=50)
    cm = TieredContext(ScriptedProvider({"turns": []}), config, tmp_path, summarizer=narrator)
    h = HistoryBuilder()
    summaries: list[dict] = []
    first_at = 0
    for i in range(200):
        h.bash(f"cat notes_{i}.txt", lines(30, f"n{i}"))
        summaries += [c.data for c in cm.prepare("SYSTEM", h.messages, TOOLS, Pinned()).compactions
                      if c.kind == "summary"]
        first_at = first_at or (i if summaries else 0)
        if len(summaries) == 1 and not narrator.asked and i == first_at + 3:  # turns since it, to summarise
            assert summaries[0]["by"] == "code"
            manual = cm.compact_now(h.messages, Pinned(), focus="the notes")
            assert manual is not None and manual.data["by"] == "model" and len(narrator.asked) == 1
            assert "Focus the handoff on: the notes" in narrator.asked[0]
        if len(summaries) == 2:
            break
    assert len(summaries) == 2 and len(narrator.asked) == 1, "only /compact asked the model"
    assert summaries[1]["by"] == "code" and CALLS_HEADER in summaries[1]["text"]
    assert "## Decisions\npart 1" in summaries[1]["text"] and "written by code, no summary" in summaries[1]["text"]
    assert cm.stats.summary_calls == 1
