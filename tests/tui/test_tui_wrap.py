"""Issue 24: long code lines were clipped (a Markdown code block cut them off at the edge, with no scroll bar).
They now wrap, or keep their shape and scroll sideways, by the person's choice: /wrap or Alt+Z, for the app's
whole life (a fresh session keeps it)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static
from textual.widgets._markdown import MarkdownFence
from tui_support import async_test, make_app, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.base import events as ev
from coder.tui.blocks import OutputView, ToolBlock

LONG = "x = [" + ", ".join(f"'item{i}'" for i in range(40)) + "]  # END"  # about 330 columns
SCRIPT = {"turns": [{"text": f"Here it is:\n\n```python\n{LONG}\n```\n"}]}


def _fence_lines(app) -> tuple[int, int, int]:
    """(height of the code, width of what it holds, width it has) of the newest code block."""
    fence = list(app.query(MarkdownFence))[-1]
    label = fence.query_one("#code-content")
    return label.outer_size.height, fence.virtual_size.width, fence.scrollable_content_region.width


@async_test
async def test_long_lines_wrap_or_scroll_by_choice(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, SCRIPT)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "show me the list")
        await wait_for(pilot, lambda: len(app.query(MarkdownFence)) == 1 and not app.busy)
        await wait_for(pilot, lambda: _fence_lines(app)[0] >= 3)  # laid out (every wait here is for a state)
        height, inner, room = _fence_lines(app)
        assert height >= 3 and inner <= room, (height, inner, room)  # wrapped: every character on screen
        app.queue.append(ev.ToolCallRequested("c1", "bash", {"command": "cat wide.txt"}))
        app.queue.append(ev.ToolCallFinished("c1", "bash", {}, f"{LONG}\nsecond line", False, [], 0.2))
        await wait_for(pilot, lambda: len(app.query(ToolBlock)) > 0)  # drawn when the queue is drained (a CI run
        block = list(app.query(ToolBlock))[-1]  # under load was not there after the 0.3 s this waited)
        block.set_collapsed(False)
        await wait_for(pilot, lambda: block.body is not None and len(block.body.query(OutputView)) == 1)
        assert block.body is not None
        view = block.body.query_one(OutputView)
        await wait_for(pilot, lambda: view.query_one(Static).outer_size.height >= 4)
        assert view.query_one(Static).outer_size.height >= 4 and view.max_scroll_x == 0  # wrapped too

        await pilot.press("alt+z")  # scroll instead: one line each, a scroll bar, nothing cut for good
        await wait_for(pilot, lambda: _fence_lines(app)[0] <= 3 and view.max_scroll_x > 0)
        height, inner, room = _fence_lines(app)
        assert height <= 3 and inner > room, (height, inner, room)
        assert view.query_one(Static).outer_size.height == 2 and view.max_scroll_x > 0
        view.scroll_to(x=view.max_scroll_x, animate=False, immediate=True)
        await pilot.pause(0.1)
        assert view.scroll_x == view.max_scroll_x > 0  # the end of the line can be reached

        await type_and_send(pilot, app, "/clear")  # the choice holds for the app's life
        await pilot.pause(0.3)
        await wait_for(pilot, lambda: app.opened is not None)
        assert app.has_class("nowrap")
        await type_and_send(pilot, app, "/wrap")  # the command switches back
        await wait_for(pilot, lambda: not app.has_class("nowrap"))
        await type_and_send(pilot, app, "/wrap off")
        await wait_for(pilot, lambda: app.has_class("nowrap"))
