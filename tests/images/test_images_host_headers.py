"""WebP's header is read in Python in coder's process: Pillow reads it with libwebp (C code whose bugs have been
exploited, CVE-2023-4863), which must see untrusted bytes only in the image worker (decision 43). The red team's F12:
the request path priced a WebP through Pillow, loading `PIL._webp` on the host."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from coder.models.images import request_image_size, webp_size

REPO = Path(__file__).resolve().parents[2]


def _webp(size: tuple[int, int], **save: object) -> bytes:
    mode = "RGBA" if save.pop("alpha", False) else "RGB"
    out = io.BytesIO()
    frames = save.pop("frames", 1)
    images = [Image.new(mode, size, (i * 40 % 256, 90, 30)) for i in range(int(frames))]  # type: ignore[arg-type]
    images[0].save(out, "WEBP", save_all=len(images) > 1, append_images=images[1:], **save)
    return out.getvalue()


@pytest.mark.parametrize(("size", "options"), [
    ((37, 19), {}), ((1600, 900), {"quality": 50}), ((5, 3000), {"lossless": True}),
    ((300, 200), {"alpha": True}), ((64, 48), {"frames": 3}), ((16383, 1), {"lossless": True}),
], ids=["lossy", "lossy-big", "lossless", "alpha", "animated", "widest"])
def test_webp_size_is_what_pillow_reads(size: tuple[int, int], options: dict[str, object]) -> None:
    data = _webp(size, **options)
    with Image.open(io.BytesIO(data)) as opened:
        assert opened.size == size  # control: Pillow's own reading
    assert webp_size(data) == size == request_image_size(data)
    assert webp_size(data[:40]) == size  # the first chunk is enough


def test_not_webp_or_cut_short_is_none() -> None:
    assert webp_size(b"RIFF\x00\x00\x00\x00WEBPVP8 ") is None
    assert webp_size(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40) is None
    assert webp_size(b"RIFF\x10\x00\x00\x00WEBPXXXX" + b"\x00" * 20) is None


PROBE = """
import base64, sys
sys.path.insert(0, sys.argv[1])
data = base64.b64encode(open(sys.argv[2], "rb").read()).decode()
if sys.argv[3] == "control":  # Pillow's own reading of the header loads libwebp
    import io
    from PIL import Image
    Image.open(io.BytesIO(base64.b64decode(data))).size
else:
    from coder.models.wire import chat_item_tokens
    part = {"type": "image_url", "image_url": {"url": "data:image/webp;base64," + data}}
    assert chat_item_tokens({"role": "user", "content": [part]}) > 300 * 200 // 750 - 5
print("PIL._webp" in sys.modules)
"""


@pytest.mark.parametrize("how", ["coder", "control"])
def test_pricing_a_request_with_a_webp_loads_no_c_decoder(tmp_path: Path, how: str) -> None:
    picture = tmp_path / "x.webp"
    picture.write_bytes(_webp((300, 200)))
    proc = subprocess.run([sys.executable, "-I", "-c", PROBE, str(REPO), str(picture), how], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(how == "control")
