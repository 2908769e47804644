"""Images made to obey the API's rules before sending (coder/models/images.py), with real image files."""

from __future__ import annotations

import base64
import io

import pytest
from images_support import picture
from PIL import Image, PngImagePlugin

from coder.models.images import (
    LONG_EDGE,
    MAX_BYTES,
    MAX_PIXELS,
    ImageRefused,
    image_tokens,
    prepare,
    within_limits,
)
from coder.models.types import ImageBlock, Message, TextBlock, ToolResultBlock


def decoded(block: ImageBlock) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(block.data)))


@pytest.mark.parametrize(("fmt", "media"), [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"),
                                             ("WEBP", "image/webp")])
def test_a_small_image_of_an_accepted_type_goes_as_it_is(fmt: str, media: str) -> None:
    data = picture(300, 200, fmt)
    block = prepare(data, "shot")
    assert (block.media_type, block.width, block.height) == (media, 300, 200)
    assert base64.b64decode(block.data) == data


def test_a_big_image_is_scaled_within_the_long_edge_and_the_pixel_limit() -> None:
    block = prepare(picture(4000, 1000), "wide.png")
    assert block.width == LONG_EDGE and block.height == LONG_EDGE // 4
    assert decoded(block).size == (block.width, block.height)
    square = prepare(picture(3000, 3000), "square.png")
    assert square.width * square.height <= MAX_PIXELS and square.width == square.height
    assert image_tokens(square.width, square.height) <= 1640  # [vision]: about 1600 tokens at most


def test_other_formats_are_converted_and_a_file_over_5_mb_is_encoded_again_within_it() -> None:
    bmp = prepare(picture(64, 48, "BMP"), "old.bmp")
    assert bmp.media_type == "image/png" and decoded(bmp).format == "PNG"
    info = PngImagePlugin.PngInfo()
    info.add_text("comment", "x" * (MAX_BYTES + 1000))  # within the dimensions, over the size: metadata
    out = io.BytesIO()
    Image.new("RGB", (800, 600), (1, 2, 3)).save(out, "PNG", pnginfo=info)
    assert len(out.getvalue()) > MAX_BYTES  # the plant: as it is, the API refuses it
    block = prepare(out.getvalue(), "fat.png")
    assert len(base64.b64decode(block.data)) <= MAX_BYTES and (block.width, block.height) == (800, 600)
    noisy = prepare(picture(1500, 1000, "PNG", noisy=True), "noise.png")  # photo-like: scaled, still sharp
    assert noisy.width * noisy.height <= MAX_PIXELS and len(base64.b64decode(noisy.data)) <= MAX_BYTES


@pytest.mark.parametrize("data", [b"not an image at all", picture(50, 50)[:60]])
def test_what_is_not_an_image_or_is_broken_is_refused_with_its_name(data: bytes) -> None:
    with pytest.raises(ImageRefused, match="^bad.png: "):
        prepare(data, "bad.png")


def test_over_the_count_the_oldest_images_become_notes() -> None:
    image = prepare(picture(10, 10), "a.png")
    messages = [Message("user", [TextBlock("look"), image, image]),
                Message("user", [ToolResultBlock("t1", "shown", images=[image, image])])]
    fitted = within_limits(messages, 3)
    assert [type(b).__name__ for b in fitted[0].content] == ["TextBlock", "TextBlock", "ImageBlock"]
    assert "a.png 10x10" in fitted[0].content[1].text  # type: ignore[union-attr]
    assert len(fitted[1].content[0].images) == 2  # type: ignore[union-attr]
    assert len(messages[0].content) == 3 and messages[0].content[1] is image  # the history is untouched
    blind = within_limits(messages, 100, vision=False)
    assert not any(isinstance(b, ImageBlock) for m in blind for b in m.content)
    assert "does not take images" in blind[1].content[0].content  # type: ignore[union-attr]
