# ruff: noqa: F811  (the server fixture imported from fake_rules_support is a parameter here)
"""The fake server is as strict as the real Chat Completions API: one broken body per rule (fake_cases_chat), sent
with the real openai SDK to the fake server on 127.0.0.1, comes back as BadRequestError with the real message,
param and code; a valid tool loop is accepted (the control)."""

from __future__ import annotations

from typing import Any

import fake_cases_chat
import openai
import pytest
from fake_cases_chat import FUNCTION
from fake_rules_support import ChatCase, gpt, server  # noqa: F401 (server is a fixture)

from coder_testkit.fake_server import FakeServer

_REQUIRED = ("model", "messages")


def send_chat(server: FakeServer, request: Any) -> Any:
    """`request` through the SDK's chat.completions.create; one without a required field through its post."""
    client = gpt(server)
    if isinstance(request, dict) and all(isinstance(request.get(k), (str, list)) for k in _REQUIRED):
        rest = dict(request)
        known = {k: rest.pop(k) for k in _REQUIRED}
        return client.chat.completions.create(**known, extra_body=rest or None)
    return client.post("/chat/completions", body=request, cast_to=object)


@pytest.mark.parametrize("case", fake_cases_chat.CASES, ids=[c.rule for c in fake_cases_chat.CASES])
def test_each_broken_chat_body_gets_the_real_400(server: FakeServer, case: ChatCase) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        send_chat(server, case.request())
    error = info.value
    assert error.status_code == 400
    assert isinstance(error.body, dict)
    assert (error.type, error.body["message"], error.param, error.code) == ("invalid_request_error", case.message,
                                                                          case.param, case.code)


def test_valid_chat_tool_loop_is_accepted(server: FakeServer) -> None:
    g = gpt(server)
    first = g.chat.completions.create(model="gpt-4.1", tools=[FUNCTION], tool_choice="auto", parallel_tool_calls=True,
                                      messages=[{"role": "user", "content": "list files"}])
    call = first.choices[0].message.tool_calls[0]
    assert first.choices[0].message.content == "Looking." and call.function.name == "bash"
    second = g.chat.completions.create(model="gpt-4.1", tools=[FUNCTION], messages=[
        {"role": "user", "content": "list files"},
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "README.md"}])
    assert second.choices[0].message.content == "ok"
    reasoning = g.chat.completions.create(model="gpt-5", max_completion_tokens=100, reasoning_effort="low",
                                          messages=[{"role": "developer", "content": "Be brief."},
                                                    {"role": "user", "content": [
                                                        {"type": "text", "text": "hi"},
                                                        {"type": "image_url", "image_url": {
                                                            "url": "https://example.org/a.png", "detail": "low"}}]}])
    assert reasoning.choices[0].message.content == "ok"
    streamed = g.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}], stream=True,
                                         stream_options={"include_usage": True}, temperature=0.3, stop=["END"])
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == "ok"
