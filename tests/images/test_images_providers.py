"""Images reach the model as images through the real anthropic and openai SDKs against the strict fake server,
which checks every documented image rule (coder_testkit/fake_rules/messages_media.py) and prices them."""

from __future__ import annotations

import json
from pathlib import Path

from images_support import picture

from coder.models.anthropic_provider import AnthropicProvider
from coder.models.images import fitted_size, image_tokens, prepare
from coder.models.openai_provider import OpenAIProvider
from coder.models.retry import RetryPolicy
from coder.models.types import Message, ModelRequest, TextBlock, ToolResultBlock, ToolUseBlock
from coder_testkit.fake_server import FakeServer

POLICY = RetryPolicy(max_retries=0)


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"text": "I see a red square."}, {"text": "And the plot."}]}))
    return path


def _history() -> list[Message]:
    shot = prepare(picture(2400, 1200), "shot.png")  # scaled within the limits before sending
    plot = prepare(picture(200, 100, "JPEG", noisy=True), "plot.jpg")  # ~18 KB of base64
    return [Message("user", [TextBlock("What is on this screenshot?"), shot]),
            Message("assistant", [ToolUseBlock("toolu_1", "view", {"path": "plot.jpg"})]),
            Message("user", [ToolResultBlock("toolu_1", "plot.jpg (200x100)", images=[plot])])]


def test_anthropic_sends_image_blocks_the_strict_fake_accepts_and_prices_by_the_formula(tmp_path: Path) -> None:
    with FakeServer(_script(tmp_path)) as fake:
        provider = AnthropicProvider("claude-sonnet-4-6", api_key="k", base_url=fake.base_url, policy=POLICY)
        answer = provider.complete(ModelRequest("", _history(), max_tokens=256))
        body = fake.requests[-1]
    assert answer.message.text() == "I see a red square."  # a 400 would have raised
    first, result = body["messages"][0]["content"][1], body["messages"][2]["content"][0]
    assert first["type"] == "image" and first["source"]["media_type"] == "image/png"
    assert set(first) == {"type", "source"}  # the name and size are ours, never sent
    assert [p["type"] for p in result["content"]] == ["text", "image"]
    priced = image_tokens(*fitted_size(2400, 1200)) + image_tokens(200, 100)
    assert len(body["messages"][2]["content"][0]["content"][1]["source"]["data"]) > 15_000
    assert priced < answer.usage.total_input < priced + 200  # the text around them, not the base64's length / 4


def test_openai_sends_data_urls_and_a_tool_results_images_in_the_user_message_after_it(tmp_path: Path) -> None:
    with FakeServer(_script(tmp_path)) as fake:
        provider = OpenAIProvider("gpt-4o", api_key="k", base_url=fake.base_url + "/v1", policy=POLICY)
        answer = provider.complete(ModelRequest("", _history(), max_tokens=256))
        body = fake.requests[-1]
    assert answer.message.text() == "I see a red square."
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "tool", "user"]
    assert body["messages"][0]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert isinstance(body["messages"][2]["content"], str)  # a tool message holds text only
    assert body["messages"][3]["content"][1]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert provider.count_tokens(ModelRequest("", _history())) < 5000
