"""The fake server's rule table (coder_testkit/fake_rules) as a whole: every rule has a broken body that the SDK
tests send (and that body is refused by that very rule, not an earlier one), every rule cites a documentation page,
the published list (docs/fake-server-rules.md) is the table, and the bodies coder itself builds pass every rule."""

from __future__ import annotations

import os
from pathlib import Path

import fake_cases_chat
import fake_cases_media
import fake_cases_messages
import fake_cases_server
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coder.models.model_table import load_table
from coder.models.types import Message, ModelRequest, TextBlock, ToolResultBlock, ToolSpec, ToolUseBlock
from coder.models.wire import build_anthropic_body
from coder_testkit.fake_rules import CHAT_RULES, MESSAGES_RULES, check_chat, check_messages, rule_table

ROOT = Path(__file__).resolve().parents[2]
MESSAGE_CASES = fake_cases_messages.CASES + fake_cases_media.CASES + fake_cases_server.CASES
#: rules whose broken body needs a conversation the fake signed first: proved by the named test
COVERED_ELSEWHERE = {
    "thinking-block.bound": "test_models_fake_rules.py::test_preserved_thinking_refuses_a_changed_prefix"}
DOC_HOSTS = ("https://platform.claude.com/docs/", "https://platform.openai.com/docs/", "https://github.com/anthropics/",
             "https://github.com/openai/", "https://developers.openai.com/api/docs/")


def test_every_rule_has_a_broken_body() -> None:
    messages = {r.id for r in MESSAGES_RULES}
    chat = {r.id for r in CHAT_RULES}
    assert messages - {c.rule for c in MESSAGE_CASES} == set(COVERED_ELSEWHERE)
    assert chat - {c.rule for c in fake_cases_chat.CASES} == set()
    assert {c.rule for c in MESSAGE_CASES} <= messages and {c.rule for c in fake_cases_chat.CASES} <= chat


@pytest.mark.parametrize("case", MESSAGE_CASES, ids=[f"{c.rule}-{i}" for i, c in enumerate(MESSAGE_CASES)])
def test_each_messages_case_breaks_its_own_rule_first(case: fake_cases_messages.Case) -> None:
    refusal = check_messages(case.body, count_tokens=case.count_tokens, headers=case.headers)
    assert refusal is not None and refusal.rule.id == case.rule


@pytest.mark.parametrize("case", fake_cases_chat.CASES, ids=[c.rule for c in fake_cases_chat.CASES])
def test_each_chat_case_breaks_its_own_rule_first(case: fake_cases_chat.ChatCase) -> None:
    refusal = check_chat(case.request())
    assert refusal is not None and refusal.rule.id == case.rule


def test_every_rule_cites_a_documentation_page_and_seen_wording_a_public_answer() -> None:
    for rule in [*MESSAGES_RULES, *CHAT_RULES]:
        assert rule.source.startswith(DOC_HOSTS), rule.id
        assert rule.checks and rule.message, rule.id
        assert (rule.wording == "seen") == rule.seen.startswith("https://github.com/"), rule.id


def test_the_published_rule_list_is_the_table() -> None:
    published = (ROOT / "docs" / "fake-server-rules.md").read_text(encoding="utf-8")
    regenerate = "python -m coder_testkit.fake_rules > docs/fake-server-rules.md"
    assert published == rule_table() + "\n", f"regenerate: {regenerate}"


# ------------------------------------------------------------------------------------ coder's own bodies

ANTHROPIC_MODELS = sorted(i.family for i in load_table() if i.provider == "anthropic")
SHELL = ToolSpec("bash", "Run a shell command.", {"type": "object", "properties": {"command": {"type": "string"}}},
                 anthropic_type="bash_20250124")
EDIT = ToolSpec("edit", "Edit a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """A session's history as the engine keeps it: user turns, assistant turns with text and tool calls, each
    call answered in the next user turn; it ends with a user turn (a request always answers one)."""
    out = [Message.user_text(draw(st.sampled_from(["", "  ", "fix the bug", "\t\n"])))]
    for turn in range(draw(st.integers(0, 4))):
        calls = [ToolUseBlock(f"toolu_{turn}_{k}", draw(st.sampled_from(["bash", "edit"])), {"command": "ls"})
                 for k in range(draw(st.integers(0, 2)))]
        text = draw(st.sampled_from(["", " ", "Looking.", "Done."]))
        out.append(Message("assistant", [TextBlock(text), *calls]))
        if calls:
            out.append(Message("user", [ToolResultBlock(c.id, draw(st.sampled_from(["", "ok", " "])),
                                                        draw(st.booleans())) for c in calls]))
        else:
            out.append(Message.user_text(draw(st.sampled_from(["next", "", "go on"]))))
    return out


@settings(max_examples=int(os.environ.get("FAKE_RULES_EXAMPLES", "120")), deadline=None)
@given(model=st.sampled_from(ANTHROPIC_MODELS), history=histories(),
       budget=st.sampled_from([None, 1024, 4000, 20000, 64000]), max_tokens=st.sampled_from([1, 4096, 200_000]),
       breakpoints=st.lists(st.integers(0, 12), max_size=6), system=st.sampled_from(["", "You are careful."]))
def test_coders_own_anthropic_bodies_pass_every_rule(model: str, history: list[Message], budget: int | None,
                                                     max_tokens: int, breakpoints: list[int], system: str) -> None:
    request = ModelRequest(system, history, [SHELL, EDIT], max_tokens=max_tokens, cache_breakpoints=breakpoints,
                           thinking_budget=budget)
    body = build_anthropic_body(request, model)
    assert check_messages(body) is None, (model, check_messages(body))
