"""Images the model sees (issue 35): made to obey the API's rules before they are sent, and priced.

Every image enters through `prepare` (a pasted file, `coder run --image`, stream-json input, ACP, the editor's
`view`, web_fetch, an MCP result), and returns an `ImageBlock` the API accepts, or raises `ImageRefused` with a
message a person can act on. The bytes are somebody else's (a repository, a web page, an MCP server), so they are
decoded where a decoder's bug or a plugin that starts programs can do no harm (issue 43):

- the format is known from the first bytes, before any parser sees them: PNG, JPEG, GIF and WebP (the API's
  four), BMP, TIFF and ICO (converted). Anything else is refused: EPS and PostScript above all, whose Pillow
  plugin starts Ghostscript on the host.
- the size is read from the header (Pillow's plain-Python header readers, one format each: PNG, JPEG, GIF, BMP,
  TIFF) and more than MAX_SOURCE_PIXELS is refused before anything is decoded (a 23 KB PNG can claim 190 million
  pixels, a gigabyte once decoded). WebP's and ICO's headers are read by C code in Pillow, so only in the worker.
- the decoding, scaling and encoding happen in a worker (coder/models/image_worker.py) in a confined filter
  (coder/sandbox/filter.py: bubblewrap, no network, no workspace, rlimits on memory and CPU time), the bytes in
  on stdin, the result out on stdout; the worker refuses any process start, and opens with that one format.
- media types: PNG, JPEG, GIF and WebP are sent as they are when they fit and decode whole; the others are
  converted to PNG (JPEG for photos too big as PNG).
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
import importlib.util
import io
import json
import math
import os
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path

from coder.base.errors import CoderError
from coder.host.imports import refused as refused_imports
from coder.models.types import ImageBlock, Message, TextBlock, ToolResultBlock
from coder.sandbox.filter import FilterFailed, run_filter

MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
#: the formats coder takes, by their first bytes (WebP: RIFF....WEBP, in `sniff`); BMP, TIFF and ICO are converted
MAGIC = ((b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"GIF87a", "GIF"), (b"GIF89a", "GIF"),
         (b"BM", "BMP"), (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"), (b"\x00\x00\x01\x00", "ICO"))
#: formats whose header Pillow reads in Python without decoding (ICO's opening decodes, WebP's is C): their size
#: is checked on the host before the worker starts
HEADER_READ_ON_HOST = ("PNG", "JPEG", "GIF", "BMP", "TIFF")
SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".ico")
MAX_BYTES = 5 * 1024 * 1024  # [vision] per image, decoded
LONG_EDGE = 1568  # [vision] "images larger than 1568 px on the long edge are resized"
#: [vision] says "about 1.15 megapixels", and its table of the largest sizes not resized goes up to 784x1568
#: (1:2): that size, so no documented size is scaled by us and none more than the API would take
MAX_PIXELS = 784 * 1568
MAX_SOURCE_BYTES = 64 * 1024 * 1024  # a file bigger than this is not read at all
#: more pixels than this is refused from the header, before anything is decoded (a decompression bomb)
MAX_SOURCE_PIXELS = 100_000_000


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


def sniff(data: bytes) -> str | None:
    """The format of `data` by its first bytes (Pillow's plugin name), when it is one coder takes; else None."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return next((fmt for magic, fmt in MAGIC if data.startswith(magic)), None)


def webp_size(data: bytes) -> tuple[int, int] | None:
    """The canvas size of a WebP from its first chunk, read here in Python (Pillow reads it with libwebp, C code
    that must not see untrusted bytes in coder's process): VP8 (lossy), VP8L (lossless) or VP8X (extended)."""
    if sniff(data) != "WEBP" or len(data) < 30:
        return None
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        return (int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF)
    if chunk == b"VP8L" and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X":
        return (int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1)
    return None


def request_image_size(data: bytes) -> tuple[int, int] | None:
    """The size of an image in a request (one `prepare` made, or a stored one), read without any C decoder: WebP in
    Python, PNG, JPEG and GIF by Pillow's plain-Python header readers; None for anything else."""
    fmt = sniff(data)
    if fmt == "WEBP":
        return webp_size(data)
    return header_size(data, (fmt,)) if fmt in MEDIA_TYPES else None


def header_size(data: bytes, formats: tuple[str, ...]) -> tuple[int, int] | None:
    """The width and height of `data` read from its header by Pillow, trying `formats` only (give only formats of
    HEADER_READ_ON_HOST in coder's process); None for anything else. `data` may be the first part of the file
    only."""
    # start-up time: Pillow loads only when an image comes in
    from PIL import Image, UnidentifiedImageError

    Image.MAX_IMAGE_PIXELS = None  # the callers judge the size (prepare: MAX_SOURCE_PIXELS); nothing is decoded here
    try:
        with Image.open(io.BytesIO(data), formats=list(formats)) as opened:
            return opened.size
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, SyntaxError, EOFError,
            KeyError):  # KeyError: the format's plugin did not load (coder/host/imports.py refused it)
        return None


def prepare(data: bytes, name: str) -> ImageBlock:
    """`data` as an image block the API accepts (see the module docstring), named `name` for people."""
    if len(data) > MAX_SOURCE_BYTES:
        raise ImageRefused(f"{name}: {len(data) // (1024 * 1024)} MB is too big to read as an image "
                           f"(at most {MAX_SOURCE_BYTES // (1024 * 1024)} MB)")
    fmt = sniff(data)
    if fmt is None:
        raise ImageRefused(f"{name}: not an image coder can read (it takes PNG, JPEG, GIF, WebP, BMP, TIFF and ICO)")
    if fmt in HEADER_READ_ON_HOST:
        refusals = len(refused_imports())
        size = header_size(data, (fmt,))
        if size is None:
            why = refused_imports()[refusals:]
            raise ImageRefused(f"{name}: " + (why[-1] if why else f"not an image coder can read (it starts as {fmt} "
                                                                    "does, but its header cannot be read)"))
        if size[0] * size[1] > MAX_SOURCE_PIXELS:
            raise ImageRefused(f"{name}: {size[0]}x{size[1]} pixels is more than coder decodes "
                               f"({MAX_SOURCE_PIXELS:,}); nothing was decoded")
    params = {"format": fmt, "site": _pillow_site(), "max_pixels": MAX_SOURCE_PIXELS, "long_edge": LONG_EDGE,
              "max_fit_pixels": MAX_PIXELS, "max_bytes": MAX_BYTES, "send_as_is": list(MEDIA_TYPES)}
    try:
        out = run_filter([sys.executable, "-I", "-S", "-c", _worker_source(), json.dumps(params)], data,
                         purpose="the image decoder", readable=_worker_reads(params["site"]))
    except FilterFailed as exc:
        raise ImageRefused(f"{name}: {exc}") from None
    except OSError as exc:
        raise ImageRefused(f"{name}: the image decoder could not start ({exc})") from exc
    head, _, encoded = out.partition(b"\n")
    header = json.loads(head)
    if header["same"]:
        return _block(header["media_type"], data, name, header["width"], header["height"])
    return _block(header["media_type"], encoded, name, header["width"], header["height"])


def prepare_file(path: Path, name: str | None = None) -> ImageBlock:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImageRefused(f"{name or path}: cannot read it ({exc.strerror or exc})") from exc
    return prepare(data, name or path.name)


@cache
def _worker_source() -> str:
    return (Path(__file__).parent / "image_worker.py").read_text(encoding="utf-8")


@cache
def _pillow_site() -> str:
    """The folder holding Pillow (the worker's only import path), found without importing it."""
    spec = importlib.util.find_spec("PIL")
    if spec is None or not spec.submodule_search_locations:
        raise ImageRefused("Pillow is not installed: `pip install pillow`")
    return os.path.dirname(os.path.realpath(next(iter(spec.submodule_search_locations))))


def _worker_reads(site: str) -> list[str]:
    """What the worker's sandbox binds read-only: this Python and Pillow's folder (Pillow's own libraries sit
    beside it, in `pillow.libs`)."""
    return [sys.base_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)), site]


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
