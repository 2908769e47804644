# ruff: noqa: F811  (the server fixture imported from fake_rules_support is a parameter here)
"""The fake server is as strict as the real Messages API: one deliberately broken body per documented rule
(fake_cases_messages, fake_cases_media), sent with the real anthropic SDK to the fake server on 127.0.0.1, must come
back as BadRequestError with the real error type and message; valid bodies of each thinking kind and with media are
accepted (controls, so no refusal passes vacuously). Chat Completions: test_models_fake_rules_chat."""

from __future__ import annotations

from typing import Any

import anthropic
import fake_cases_media
import fake_cases_messages
import fake_cases_server
import pytest
from fake_rules_support import (  # noqa: F401 (server is a fixture)
    BASH,
    MODEL,
    THINK,
    Case,
    claude,
    refusal,
    send_messages,
    server,
    user,
)

from coder_testkit.fake_server import FakeServer

CASES = fake_cases_messages.CASES + fake_cases_media.CASES + fake_cases_server.CASES


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rule}-{i}" for i, c in enumerate(CASES)])
def test_each_broken_messages_body_gets_the_real_400(server: FakeServer, case: Case) -> None:
    served = len(server.records)
    error = refusal(lambda: send_messages(server, case.body, case.headers, case.count_tokens))
    assert error == {"type": "invalid_request_error", "message": case.message}
    assert len(server.records) == served + 1  # the request did reach the server


def test_count_tokens_is_checked_with_its_own_fields(server: FakeServer) -> None:
    c = claude(server)
    error = refusal(lambda: c.messages.count_tokens(model=MODEL, messages=user(), extra_body={"max_tokens": 5}))
    assert error["message"] == "max_tokens: Extra inputs are not permitted"
    assert c.messages.count_tokens(model=MODEL, messages=user()).input_tokens > 0  # control
    # counting a history that ends with the model's answer continues nothing: no prefill refusal there
    answered = user() + [{"role": "assistant", "content": "Hello."}]
    assert c.messages.count_tokens(model=MODEL, messages=answered).input_tokens > 0


def test_a_body_over_32_mb_is_refused_before_it_is_read_as_json(server: FakeServer) -> None:
    """[errors] "Request size limits": 32 MB for Messages; the API answers 413 request_too_large."""
    with pytest.raises(anthropic.APIStatusError) as info:
        claude(server).messages.create(model=MODEL, max_tokens=100, messages=user("x" * (32 * 1024 * 1024)))
    assert info.value.status_code == 413
    assert isinstance(info.value.body, dict) and info.value.body["error"]["type"] == "request_too_large"
    control = claude(server).messages.create(model=MODEL, max_tokens=100, messages=user("x" * 1024))
    assert control.content[0].type == "text"


@pytest.mark.parametrize("request_body", fake_cases_media.VALID, ids=["four-formats", "21-at-2000px",
                                                                      "url-and-documents", "image-in-tool-result"])
def test_valid_media_bodies_are_accepted(server: FakeServer, request_body: dict[str, Any]) -> None:
    message = send_messages(server, request_body)
    assert message.content[0].text == "ok"


@pytest.mark.parametrize("request_body", fake_cases_server.VALID, ids=["paused-turn-continued", "mixed-turn-results",
                                                                       "result-opens-the-answer", "domain-formats"])
def test_the_documented_server_tool_continuations_are_accepted(server: FakeServer,
                                                               request_body: dict[str, Any]) -> None:
    """[server-tools]: a paused turn is sent back as it came (not a prefill on a model without prefill), a turn whose
    search waited for a client tool goes on with the results alone, and then its answer opens with the result."""
    message = send_messages(server, request_body)
    if request_body["messages"][-1]["role"] == "user" and isinstance(request_body["messages"][-1]["content"], list):
        assert message.content[0].type == "web_search_tool_result"  # the waiting search runs first
        assert message.content[0].tool_use_id == "srvtoolu_a"
    else:
        assert message.content[-1].text == "ok"


# --------------------------------------------------------------------------------------------- controls


@pytest.mark.parametrize(("model", "thinking", "thinks"), [
    ("claude-3-5-haiku", None, False),  # none
    ("claude-haiku-4-5", THINK, True),  # budget
    ("claude-sonnet-4-6", THINK, True),  # both
    ("claude-sonnet-4-6", {"type": "adaptive"}, True),
    ("claude-opus-4-7", {"type": "adaptive"}, True),  # adaptive, off by default
    ("claude-opus-4-7", None, False),
    ("claude-sonnet-5", None, True),  # adaptive, on by default
    ("claude-sonnet-5", {"type": "disabled"}, False),
    ("claude-sonnet-5-5", {"type": "between_tools"}, False),
    ("claude-haiku-5-5", {"type": "disabled"}, False),  # adaptive, may be disabled at effort high or below
    ("claude-opus-5-5", None, True),  # always: thinks although not asked
    ("claude-fable-5", {"type": "adaptive"}, True),
    ("claude-opus-4-9", THINK, True),  # unknown id: the conservative shape is accepted
    ("claude-mythos-preview", THINK, True),  # both modes, always on
    ("claude-mythos-preview", None, True),
    ("claude-opus-5", {"type": "disabled"}, False),  # disabled at the default effort
])
def test_valid_bodies_of_each_thinking_kind_are_accepted(server: FakeServer, model: str,
                                                         thinking: dict[str, Any] | None, thinks: bool) -> None:
    extra = {"thinking": thinking} if thinking else {}
    message = claude(server).messages.create(model=model, max_tokens=4096, messages=user(), **extra)
    kinds = [b.type for b in message.content]
    assert kinds == (["thinking", "text"] if thinks else ["text"])
    if thinks:
        assert message.content[0].signature.startswith("sig_")


def tool_loop(c: anthropic.Anthropic, model: str, system: str) -> list[dict[str, Any]]:
    """One tool round trip on `model`, returned as history ending in the tool result."""
    first = c.messages.create(model=model, max_tokens=4096, system=system, tools=[BASH],
                              messages=user("list files"))
    assert first.content[0].type == "thinking" and first.stop_reason == "tool_use"
    return [{"role": "user", "content": "list files"},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first.content[-1].id,
                                          "content": "README.md"}]}]


BINDING_BETA = {"anthropic-beta": "thinking-binding-controls-2026-08-01"}
BOUND = ("messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different "
         "conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "
         '"drop_block".')


def test_preserved_thinking_refuses_a_changed_prefix(server: FakeServer) -> None:
    c = claude(server)
    history = tool_loop(c, "claude-opus-5-5", "You are careful.")
    # control: the unchanged conversation goes on, and the thinking block carries the fake's binding
    ok = c.messages.create(model="claude-opus-5-5", max_tokens=4096, system="You are careful.", tools=[BASH],
                           messages=history)
    assert ok.content[0].type == "thinking"
    changed_system = refusal(lambda: c.messages.create(model="claude-opus-5-5", max_tokens=4096,
                                                       system="You are careful. Today is Monday.", tools=[BASH],
                                                       messages=history, extra_headers=BINDING_BETA))
    assert changed_system == {"type": "invalid_request_error", "message": BOUND}
    summarised = [{"role": "user", "content": "Summary: the user asked for files."}] + history[1:]
    changed_message = refusal(lambda: c.messages.create(model="claude-opus-5-5", max_tokens=4096,
                                                        system="You are careful.", tools=[BASH], messages=summarised))
    # [errors] without the beta header the message also names it
    assert changed_message["message"] == BOUND + (" That setting requires the `thinking-binding-controls-2026-08-01` "
                                                  "value in the `anthropic-beta` header.")
    # the documented escape hatch is honoured (with its beta header)
    dropped = c.messages.create(model="claude-opus-5-5", max_tokens=4096, system="You are careful. Today is Monday.",
                                tools=[BASH], messages=history, extra_headers=BINDING_BETA, thinking={
                                    "type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}})
    assert dropped.content[0].type == "thinking"


def test_a_thinking_block_of_a_model_that_cannot_read_it_is_dropped_not_refused(server: FakeServer) -> None:
    """[errors] "A block from a model the target model can't read is dropped rather than rejected"; Mythos 5.1
    reads Fable 5.1's blocks as its own, so a changed prefix there is refused."""
    c = claude(server)
    history = tool_loop(c, "claude-fable-5-1", "S")
    other = c.messages.create(model="claude-opus-5-5", max_tokens=4096, system="S", tools=[BASH], messages=history)
    assert other.content[0].type == "thinking"
    sibling = c.messages.create(model="claude-mythos-5-1", max_tokens=4096, system="S", tools=[BASH], messages=history)
    assert sibling.content[0].type == "thinking"
    changed = refusal(lambda: c.messages.create(model="claude-mythos-5-1", max_tokens=4096, system="S2", tools=[BASH],
                                                messages=history, extra_headers=BINDING_BETA))
    assert changed["message"] == BOUND


def test_masked_tool_result_before_kept_thinking_is_refused(server: FakeServer) -> None:
    c = claude(server)
    history = tool_loop(c, "claude-sonnet-5-5", "S")
    second = c.messages.create(model="claude-sonnet-5-5", max_tokens=4096, system="S", tools=[BASH],
                               messages=history)
    history += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in second.content]},
                {"role": "user", "content": "next please"}]
    c.messages.create(model="claude-sonnet-5-5", max_tokens=4096, system="S", tools=[BASH], messages=history)
    masked = [dict(m) for m in history]
    masked[2] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": history[2]["content"][0][
        "tool_use_id"], "content": "[output cleared]"}]}
    error = refusal(lambda: c.messages.create(model="claude-sonnet-5-5", max_tokens=4096, system="S", tools=[BASH],
                                              messages=masked))
    assert error["message"].startswith("messages.3.content.0: Invalid `signature` in `thinking` block. The block is "
                                       "bound to a different conversation.")


def test_cache_breakpoints_moving_between_turns_keep_the_binding(server: FakeServer) -> None:
    c = claude(server)
    history = tool_loop(c, "claude-opus-5-5", "S")
    history[2]["content"][0]["cache_control"] = {"type": "ephemeral"}
    ok = c.messages.create(model="claude-opus-5-5", max_tokens=4096, system="S", tools=[BASH], messages=history)
    assert ok.content[0].type == "thinking"


def test_tool_use_ids_stay_unique_when_a_resumed_session_meets_a_restarted_server() -> None:
    script = {"turns": [{"text": "Looking.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]}] * 2}
    with FakeServer(script) as first:
        one = claude(first).messages.create(model=MODEL, max_tokens=256, messages=user("go"))
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in one.content]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": one.content[-1].id,
                                             "content": "ok"}]}]
    with FakeServer(script) as restarted:
        two = claude(restarted).messages.create(model=MODEL, max_tokens=256, messages=history)
        fresh = claude(restarted).messages.create(model=MODEL, max_tokens=256, messages=user("go"))
    assert two.content[-1].id != one.content[-1].id
    assert fresh.content[-1].id == "toolu_0002_0"  # no clash: the deterministic id of the script is kept
    history += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in two.content]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": two.content[-1].id,
                                              "content": "ok"}]}]
    with FakeServer(script) as third:
        assert claude(third).messages.create(model=MODEL, max_tokens=256, messages=history).content
