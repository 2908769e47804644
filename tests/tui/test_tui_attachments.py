"""Issue 43, item 3: only the person's words become attachments. In the app (Pilot) and in `--plain`, an image
path the person drops (pastes) is attached; the same path in a message coder sends on its own (the news of
background agents, written by agents) attaches nothing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image
from test_tui_repl import run_repl  # type: ignore[import-not-found]
from tui_support import async_test, conversation_text, make_app, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.models.types import ImageBlock

TURNS = {"turns": [{"text": "Seen."}, {"text": "Heard."}]}


def shot(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    out = io.BytesIO()
    Image.new("RGB", (40, 30), (10, 120, 200)).save(out, "PNG")
    path = folder / "shot one.png"
    path.write_bytes(out.getvalue())
    return path


def images(message) -> list[tuple[str, int, int]]:
    return [(b.name, b.width, b.height) for b in message.content if isinstance(b, ImageBlock)]


@async_test
async def test_the_app_attaches_a_dropped_image_and_never_one_named_by_agents_news(factory, git_repo: Path,
                                                                                   tmp_path: Path) -> None:
    picture = shot(tmp_path / "pictures")
    app, f = make_app(factory, git_repo, tmp_path, TURNS)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, f"what is in '{picture}' please")  # as a terminal pastes a dropped file
        await wait_for(pilot, lambda: not app.busy and "Seen." in conversation_text(app))
        history = f.opened[0].session.history
        assert images(history[0]) == [("shot one.png", 40, 30)]
        app.control.send(f"[news] the agent's report: look at '{picture}' and {picture}")  # as the app sends news
        await wait_for(pilot, lambda: not app.busy and "Heard." in conversation_text(app))
        news = [m for m in history if m.role == "user"][-1]
        assert "the agent's report" in str(news.content[0]) and images(news) == []


def test_plain_attaches_a_dropped_image(factory, git_repo: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    picture = shot(tmp_path / "pictures")
    escaped = str(picture).replace(" ", "\\ ")  # the other way terminals paste a path with a space
    text, f = run_repl(factory, git_repo, [f"what is in {escaped} please", "/quit"], monkeypatch, script=TURNS)
    assert "Seen." in text
    assert images(f.opened[0].session.history[0]) == [("shot one.png", 40, 30)]
