"""Shared by the fake-rule tests: a running fake server, the real SDK clients pointed at it, request helpers, and
small real image files made here (PNG written byte by byte with zlib; JPEG, GIF and WebP headers as the formats
define them)."""

from __future__ import annotations

import base64
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai
import pytest

from coder_testkit.fake_server import FakeServer

LS = [{"name": "bash", "input": {"command": "ls"}}]
SCRIPT = {"turns": [
    {"when": "list files", "repeat": True, "text": "Looking.", "tool_calls": LS},
    {"when": "[\\s\\S]", "repeat": True, "text": "ok"},
]}
MODEL = "claude-sonnet-4-6"
BASH = {"name": "bash", "description": "Run a command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}
THINK = {"type": "enabled", "budget_tokens": 1024}
USE = {"type": "tool_use", "id": "toolu_a", "name": "bash", "input": {"command": "ls"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_a", "content": "README.md"}
DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


@dataclass
class Case:
    """One broken body: the rule it breaks and the message the real API answers with."""

    rule: str
    body: Any  # a JSON object (but for the rule that the body must be one)
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    count_tokens: bool = False


@dataclass
class ChatCase:
    """One broken Chat Completions body (a patch over a valid one) and the error the real API answers with."""

    rule: str
    patch: dict[str, Any]
    message: str
    param: str | None = None
    code: str | None = None
    raw: Any = None  # a whole body to send instead (one that is not an object)

    def request(self) -> Any:
        """The body to send: the patch over a valid request, fields patched to None left out."""
        if self.raw is not None:
            return self.raw
        merged = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]} | self.patch
        return {k: v for k, v in merged.items() if v is not None}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(SCRIPT) as srv:
        yield srv


def claude(server: FakeServer) -> anthropic.Anthropic:
    # an explicit timeout: the SDK refuses non-streaming requests with a large max_tokens otherwise
    return anthropic.Anthropic(base_url=server.base_url, api_key="test-key", max_retries=0, timeout=60)


def gpt(server: FakeServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url + "/v1", api_key="test-key", max_retries=0, timeout=60)


def user(text: str = "hi") -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def loop(assistant: list[dict[str, Any]], results: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """go -> assistant blocks -> user tool results."""
    return [{"role": "user", "content": "go"}, {"role": "assistant", "content": assistant},
            {"role": "user", "content": results if results is not None else [RESULT]}]


def body(model: str = MODEL, messages: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"model": model, "max_tokens": extra.pop("max_tokens", 2048), "messages": messages or user(), **extra}


def send_messages(server: FakeServer, request: dict[str, Any], headers: dict[str, str] | None = None,
                  count_tokens: bool = False) -> Any:
    """`request` through the SDK's messages.create (or count_tokens); a body without one of the fields those
    methods require goes through the same client's generic post."""
    client = claude(server)
    required = ("model", "messages") if count_tokens else ("model", "max_tokens", "messages")
    if all(key in request for key in required):
        rest = dict(request)
        known = {key: rest.pop(key) for key in required}
        method = client.messages.count_tokens if count_tokens else client.messages.create
        return method(**known, extra_body=rest or None, extra_headers=headers)
    path = "/v1/messages/count_tokens" if count_tokens else "/v1/messages"
    return client.post(path, body=request, cast_to=object, options={"headers": headers or {}})


def refusal(call: Any) -> dict[str, Any]:
    """The `error` of the 400 body `call` raises through the SDK."""
    with pytest.raises(anthropic.BadRequestError) as info:
        call()
    assert info.value.status_code == 400
    payload = info.value.body
    assert isinstance(payload, dict) and payload["type"] == "error" and payload["request_id"].startswith("req_")
    return payload["error"]


# ------------------------------------------------------------------------------------------------- images


def png(width: int, height: int) -> bytes:
    """A real grayscale PNG of the given size."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def jpeg(width: int, height: int) -> bytes:
    """The header of a baseline JPEG (SOI, a JFIF APP0 segment, SOF0 with the size, EOI)."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def webp(width: int, height: int) -> bytes:
    """A lossless (VP8L) WebP header."""
    bits = (width - 1) | ((height - 1) << 14)
    payload = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + struct.pack("<I", bits)
    return b"RIFF" + struct.pack("<I", 4 + len(payload)) + b"WEBP" + payload


def image(data: bytes, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                        "data": base64.b64encode(data).decode()}}
