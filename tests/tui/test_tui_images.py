"""Issue 35 in the app (Pilot): an image named with `@` or dropped into the input as a path goes to the model as
an image and shows as a chip with its size; a resumed session sends it again."""

from __future__ import annotations

import io
from dataclasses import asdict
from pathlib import Path

from PIL import Image
from tui_support import async_test, conversation_text, make_app, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.base import events as ev
from coder.engine.history import rebuild
from coder.models.images import prepare_file
from coder.models.types import ImageBlock
from coder.repl.work import progress_line

SEEN = {"turns": [{"text": "Two screenshots."}]}


def write_png(path: Path, width: int, height: int) -> Path:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (9, 9, 9)).save(out, "PNG")
    path.write_bytes(out.getvalue())
    return path


@async_test
async def test_an_at_image_and_a_dropped_path_show_as_chips_and_go_as_images(factory, git_repo: Path,
                                                                           tmp_path: Path) -> None:
    write_png(git_repo / "ui.png", 640, 480)
    dropped = write_png(tmp_path / "My Shot.png", 2400, 1200)
    app, f = make_app(factory, git_repo, tmp_path, SEEN)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, f"compare @ui.png with '{dropped}'")
        await wait_for(pilot, lambda: not app.busy and "Two screenshots." in conversation_text(app))
        text = conversation_text(app)
        assert "[image ui.png 640x480" in text and "[image My Shot.png 1568x784" in text
        images = [b for b in app.session.history[0].content if isinstance(b, ImageBlock)]
        assert [(i.name, i.width) for i in images] == [("ui.png", 640), ("My Shot.png", 1568)]
        opened = f.opened[0]
        restored = rebuild(opened.store.stored(opened.session.id))
        assert [b for b in restored.history[0].content if isinstance(b, ImageBlock)] == images


def test_the_repl_shows_the_same_chips(tmp_path: Path) -> None:
    image = prepare_file(write_png(tmp_path / "plot.png", 300, 200))
    line = progress_line(ev.UserMessage("see", [], [asdict(image)]))
    assert line.startswith("[image plot.png 300x200, ") and line.endswith(" KB]")
    assert progress_line(ev.UserMessage("see", [], [])) == ""
