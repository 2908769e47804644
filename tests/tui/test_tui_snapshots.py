"""Snapshot tests of the main screens: the screen's text (ids and temp paths masked) against tests/tui/snapshots.

`CODER_UPDATE_SNAPSHOTS=1 python -m pytest tests/tui/test_tui_snapshots.py` rewrites them after an intended
change; `CODER_SCREENSHOTS=docs/screenshots` also saves each screen as SVG (how docs/screenshots/ is made).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from tui_support import async_test, make_app, screen_text, type_and_send, wait_armed, wait_for  # type: ignore[import-not-found]

SNAPSHOTS = Path(__file__).parent / "snapshots"
SCRIPT = {"turns": [
    {"text": "I'll change the greeting in `src/app.py`:\n\n- say **hi** instead of hello\n- keep the signature",
     "tool_calls": [{"name": "write_file", "input": {
         "path": "src/app.py", "content": "def greet(name):\n    return 'hi ' + name\n"}}]},
    {"text": "Done. `greet('ann')` now returns `'hi ann'`."},
]}


@pytest.fixture
def demo_repo(git_repo: Path, isolated_home: Path) -> Path:
    """The fixture repository moved under HOME, so the screen shows `~/demo` on every machine."""
    import shutil

    target = isolated_home / "demo"
    shutil.copytree(git_repo, target)
    return target


@pytest.fixture
def demo_factory(demo_repo: Path):
    from tui_support import Factory  # type: ignore[import-not-found]

    return lambda script, **kw: Factory(demo_repo, script, **kw)


def masked(text: str, workspace: Path) -> str:
    text = text.replace(str(workspace), "<repo>")
    text = re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "<session>", text)
    text = re.sub(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] (\S+) \d+s", r"<spin> \1 <s>", text)  # the spinner and the elapsed time
    return "\n".join(line.rstrip() for line in text.splitlines()).rstrip() + "\n"


def check(name: str, app, workspace: Path) -> None:
    text = masked(screen_text(app), workspace)
    shots = os.environ.get("CODER_SCREENSHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        svg = app.export_screenshot(title=f"coder: {name}")
        (Path(shots) / f"{name}.svg").write_text(svg)
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("CODER_UPDATE_SNAPSHOTS"):
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text)
    if not path.exists():
        pytest.fail(f"no snapshot {path}: run with CODER_UPDATE_SNAPSHOTS=1 once and review the file")
    assert text == path.read_text(), f"screen {name} changed:\n{text}"


@async_test
async def test_snapshot_conversation_with_diff(demo_factory, demo_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(demo_factory, demo_repo, tmp_path, SCRIPT, mode="auto")
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "greet people with hi")
        await wait_for(pilot, lambda: not app.busy and "⎇ main *" in str(app.query_one("#status").render()))
        await pilot.pause(0.3)
        check("conversation", app, demo_repo)


@async_test
async def test_snapshot_permission_prompt(demo_factory, demo_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(demo_factory, demo_repo, tmp_path, SCRIPT, mode="ask")
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None and "⎇ main" in str(app.query_one("#status").render()))
        await type_and_send(pilot, app, "greet people with hi")
        await wait_armed(pilot, app)
        await pilot.pause(0.3)
        check("permission", app, demo_repo)
        await pilot.press("4")  # no
        await wait_for(pilot, lambda: not app.busy)


@async_test
async def test_snapshot_help(demo_factory, demo_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(demo_factory, demo_repo, tmp_path, SCRIPT)
    async with app.run_test(size=(100, 60)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None and "⎇ main" in str(app.query_one("#status").render()))
        await type_and_send(pilot, app, "/help")
        await wait_for(pilot, lambda: "/rewind" in screen_text(app))
        await pilot.pause(0.3)
        check("help", app, demo_repo)


@async_test
async def test_snapshot_permission_prompt_at_80x24(demo_factory, demo_repo: Path, tmp_path: Path) -> None:
    """Issue 24: the smallest common terminal; the prompt, its answers and the status bar must all fit."""
    app, _ = make_app(demo_factory, demo_repo, tmp_path, SCRIPT, mode="ask")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None and "⎇ main" in str(app.query_one("#status").render()))
        await type_and_send(pilot, app, "greet people with hi")
        await wait_armed(pilot, app)
        await pilot.pause(0.3)
        text = screen_text(app)
        assert all(len(line) <= 80 for line in text.splitlines())
        assert "1. Yes, this once" in text and "Esc: deny and stop the turn" in text and "ask" in text.splitlines()[-1]
        check("permission_80x24", app, demo_repo)
        await pilot.press("4")  # no
        await wait_for(pilot, lambda: not app.busy)
