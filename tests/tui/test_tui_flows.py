"""Pilot tests: undo, slash commands, resume, completion, history, mode cycling, bounded memory, layout."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_support import (  # type: ignore[import-not-found]
    answer,
    async_test,
    conversation_text,
    make_app,
    screen_text,
    type_and_send,
    wait_for,
)

from coder.base import events as ev
from coder.tui import app as app_module
from coder.tui.blocks import DiffView, ToolBlock
from coder.tui.widgets import CompletionList, PromptInput

EDIT = {"turns": [
    {"text": "Changing the greeting.", "tool_calls": [{"name": "write_file", "input": {
        "path": "src/app.py", "content": "def greet(name):\n    return 'hi ' + name\n"}}]},
    {"text": "Changed."},
    {"text": "Second answer."},
]}
ORIGINAL = "def greet(name):\n    return 'hello ' + name\n"


@async_test
async def test_undo_restores_the_file_and_commands_render(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, EDIT, mode="auto")
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "greet with hi")
        await wait_for(pilot, lambda: not app.busy and "Changed." in conversation_text(app))
        assert "'hi '" in (git_repo / "src" / "app.py").read_text()
        await type_and_send(pilot, app, "/diff")
        await wait_for(pilot, lambda: len(app.query(DiffView)) >= 2)
        await type_and_send(pilot, app, "/undo")
        await wait_for(pilot, lambda: "/undo yes" in conversation_text(app))
        assert "'hi '" in (git_repo / "src" / "app.py").read_text()  # it says first what it will touch
        await type_and_send(pilot, app, "/undo yes")
        await wait_for(pilot, lambda: "Undone your last message" in conversation_text(app))
        assert (git_repo / "src" / "app.py").read_text() == ORIGINAL
        await type_and_send(pilot, app, "/help")
        await wait_for(pilot, lambda: "/rewind" in conversation_text(app))
        await type_and_send(pilot, app, "/mode plan")
        await wait_for(pilot, lambda: "mode plan" in str(app.query_one("#status").render()))
        await type_and_send(pilot, app, "/nonsense")
        await wait_for(pilot, lambda: "Unknown command `/nonsense`" in conversation_text(app))


@async_test
async def test_resume_shows_the_earlier_conversation_and_goes_on(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, EDIT, mode="ask")
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "greet with hi")
        await answer(pilot, app, "once")
        await wait_for(pilot, lambda: not app.busy and "Changed." in conversation_text(app))
        first_id = app.session.id
        await type_and_send(pilot, app, "/clear")
        await wait_for(pilot, lambda: app.opened is not None and app.session.id != first_id)
        assert "greet with hi" not in conversation_text(app)
        await type_and_send(pilot, app, f"/resume {first_id}")
        await wait_for(pilot, lambda: app.opened is not None and app.session.id == first_id)
        await wait_for(pilot, lambda: "resumed: earlier conversation above" in conversation_text(app))
        text = conversation_text(app)
        assert "greet with hi" in text and "Changed." in text and "write_file: src/app.py" in text
        assert app.questions.prompt is None  # a stored permission request is history, not a question
        await type_and_send(pilot, app, "and now?")
        await wait_for(pilot, lambda: "Second answer." in conversation_text(app))
        assert [m.role for m in app.session.history][:4] == ["user", "assistant", "user", "assistant"]


@async_test
async def test_completion_history_and_mode_keys(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, EDIT)
    app.history.add("an older prompt")
    app.history.add("the newest prompt")
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        box = app.query_one(PromptInput)
        box.focus()
        await pilot.press("/", "u", "n")
        completion = app.query_one(CompletionList)
        assert completion.is_open and completion.current() == "/undo"
        await pilot.press("tab")
        assert box.text == "/undo " and not completion.is_open
        box.set_text("")
        await pilot.press("@", "s", "r")
        await wait_for(pilot, lambda: completion.is_open and completion.current() == "@src/app.py")
        await pilot.press("enter")
        assert box.text == "@src/app.py " and not app.busy  # Enter accepted the completion, sent nothing
        box.set_text("")
        await pilot.press("up")
        assert box.text == "the newest prompt"
        await pilot.press("up")
        assert box.text == "an older prompt"
        await pilot.press("down", "down")
        assert box.text == ""
        await pilot.press("ctrl+r")
        await pilot.press(*"older")
        await pilot.press("enter")
        await wait_for(pilot, lambda: box.text == "an older prompt")
        box.set_text("first line")
        await pilot.press("ctrl+j")
        await pilot.press("x")
        assert box.text == "first line\nx"
        assert app.session.parts.policy.mode == "ask"
        await pilot.press("shift+tab")
        assert app.session.parts.policy.mode == "auto-edit"
        assert app.session.switches.before == "ask", "through the engine: the model is told with the next message"
        await wait_for(pilot, lambda: "mode auto-edit" in str(app.query_one("#status").render()))


@pytest.mark.slow  # benchmark-like: 2,400 tool calls through the app
@async_test
async def test_thousands_of_events_stay_bounded(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, EDIT)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        for i in range(1000):
            app.queue.append(ev.ToolCallRequested(f"t{i}", "bash", {"command": f"echo {i}"}))
            app.queue.append(ev.ToolCallFinished(f"t{i}", "bash", {"command": f"echo {i}"}, "x\n" * 5000, False))
            if i % 500 == 0:
                await pilot.pause(0.05)
        await wait_for(pilot, lambda: not app.queue, timeout=60)
        await pilot.pause(0.1)
        children = app.conversation.blocks
        assert len(children) <= app_module.MAX_BLOCKS
        assert app.state.folded >= 1000 - app_module.MAX_BLOCKS
        assert len(app.transcript.tool_blocks) == 0
        last = [c for c in children if isinstance(c, ToolBlock)][-1]
        assert "echo 999" in str(last.title)
        assert f"{app.state.folded} folded" in str(app.query_one("#status").render())  # short at 100 columns
        assert "echo 999" in screen_text(app)  # still following the newest block after a big burst
        import gc

        from textual.widget import Widget

        def alive() -> int:
            gc.collect()
            return sum(1 for o in gc.get_objects() if isinstance(o, Widget))

        async def answers_and_calls(first: int, last: int) -> None:
            for i in range(first, last):
                app.queue.append(ev.AssistantMessage({"role": "assistant", "content": [
                    {"type": "text", "text": f"pass {i}"}]}, "tool_use"))
                app.queue.append(ev.ToolCallRequested(f"t{i}", "bash", {"command": f"echo {i}"}))
                app.queue.append(ev.ToolCallFinished(f"t{i}", "bash", {"command": f"echo {i}"}, "y\n" * 300, False))
            await wait_for(pilot, lambda: not app.queue, timeout=60)
            await pilot.pause(0.2)

        # The baseline is taken after two bursts of the same mix: Textual's NodeList keeps the list of children
        # it last filtered for display (`displayed`, refreshed only when next asked), which can still name the
        # blocks a batch replaced: once, not per burst (about 190 widgets here against 60 mounted blocks)
        await answers_and_calls(1000, 1400)
        await answers_and_calls(1400, 1800)
        assert len(app.conversation.blocks) <= app_module.MAX_BLOCKS
        before = alive()
        await answers_and_calls(1800, 2200)  # more answers and tool calls: the number of live widgets must not grow
        assert len(app.conversation.blocks) <= app_module.MAX_BLOCKS
        assert alive() <= before + 10
        assert "echo 2199" in screen_text(app)
        # the folded blocks are still there to scroll to, as lines (coder/tui/history.py), not as widgets
        history = ["".join(segment.text for segment in line) for line in app.conversation.history.lines]
        assert any("echo 1799" in line for line in history) and any("pass 1799" in line for line in history)
        assert not any("echo 2199" in line for line in history)  # the newest are blocks
        # a burst drawn in one drain mounts its newest blocks only: the others are said to be in Ctrl+T
        assert any("not drawn here (Ctrl+T shows them)" in line for line in history)


@async_test
async def test_wide_diff_long_line_and_resize_keep_the_layout(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, EDIT)
    wide = "".join(f"-{'old ' * 50}{i}\n+{'new ' * 50}{i}\n" for i in range(5))
    diff = f"--- a/wide.py\n+++ b/wide.py\n@@ -1,5 +1,5 @@\n{wide}"
    async with app.run_test(size=(80, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        app.queue.append(ev.AssistantMessage({"role": "assistant", "content": [
            {"type": "text", "text": "x" * 5000}]}, "end_turn"))
        app.queue.append(ev.ToolCallRequested("w1", "write_file", {"path": "wide.py", "content": ""}))
        app.queue.append(ev.ToolCallFinished("w1", "write_file", {"path": "wide.py", "content": ""}, "wrote wide.py",
                                             False, ["wide.py"], 0.0, {"diff": diff}))
        await wait_for(pilot, lambda: len(app.query(DiffView)) == 1)
        await pilot.pause(0.2)
        assert app.conversation.size.width <= 80 and app.conversation.virtual_size.width <= 80
        view = app.query_one(DiffView)
        assert view.size.width <= 80 and view.virtual_size.width >= 200  # scrolls sideways instead of wrapping
        text = screen_text(app)
        assert all(len(line) <= 80 for line in text.splitlines())
        await pilot.resize_terminal(50, 20)
        await pilot.pause(0.2)
        text = screen_text(app)
        assert all(len(line) <= 50 for line in text.splitlines())
        assert "idle" in text  # the status bar survived the resize


@async_test
async def test_scrolling_up_stops_following_until_back_at_the_bottom(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, EDIT)
    async with app.run_test(size=(80, 20)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        for i in range(40):
            app.queue.append(ev.ErrorEvent(f"line {i}"))
        await wait_for(pilot, lambda: "line 39" in screen_text(app))
        conversation = app.conversation
        conversation.scroll_home(animate=False, immediate=True)
        await pilot.pause(0.1)
        assert not conversation.following
        app.queue.append(ev.ErrorEvent("while reading above"))
        await pilot.pause(0.3)
        assert conversation.scroll_y == 0 and "while reading above" not in screen_text(app)
        conversation.scroll_end(animate=False, immediate=True)
        await pilot.pause(0.1)
        assert conversation.following
        app.queue.append(ev.ErrorEvent("followed again"))
        await wait_for(pilot, lambda: "followed again" in screen_text(app))
