"""Messages API rules on images and documents ([vision], [pdf]): source kinds, media types, the size of base64
data, that the data is what its media type says, image dimensions (8000 px; 2000 px in a request of more than 20
images), and how many images and documents one request may hold (100 for models with a 200k-token window, 600 for
the others).

Issue 35 builds images in and out on these rules: a new source kind or limit is one more entry here. The image
format is read from the data's own header (PNG, JPEG, GIF, WebP), with no image library: the judge needs only the
kind and the size, and must not share a decoder with the client."""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass

from coder_testkit.fake_rules.book import PDF, VISION, Found, Rules
from coder_testkit.fake_rules.context import Block, MessagesCall, first_found

RULES: Rules[MessagesCall] = Rules()

IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")  # [vision]
IMAGE_SOURCES = ("base64", "url", "file")  # [vision] the three source kinds
DOCUMENT_SOURCES = ("base64", "text", "content", "url", "file")  # [pdf] and the SDK's DocumentBlockParam
MAX_IMAGE_BASE64 = 10 * 1024 * 1024  # [vision] "10 MB (base64-encoded) when using the Claude API directly"
MAX_SIDE = 8000  # [vision] "The maximum dimensions per image are 8000x8000 px"
MANY_IMAGES = 20  # [vision] "more than 20 images": a stricter limit for each image
MANY_IMAGES_SIDE = 2000  # [vision] "resize each image so that neither dimension exceeds 2000 px"


@dataclass(frozen=True)
class Picture:
    """What the header of image data says: its format (a media type) and size in pixels."""

    media_type: str
    width: int
    height: int


def read_picture(data: bytes) -> Picture | None:
    """The format and size of PNG, GIF, WebP or JPEG data from its header; None when it is none of them."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return Picture("image/png", width, height)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return Picture("image/gif", width, height)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg(data)
    return None


def _webp(data: bytes) -> Picture:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
    elif chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        width, height = 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    elif len(data) >= 30:  # lossy "VP8 "
        width, height = (v & 0x3FFF for v in struct.unpack("<HH", data[26:30]))
    else:
        width = height = 0
    return Picture("image/webp", width, height)


def _jpeg(data: bytes) -> Picture:
    """Walk the segments to the first start-of-frame marker, which holds the size."""
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            at += 1
            continue
        marker = data[at + 1]
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            at += 2
            continue
        length = int.from_bytes(data[at + 2:at + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return Picture("image/jpeg", width, height)
        at += 2 + length
    return Picture("image/jpeg", 0, 0)


def _source(block: Block) -> dict[str, object]:
    source = block.block.get("source")
    return source if isinstance(source, dict) else {}


def _decoded(block: Block) -> bytes | None:
    data = _source(block).get("data")
    try:
        return base64.b64decode(data, validate=True) if isinstance(data, str) else None
    except (binascii.Error, ValueError):
        return None


def _images(call: MessagesCall) -> list[Block]:
    return call.of_type("image")


def _base64_images(call: MessagesCall) -> list[Block]:
    return [b for b in _images(call) if _source(b).get("type") == "base64"]


@RULES.rule("image.source", "an image's source is base64, url or file",
            "{path}: Input tag '{tag}' found using 'type' does not match any of the expected tags: 'base64', 'url', "
            "'file'", VISION, "closest")
def _image_source(call: MessagesCall) -> Found:
    return first_found(_images(call), lambda b: {"path": b.at("source"), "tag": _source(b).get("type")}
                  if _source(b).get("type") not in IMAGE_SOURCES else None)


@RULES.rule("image.media-type", "a base64 image is JPEG, PNG, GIF or WebP",
            "{path}: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", VISION, "seen",
            seen="https://github.com/anthropics/claude-code/issues/8184")
def _image_media_type(call: MessagesCall) -> Found:
    return first_found(_base64_images(call), lambda b: {"path": b.at("source", "base64", "media_type")}
                  if _source(b).get("media_type") not in IMAGE_MEDIA_TYPES else None)


@RULES.rule("image.size", "a base64 image is at most 10 MB (of base64 text)",
            "{path}: image exceeds 10 MB maximum: {size} bytes > 10485760 bytes", VISION, "seen",
            seen="https://github.com/anthropics/claude-code/issues/10612")
def _image_size(call: MessagesCall) -> Found:
    def broken(block: Block) -> Found:
        data = _source(block).get("data")
        size = len(data) if isinstance(data, str) else 0
        return {"path": block.at("source", "base64"), "size": size} if size > MAX_IMAGE_BASE64 else None
    return first_found(_base64_images(call), broken)


@RULES.rule("image.data-matches-type", "a base64 image's data is an image of its declared media type",
            "{path}: Image does not match the provided media type {media_type}", VISION, "seen",
            seen="https://github.com/anthropics/claude-code/issues/13131")
def _image_data(call: MessagesCall) -> Found:
    def broken(block: Block) -> Found:
        data = _decoded(block)
        picture = read_picture(data) if data is not None else None
        declared = _source(block).get("media_type")
        if picture is None or picture.media_type != declared:
            return {"path": block.at("source", "base64", "data"), "media_type": declared}
        return None
    return first_found(_base64_images(call), broken)


@RULES.rule("image.dimensions", "no image side exceeds 8000 px",
            "{path}: At least one of the image dimensions exceed max allowed size: 8000 pixels", VISION, "seen",
            seen="https://github.com/anthropics/claude-code/issues/4778")
def _image_dimensions(call: MessagesCall) -> Found:
    return first_found(_base64_images(call), lambda b: _too_big(b, MAX_SIDE))


@RULES.rule("image.many-image-dimensions", "in a request of more than 20 images, no image side exceeds 2000 px "
            "(images in tool results and earlier turns count)",
            "{path}: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 "
            "pixels", VISION, "seen", seen="https://github.com/anthropics/claude-code/issues/49537")
def _many_image_dimensions(call: MessagesCall) -> Found:
    if len(_images(call)) <= MANY_IMAGES:
        return None
    return first_found(_base64_images(call), lambda b: _too_big(b, MANY_IMAGES_SIDE))


def _too_big(block: Block, limit: int) -> Found:
    data = _decoded(block)
    picture = read_picture(data) if data is not None else None
    if picture is not None and max(picture.width, picture.height) > limit:
        return {"path": block.at("source", "base64", "data")}
    return None


@RULES.rule("media.count", "at most 100 images and documents a request on models with a 200k-token window, 600 on "
            "the others", "too many images and documents: {images} + {documents} > {limit}", VISION, "seen",
            seen="https://github.com/anthropics/claude-code/issues/23392")
def _media_count(call: MessagesCall) -> Found:
    images, documents = len(_images(call)), len(call.of_type("document"))
    limit = call.facts.max_images
    return {"images": images, "documents": documents, "limit": limit} if images + documents > limit else None


# ------------------------------------------------------------------------------------------------ documents


@RULES.rule("document.source", "a document's source is base64 (PDF), text, content, url or file",
            "{path}: Input tag '{tag}' found using 'type' does not match any of the expected tags: 'base64', "
            "'text', 'content', 'url', 'file'", PDF, "closest")
def _document_source(call: MessagesCall) -> Found:
    return first_found(call.of_type("document"), lambda b: {"path": b.at("source"), "tag": _source(b).get("type")}
                  if _source(b).get("type") not in DOCUMENT_SOURCES else None)


@RULES.rule("document.media-type", "a base64 document is a PDF (application/pdf); a text document is text/plain",
            "{path}: Input should be '{expected}'", PDF, "schema")
def _document_media_type(call: MessagesCall) -> Found:
    expected = {"base64": "application/pdf", "text": "text/plain"}

    def broken(block: Block) -> Found:
        kind = str(_source(block).get("type"))
        want = expected.get(kind)
        if want and _source(block).get("media_type") != want:
            return {"path": block.at("source", kind, "media_type"), "expected": want}
        return None
    return first_found(call.of_type("document"), broken)


@RULES.rule("document.pdf-data", "a base64 PDF's data is a PDF", "{path}: The PDF specified was not valid.", PDF,
            "closest")
def _document_pdf(call: MessagesCall) -> Found:
    def broken(block: Block) -> Found:
        if _source(block).get("type") != "base64":
            return None
        data = _decoded(block)
        return {"path": block.at("source", "base64", "data")} if data is None or b"%PDF-" not in data[:1024] else None
    return first_found(call.of_type("document"), broken)
