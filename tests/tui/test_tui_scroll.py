"""The conversation keeps the newest output on screen: after tall Markdown blocks (tables get their height a frame
after they are mounted) and across a terminal resize, unless the user scrolled up to read."""

from __future__ import annotations

from pathlib import Path

from tui_support import async_test, make_app, screen_text, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.base import events as ev

HELLO = {"turns": [{"text": "Hello! What shall we work on?"}, {"text": "Second answer."}]}


def at_bottom(app) -> bool:
    conversation = app.conversation
    return conversation.scroll_y >= conversation.max_scroll_y - 1


@async_test
async def test_command_output_and_its_echo_are_on_screen(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "hello")
        await wait_for(pilot, lambda: not app.busy and "What shall we work on?" in screen_text(app))
        await type_and_send(pilot, app, "/help")
        await wait_for(pilot, lambda: "Ctrl+R" in screen_text(app))  # the key line, last of /help
        await pilot.pause(0.3)
        assert at_bottom(app)
        await type_and_send(pilot, app, "/context")
        await wait_for(pilot, lambda: "tool definitions" in screen_text(app))
        await pilot.pause(0.3)  # the table's height is known a frame after it is mounted
        screen = screen_text(app)
        assert "› /context" in screen, screen  # the echo of the command, not only its tail
        assert "system prompt" in screen and at_bottom(app), screen


@async_test
async def test_resize_keeps_the_latest_turn_on_screen(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(120, 45)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        for i in range(60):
            app.queue.append(ev.ErrorEvent(f"older line {i}"))
        await type_and_send(pilot, app, "hello")
        await wait_for(pilot, lambda: not app.busy and "What shall we work on?" in screen_text(app))
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.4)
        screen = screen_text(app)
        assert "What shall we work on?" in screen and "older line 0" not in screen, screen
        assert app.conversation.following  # a resize is not the user scrolling away
        await type_and_send(pilot, app, "again")
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause(0.3)
        assert "Second answer." in screen_text(app)
        await pilot.resize_terminal(100, 30)
        await pilot.pause(0.4)
        assert "Second answer." in screen_text(app) and at_bottom(app)


@async_test
async def test_folded_blocks_stay_readable_above_the_newest(factory, git_repo: Path, tmp_path: Path) -> None:
    """Issue 32, round 3: only the newest MAX_BLOCKS blocks are widgets; the older ones are lines drawn as they
    looked (coder/tui/history.py), so scrolling up still reads them, a reader scrolled up is not moved as blocks
    fold, and a selection over them copies their text."""
    from coder.tui.transcript import MAX_BLOCKS

    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        app.queue.append(ev.UserMessage("look at every step"))
        for i in range(MAX_BLOCKS + 40):
            app.queue.append(ev.ToolCallRequested(f"t{i}", "bash", {"command": f"echo step{i}"}))
            app.queue.append(ev.ToolCallFinished(f"t{i}", "bash", {}, "ok", False, [], 0.1))
            await app.feed.drain()
            await pilot.pause()  # laid out: a block is drawn into the history as it was on screen
        await wait_for(pilot, lambda: f"echo step{MAX_BLOCKS + 39}" in screen_text(app))
        assert app.state.folded >= 40 and len(app.conversation.blocks) <= MAX_BLOCKS
        conversation = app.conversation
        conversation.scroll_home(animate=False)
        await wait_for(pilot, lambda: conversation.scroll_y == 0)
        await pilot.pause(0.1)
        top = screen_text(app)
        assert "look at every step" in top and "echo step0" in top and "echo step1" in top
        app.queue.append(ev.ToolCallRequested("more", "bash", {"command": "echo more"}))
        app.queue.append(ev.ToolCallFinished("more", "bash", {}, "ok", False, [], 0.1))
        await app.feed.drain()
        await pilot.pause(0.2)
        # folding one more moved nothing (the status bar below counts it)
        assert conversation.scroll_y == 0 and screen_text(app).splitlines()[:20] == top.splitlines()[:20]
        history = conversation.history
        await pilot.mouse_down(history, offset=(0, 0))
        await pilot.mouse_up(history, offset=(30, 3))
        copied = app.screen.get_selected_text() or ""
        assert "look at every step" in copied and "echo step0" in copied
