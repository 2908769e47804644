"""The image decoder's own program: run in a confined filter (coder/sandbox/filter.py) by coder/models/images.py,
never imported by coder. Self-contained (the standard library and Pillow only): it is given to `python -I -S -c`
as text, with Pillow's folder as its only import path, in a sandbox that holds nothing of coder or the workspace.

argv[1]: a JSON object: `format` (the one Pillow plugin to open with, decided by the host from the magic bytes),
`site` (the folder holding PIL), `max_pixels`, `long_edge`, `max_fit_pixels`, `max_bytes`, `send_as_is` (the
formats sent unchanged when they fit). stdin: the bytes. stdout: one JSON line (`media_type`, `width`, `height`,
`same`: the bytes go as they are) and, unless `same`, the encoded image. A refusal: its reason on stderr, exit 2.
"""

from __future__ import annotations

import io
import json
import math
import sys
from typing import Any, NoReturn

SPAWNS = ("subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system", "os.fork", "os.forkpty")


def refuse(message: str) -> NoReturn:
    print(message, file=sys.stderr)
    raise SystemExit(2)


def no_processes(event: str, args: tuple[Any, ...]) -> None:
    """No plugin starts a program from here (Pillow's EPS plugin would start Ghostscript)."""
    if event in SPAWNS:
        raise OSError(f"{event}: the image decoder starts no program")


def fitted(width: int, height: int, long_edge: int, max_pixels: int) -> tuple[int, int]:
    scale = min(1.0, long_edge / max(width, height, 1), math.sqrt(max_pixels / max(width * height, 1)))
    if scale >= 1.0:
        return width, height
    return max(1, int(width * scale)), max(1, int(height * scale))


def main() -> None:
    sys.addaudithook(no_processes)
    params = json.loads(sys.argv[1])
    sys.path.insert(0, params["site"])
    from PIL import Image, UnidentifiedImageError  # the worker's one dependency

    data = sys.stdin.buffer.read()
    fmt = params["format"]
    Image.MAX_IMAGE_PIXELS = params["max_pixels"]
    try:
        with Image.open(io.BytesIO(data), formats=[fmt]) as opened:
            width, height = opened.size
            if width * height > params["max_pixels"] or width < 1 or height < 1:
                refuse(f"{width}x{height} pixels is more than coder decodes ({params['max_pixels']:,})")
            target = fitted(width, height, params["long_edge"], params["max_fit_pixels"])
            opened.load()  # decoded whole: a truncated or broken file is refused here, not by the API
            if fmt in params["send_as_is"] and target == (width, height) and len(data) <= params["max_bytes"]:
                header = {"media_type": f"image/{fmt.lower()}", "width": width, "height": height, "same": True}
                sys.stdout.write(json.dumps(header) + "\n")
                return
            opened.seek(0)  # an animation: its first frame
            alpha = opened.mode in ("RGBA", "LA", "PA") or (opened.mode == "P" and "transparency" in opened.info)
            picture = opened.convert("RGBA" if alpha else "RGB")
    except (UnidentifiedImageError, Image.DecompressionBombError) as exc:
        refuse(f"not an image coder can read ({why(exc)})")
    except (OSError, ValueError, SyntaxError, EOFError, MemoryError) as exc:
        refuse(f"the image is broken ({why(exc)})")
    if target != picture.size:
        picture = picture.resize(target, Image.Resampling.LANCZOS)
    media_type, encoded = encode(picture, params["max_bytes"])
    header = {"media_type": media_type, "width": picture.width, "height": picture.height, "same": False}
    sys.stdout.write(json.dumps(header) + "\n")
    sys.stdout.flush()
    sys.stdout.buffer.write(encoded)


def encode(picture: Any, max_bytes: int) -> tuple[str, bytes]:
    """PNG when it fits in `max_bytes` (screenshots and diagrams stay sharp), else JPEG at falling quality."""
    out = io.BytesIO()
    picture.save(out, "PNG", optimize=False)
    if out.tell() <= max_bytes:
        return "image/png", out.getvalue()
    flat = picture.convert("RGB")
    for quality in (90, 80, 70, 55, 40):
        out = io.BytesIO()
        flat.save(out, "JPEG", quality=quality)
        if out.tell() <= max_bytes:
            return "image/jpeg", out.getvalue()
    refuse(f"still over {max_bytes // (1024 * 1024)} MB after scaling and compressing")


def why(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


if __name__ == "__main__":
    main()
