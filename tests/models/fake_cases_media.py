"""One broken body per image and document rule ([vision], [pdf-support]), with real image data made by
fake_rules_support (a PNG written with zlib; JPEG, GIF and WebP headers)."""

from __future__ import annotations

import base64

from fake_rules_support import RESULT, USE, Case, body, gif, image, jpeg, loop, png, webp

SMALL = png(4, 3)
_PDF = base64.b64encode(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << >>\n%%EOF").decode()


def look(*blocks: dict) -> list[dict]:
    return [{"role": "user", "content": [*blocks, {"type": "text", "text": "What is this?"}]}]


def document(source: dict) -> dict:
    return {"type": "document", "source": source}


CASES: list[Case] = [
    Case("image.source", body(messages=look({"type": "image", "source": {"type": "path", "path": "/tmp/a.png"}})),
         "messages.0.content.0.image.source: Input tag 'path' found using 'type' does not match any of the expected "
         "tags: 'base64', 'url', 'file'"),
    Case("image.media-type", body(messages=look(image(SMALL, "image/bmp"))),
         "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', "
         "'image/gif' or 'image/webp'"),
    Case("image.media-type", body(messages=loop([USE], [RESULT | {"content": [image(SMALL, "image/svg+xml")]}])),
         "messages.2.content.0.tool_result.content.0.image.source.base64.media_type: Input should be 'image/jpeg', "
         "'image/png', 'image/gif' or 'image/webp'"),
    Case("image.size", body(messages=look(image(b"\x89PNG\r\n\x1a\n" + b"\x00" * (8 * 1024 * 1024)))),
         "messages.0.content.0.image.source.base64: image exceeds 10 MB maximum: 11184824 bytes > 10485760 bytes"),
    Case("image.data-matches-type", body(messages=look(image(SMALL, "image/jpeg"))),
         "messages.0.content.0.image.source.base64.data: Image does not match the provided media type image/jpeg"),
    Case("image.data-matches-type", body(messages=look(image(b"not an image at all", "image/gif"))),
         "messages.0.content.0.image.source.base64.data: Image does not match the provided media type image/gif"),
    Case("image.dimensions", body(messages=look(image(png(8001, 2)))),
         "messages.0.content.0.image.source.base64.data: At least one of the image dimensions exceed max allowed "
         "size: 8000 pixels"),
    Case("image.dimensions", body(messages=look(image(jpeg(300, 9000), "image/jpeg"))),
         "messages.0.content.0.image.source.base64.data: At least one of the image dimensions exceed max allowed "
         "size: 8000 pixels"),
    Case("image.many-image-dimensions", body(messages=look(*[image(SMALL)] * 20, image(webp(2100, 10), "image/webp"))),
         "messages.0.content.20.image.source.base64.data: At least one of the image dimensions exceed max allowed "
         "size for many-image requests: 2000 pixels"),
    Case("media.count", body("claude-haiku-4-5", messages=look(*[image(gif(2, 2), "image/gif")] * 101)),
         "too many images and documents: 101 + 0 > 100"),
    Case("media.count", body(messages=look(*[image(SMALL)] * 600, document({
        "type": "text", "media_type": "text/plain", "data": "notes"}))),
         "too many images and documents: 600 + 1 > 600"),
    Case("document.source", body(messages=look(document({"type": "path", "path": "/tmp/a.pdf"}))),
         "messages.0.content.0.document.source: Input tag 'path' found using 'type' does not match any of the "
         "expected tags: 'base64', 'text', 'content', 'url', 'file'"),
    Case("document.media-type", body(messages=look(document({"type": "base64", "media_type": "application/msword",
                                                             "data": _PDF}))),
         "messages.0.content.0.document.source.base64.media_type: Input should be 'application/pdf'"),
    Case("document.media-type", body(messages=look(document({"type": "text", "media_type": "text/markdown",
                                                             "data": "# notes"}))),
         "messages.0.content.0.document.source.text.media_type: Input should be 'text/plain'"),
    Case("document.pdf-data", body(messages=look(document({"type": "base64", "media_type": "application/pdf",
                                                           "data": base64.b64encode(png(2, 2)).decode()}))),
         "messages.0.content.0.document.source.base64.data: The PDF specified was not valid."),
]

#: bodies with media every rule accepts (controls: a refusal above is the rule's, not the images')
VALID = [
    body(messages=look(image(png(1568, 800)), image(jpeg(640, 480), "image/jpeg"), image(gif(32, 32), "image/gif"),
                       image(webp(8000, 10), "image/webp"))),
    body(messages=look(*[image(png(2000, 2))] * 21)),
    body(messages=look({"type": "image", "source": {"type": "url", "url": "https://example.org/a.png"}},
                       document({"type": "base64", "media_type": "application/pdf", "data": _PDF}),
                       document({"type": "text", "media_type": "text/plain", "data": "notes"}))),
    body(messages=loop([USE], [RESULT | {"content": [{"type": "text", "text": "shot"}, image(SMALL)]}])),
]
