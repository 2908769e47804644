"""Real image files made in the test (Pillow), shared by the image tests."""

from __future__ import annotations

import io
from pathlib import Path

from PIL import Image


def picture(width: int, height: int, fmt: str = "PNG", mode: str = "RGB", noisy: bool = False) -> bytes:
    """An image of `width` x `height`; `noisy` makes it incompressible (random pixels), so its file is big."""
    if noisy:
        image = Image.frombytes(mode, (width, height), _noise(width * height * len(mode)))
    else:
        image = Image.new(mode, (width, height), (200, 30, 30) if mode == "RGB" else None)
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


def write_picture(path: Path, width: int, height: int, fmt: str = "PNG", **kw: object) -> Path:
    path.write_bytes(picture(width, height, fmt, **kw))  # type: ignore[arg-type]
    return path


def _noise(size: int) -> bytes:
    import random  # only the noisy pictures need it

    return random.Random(35).randbytes(size)
