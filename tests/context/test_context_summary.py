"""Tier 3: the handoff. Facts are copied by code; the model writes the judgement half."""

from __future__ import annotations

from pathlib import Path

from context_helpers import HistoryBuilder, lines

from coder.context.base import Pinned
from coder.context.history import pairing_problems
from coder.context.summary import (
    HEADER,
    LLMSummarizer,
    collect_facts,
    extractive_narrative,
    instruction,
    render,
    summary_request,
)
from coder.models.scripted import ScriptedProvider
from coder.models.types import Message, TextBlock, ToolUseBlock


def _session() -> HistoryBuilder:
    h = HistoryBuilder(task="Make greet() polite. Keep the public API unchanged.")
    h.view("src/app.py", lines(20))
    h.user("Also: never touch README.md, and use single quotes.")
    h.edit("src/app.py", "hello", "good day")
    h.bash("sed -i 's/x/y/' src/util.py", "")
    h.bash("python -m pytest -q", "E   AssertionError: expected 'good day'\n1 failed", exit_code=1)
    h.bash("echo ok", "ok")
    return h


def test_facts_keep_task_every_user_message_files_and_last_error(tmp_path: Path) -> None:
    h = _session()
    pinned = Pinned(task="", plan="1. fix greet\n2. run tests", files_touched=["docs/notes.md"],
                    last_test_result="1 failed")
    facts = collect_facts(h.messages, pinned, tmp_path)
    assert facts.task == "Make greet() polite. Keep the public API unchanged."
    assert facts.user_messages == ["Also: never touch README.md, and use single quotes."]
    assert facts.files_touched == ["docs/notes.md", "src/app.py", "src/util.py"]
    assert "AssertionError: expected 'good day'" in facts.last_error and "exit 1" in facts.last_error
    text = render(facts, "## Intent\nPolite greet.", covered_count=12)
    assert text.startswith(HEADER) and "12 earlier messages" in text
    for needle in ("Make greet() polite", "never touch README.md", "- src/util.py", "1. fix greet",
                   "1 failed", "## Intent\nPolite greet."):
        assert needle in text


def test_a_task_kept_as_first_message_is_not_copied_again(tmp_path: Path) -> None:
    h = _session()
    facts = collect_facts(h.messages, Pinned(), tmp_path, first_kept=True)
    assert facts.task == "" and facts.user_messages == ["Also: never touch README.md, and use single quotes."]


def test_a_huge_user_message_is_kept_as_head_tail_and_handle(tmp_path: Path) -> None:
    h = HistoryBuilder(task="Here is the log:\n" + lines(3000, "log"))
    facts = collect_facts(h.messages, Pinned(), tmp_path, max_chars=5_000)
    assert len(facts.task) < 7_000 and "output://" in facts.task and "log 00001" in facts.task


def test_summary_request_reuses_the_view_and_appends_the_instruction() -> None:
    h = _session()
    text = instruction(kept_turns=3, focus="the failing test")
    assert "{{" not in text and "last 3 turns" in text and "Focus the handoff on: the failing test" in text
    req = summary_request("SYS", [], h.messages, text, 2000, [3, len(h.messages) - 1])
    assert req.messages[:-1] == h.messages[:-1], "same prefix as the last request: cache hit"
    assert req.messages[-1].content[:-1] == h.messages[-1].content
    assert isinstance(req.messages[-1].content[-1], TextBlock) and "handoff" in req.messages[-1].content[-1].text
    # the last message carries one too: its lookback reads everything the last request wrote
    assert req.cache_breakpoints == [3, len(req.messages) - 1] and req.max_tokens == 2000
    assert pairing_problems(req.messages) == []
    dangling = h.messages + [Message("assistant", [ToolUseBlock("toolu_x", "bash", {"command": "ls"})])]
    req2 = summary_request("SYS", [], dangling, text, 2000, [])
    assert pairing_problems(req2.messages) == [], "a call without result is left out"


def test_llm_summarizer_calls_the_model(tmp_path: Path) -> None:
    provider = ScriptedProvider({"turns": [{"when": "about to be compacted", "repeat": True,
                                            "text": "## Intent\nMake greet polite."}]})
    h = _session()
    req = summary_request("SYS", [], h.messages, instruction(2, ""), 1000, [])
    text, usage = LLMSummarizer(provider)(req)
    assert text == "## Intent\nMake greet polite."
    assert usage is not None and usage.total_input > 0


def test_extractive_fallback_lists_the_models_remarks() -> None:
    h = _session()
    text = extractive_narrative(h.messages, "ModelError: down")
    assert "ModelError: down" in text and "Next step." in text
