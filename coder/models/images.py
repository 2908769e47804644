"""Images the model sees (issue 35): made to obey the API's rules before they are sent, and priced.

Every image enters through `prepare` (a pasted file, `coder run --image`, stream-json input, ACP, the editor's
`view`, an MCP result), which decodes it with a real image library (Pillow) and returns an `ImageBlock` the API
accepts, or raises `ImageRefused` with a message a person can act on:

- media types: PNG, JPEG, GIF and WebP are sent as they are when they fit; anything else Pillow reads (BMP, TIFF,
  ICO, ...) is converted to PNG (JPEG for photos too big as PNG); what Pillow cannot read is refused.
- size and dimensions ([vision]): an image larger than 1568 px on its long edge or ~1.2 megapixels is scaled
  down before sending. The API would scale it down itself, at the same token price, after the upload and with a
  delay; at 1568 px neither the 8000 px limit nor the 2000 px limit of a request with more than 20 images can be
  reached. After scaling, the encoded image must be at most 5 MB (the API's per-image limit); a bigger one is
  re-encoded as JPEG at falling quality.
- count: `within_limits` keeps the newest images of a request up to the model's limit (100 a request for a
  200k-token window, 600 otherwise) and replaces older ones by a note of what each was.
- price: `image_tokens` is the documented formula, tokens = width * height / 750.

[vision] https://docs.claude.com/en/docs/build-with-claude/vision
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import replace
from pathlib import Path

from coder.base.errors import CoderError
from coder.models.types import ImageBlock, Message, TextBlock, ToolResultBlock

MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".ico")
MAX_BYTES = 5 * 1024 * 1024  # [vision] per image, decoded
LONG_EDGE = 1568  # [vision] "images larger than 1568 px on the long edge are resized"
#: [vision] says "about 1.15 megapixels", and its table of the largest sizes not resized goes up to 784x1568
#: (1:2): that size, so no documented size is scaled by us and none more than the API would take
MAX_PIXELS = 784 * 1568
MAX_SOURCE_BYTES = 64 * 1024 * 1024  # a file bigger than this is not read at all
MAX_SOURCE_PIXELS = 100_000_000  # Pillow refuses more (a decompression bomb), and so do we, with a message


class ImageRefused(CoderError):
    """An image that cannot be sent (not an image, unreadable, too big even after scaling)."""


def image_tokens(width: int, height: int) -> int:
    """[vision] tokens = (width px * height px) / 750, for an image already within the resize limits."""
    return math.ceil(width * height / 750)


def looks_like_image(path: str | Path) -> bool:
    return Path(path).suffix.lower() in SUFFIXES


def fitted_size(width: int, height: int) -> tuple[int, int]:
    """The size the API would scale an image down to (and which we send): within LONG_EDGE and MAX_PIXELS."""
    scale = min(1.0, LONG_EDGE / max(width, height, 1), math.sqrt(MAX_PIXELS / max(width * height, 1)))
    if scale >= 1.0:
        return width, height
    return max(1, int(width * scale)), max(1, int(height * scale))


def header_size(data: bytes) -> tuple[int, int] | None:
    """The width and height of PNG, JPEG, GIF or WebP bytes, read from their header (Pillow, those four formats
    only: no other plugin is tried); None for anything else. `data` may be the first part of the file only."""
    # start-up time: Pillow loads only when an image comes in
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data), formats=list(MEDIA_TYPES)) as opened:
            return opened.size
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, SyntaxError):
        return None


def prepare(data: bytes, name: str) -> ImageBlock:
    """`data` as an image block the API accepts (see the module docstring), named `name` for people."""
    # start-up time: Pillow loads only when an image comes in
    from PIL import Image, UnidentifiedImageError

    if len(data) > MAX_SOURCE_BYTES:
        raise ImageRefused(f"{name}: {len(data) // (1024 * 1024)} MB is too big to read as an image "
                           f"(at most {MAX_SOURCE_BYTES // (1024 * 1024)} MB)")
    Image.MAX_IMAGE_PIXELS = MAX_SOURCE_PIXELS
    try:
        with Image.open(io.BytesIO(data)) as opened:
            fmt = opened.format or ""
            width, height = opened.size
            target = fitted_size(width, height)
            if fmt in MEDIA_TYPES and target == (width, height) and len(data) <= MAX_BYTES:
                opened.verify()  # a truncated or broken file is refused here, not by the API
                return _block(MEDIA_TYPES[fmt], data, name, width, height)
            opened.seek(0)  # an animation: its first frame
            picture = opened.convert("RGBA" if _has_alpha(opened) else "RGB")
    except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
        raise ImageRefused(f"{name}: not an image coder can read ({_why(exc)})") from exc
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageRefused(f"{name}: the image is broken ({_why(exc)})") from exc
    if target != picture.size:
        picture = picture.resize(target, Image.Resampling.LANCZOS)
    return _encode(picture, name)


def prepare_file(path: Path, name: str | None = None) -> ImageBlock:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImageRefused(f"{name or path}: cannot read it ({exc.strerror or exc})") from exc
    return prepare(data, name or path.name)


def _has_alpha(image: object) -> bool:
    mode = getattr(image, "mode", "")
    return mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in getattr(image, "info", {}))


def _why(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _encode(picture: object, name: str) -> ImageBlock:
    """PNG when it fits in MAX_BYTES (screenshots and diagrams stay sharp), else JPEG at falling quality."""
    from PIL import Image  # start-up time, as in prepare

    assert isinstance(picture, Image.Image)
    out = io.BytesIO()
    picture.save(out, "PNG", optimize=False)
    if out.tell() <= MAX_BYTES:
        return _block("image/png", out.getvalue(), name, *picture.size)
    flat = picture.convert("RGB")
    for quality in (90, 80, 70, 55, 40):
        out = io.BytesIO()
        flat.save(out, "JPEG", quality=quality)
        if out.tell() <= MAX_BYTES:
            return _block("image/jpeg", out.getvalue(), name, *picture.size)
    raise ImageRefused(f"{name}: still over {MAX_BYTES // (1024 * 1024)} MB after scaling and compressing")


def _block(media_type: str, data: bytes, name: str, width: int, height: int) -> ImageBlock:
    return ImageBlock(media_type, base64.b64encode(data).decode("ascii"), name, width, height)


# ------------------------------------------------------------------------------------------------ a request


def max_images(context_window: int) -> int:
    """[vision] 100 images a request for models with a 200k-token (or smaller) window, 600 for the others."""
    return 100 if context_window <= 200_000 else 600


def dropped_note(image: ImageBlock, why: str) -> str:
    return f"[image {image.label()} was removed: {why}]"


def within_limits(messages: list[Message], limit: int, vision: bool = True) -> list[Message]:
    """`messages` with at most `limit` images (the newest kept; none when the model has no `vision`), each image
    left out replaced by a note saying what it was. The messages given are never changed."""
    total = sum(len(_images_of(b)) for m in messages for b in m.content)
    keep = limit if vision else 0
    if total <= keep:
        return messages
    over = total - keep
    why = ("this model does not take images" if not vision
           else f"more than {limit} images in one request (the API's limit), the oldest go first")
    out: list[Message] = []
    for message in messages:
        blocks = []
        for block in message.content:
            if over and isinstance(block, ImageBlock):
                blocks.append(TextBlock(dropped_note(block, why)))
                over -= 1
            elif over and isinstance(block, ToolResultBlock) and block.images:
                cut = block.images[:over]
                over -= len(cut)
                notes = "\n".join(dropped_note(i, why) for i in cut)
                blocks.append(replace(block, content=f"{block.content}\n{notes}".strip(),
                                      images=block.images[len(cut):]))
            else:
                blocks.append(block)
        out.append(Message(message.role, blocks))
    return out


def _images_of(block: object) -> list[ImageBlock]:
    if isinstance(block, ImageBlock):
        return [block]
    return list(block.images) if isinstance(block, ToolResultBlock) else []
