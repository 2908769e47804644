"""What `coder run` sends besides a text task (issue 35): `--image FILE` (repeatable) and `--input-format
stream-json`, user messages as JSON lines on stdin in the shape Claude Code's stream-json input uses:

    {"type": "user", "message": {"role": "user", "content": [{"type": "text", "text": "what is this?"},
     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR..."}}]}}

`content` may also be a plain string; each line is one turn, run in order. Every image goes through
coder/models/images.py (decoded, scaled, checked) before the session starts, so a bad one stops the run with a
usage error before anything is stored or spent.
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import IO, Any

from coder.base.errors import UsageError
from coder.models.images import ImageRefused, prepare, prepare_file
from coder.models.types import ImageBlock


def read_images(paths: list[Path]) -> list[ImageBlock]:
    """`--image FILE` for each file given: a user error names the file and what is wrong with it."""
    out = []
    for path in paths:
        try:
            out.append(prepare_file(path, str(path)))
        except ImageRefused as exc:
            raise UsageError(f"--image {exc}") from exc
    return out


def read_stream_json(stream: IO[str]) -> list[tuple[str, list[ImageBlock]]]:
    """The turns of a stream-json input: (text, images) per user message line; blank lines are skipped."""
    turns = []
    for number, line in enumerate(stream, 1):
        if line.strip():
            turns.append(_turn(line, number))
    if not turns:
        raise UsageError("--input-format stream-json: stdin held no user message")
    return turns


def _turn(line: str, number: int) -> tuple[str, list[ImageBlock]]:
    where = f"--input-format stream-json, line {number}"
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}: not JSON ({exc.msg})") from exc
    message = data.get("message") if isinstance(data, dict) and data.get("type") == "user" else None
    if not isinstance(message, dict) or message.get("role", "user") != "user":
        raise UsageError(f'{where}: expected {{"type": "user", "message": {{"role": "user", "content": ...}}}}')
    content = message.get("content")
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise UsageError(f"{where}: message.content is a string or a list of text and image blocks")
    texts: list[str] = []
    images: list[ImageBlock] = []
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "image":
            images.append(_image(block, f"{where}, content[{index}]", len(images) + 1))
        else:
            raise UsageError(f"{where}, content[{index}]: only text and image blocks are taken")
    return "\n\n".join(texts), images


def _image(block: dict[str, Any], where: str, number: int) -> ImageBlock:
    source = block.get("source")
    if not isinstance(source, dict) or source.get("type") != "base64" or not isinstance(source.get("data"), str):
        raise UsageError(f"{where}: an image's source is {{\"type\": \"base64\", \"media_type\": ..., \"data\": ...}}")
    try:
        data = base64.b64decode(source["data"], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise UsageError(f"{where}: the image data is not base64 ({exc})") from exc
    try:
        return prepare(data, f"image {number}")
    except ImageRefused as exc:
        raise UsageError(f"{where}: {exc}") from exc
