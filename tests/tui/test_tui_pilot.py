"""Pilot tests of the Textual app's main flows against a real session (scripted provider, real store and git)."""

from __future__ import annotations

from pathlib import Path

from tui_support import answer, async_test, type_and_send, wait_armed, wait_for  # type: ignore[import-not-found]
from tui_support import conversation_text as texts  # type: ignore[import-not-found]
from tui_support import make_app as _make_app  # type: ignore[import-not-found]

from coder.frontend.history import InputHistory
from coder.tui.blocks import ToolBlock, UserBlock
from coder.tui.prompts import PermissionPrompt

WRITE_SCRIPT = {"turns": [
    {"text": "I will **write** the file.", "tool_calls": [{"name": "write_file",
                                                          "input": {"path": "hello.txt", "content": "hi\n"}}]},
    {"text": "Done: `hello.txt` written."},
]}


def make_app(factory, git_repo: Path, tmp_path: Path, script=WRITE_SCRIPT, **kw):
    return _make_app(factory, git_repo, tmp_path, script, **kw)


@async_test
async def test_send_stream_approve_and_see_diff(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "write hello")
        await wait_armed(pilot, app)
        assert app.busy and app.query(UserBlock)
        await answer(pilot, app, "once")
        await wait_for(pilot, lambda: not app.busy)
        assert (git_repo / "hello.txt").read_text() == "hi\n"
        block = app.query_one(ToolBlock)
        assert "write_file" in str(block.title) and "✓ wrote hello.txt" in str(block.title)
        assert not block.collapsed  # a short diff opens by itself
        body = texts(app)
        assert "I will **write** the file." in body and "Done: `hello.txt` written." in body
        assert "checkpoint" in body
        status = str(app.query_one("#status").render())
        assert "mode ask" in status and "scripted" in status and "idle" in status
    assert app.history.entries[-1] == "write hello"
    assert InputHistory(tmp_path / "hist.jsonl").entries == ["write hello"]


@async_test
async def test_deny_keeps_the_file_away_and_tells_the_model(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "write hello")
        await answer(pilot, app, "deny")
        await wait_for(pilot, lambda: not app.busy)
        assert not (git_repo / "hello.txt").exists()
        block = app.query_one(ToolBlock)
        assert "✗ Permission denied" in str(block.title)
        opened = f.opened[0]
        denied = [r.data for r in opened.store.events(opened.session.id) if r.type == "tool_call_denied"]
        assert denied and denied[0]["by"] == "user"


@async_test
async def test_always_allow_remembers_the_rule(factory, git_repo: Path, tmp_path: Path) -> None:
    script = {"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "a"}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "b.txt", "content": "b"}}]},
        {"text": "both written"}]}
    app, f = make_app(factory, git_repo, tmp_path, script=script)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "write two")
        await answer(pilot, app, "always")
        await wait_for(pilot, lambda: not app.busy)
        assert (git_repo / "a.txt").exists() and (git_repo / "b.txt").exists()
        assert len(app.query(PermissionPrompt)) == 0  # asked once only


@async_test
async def test_interrupt_mid_stream_with_escape(factory, git_repo: Path, tmp_path: Path) -> None:
    script = {"turns": [{"text": "word " * 3000}, {"text": "second answer"}]}
    app, f = make_app(factory, git_repo, tmp_path, script=script, chunk_delay=1.0)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "talk")
        await wait_for(pilot, lambda: app.transcript.stream is not None)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy)
        assert "turn stopped: interrupted" in texts(app)
        session = f.opened[0].session
        assert session.history[-1].role == "assistant"
        assert len(session.history[-1].text()) < len("word " * 3000)
        await type_and_send(pilot, app, "again")  # the session goes on
        await wait_for(pilot, lambda: "second answer" in texts(app))


@async_test
async def test_ctrl_c_twice_on_idle_quits(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await pilot.press("ctrl+c")
        await pilot.pause(0.1)
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause(0.2)
    assert app.return_code in (0, None)
    assert f.opened[0].store is not None


@async_test
async def test_ctrl_c_during_a_permission_prompt_interrupts_and_queued_message_waits(factory, git_repo: Path,
                                                                                    tmp_path: Path) -> None:
    script = {"turns": [
        {"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "a"}}]},
        {"text": "answer to the queued message"}]}
    app, f = make_app(factory, git_repo, tmp_path, script=script)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "write a")
        await wait_for(pilot, lambda: app.questions.prompt is not None)
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.busy)
        assert not (git_repo / "a.txt").exists() and app.questions.prompt is None
        assert "turn stopped: interrupted" in texts(app)
        assert app.is_running  # an interrupt is not a quit
        app.state.busy = True  # a turn is running: what is typed now waits for it
        await type_and_send(pilot, app, "next question")
        assert app.state.queued == ["next question"] and "queued" in texts(app)
        app.control.turn_ended("done")
        await wait_for(pilot, lambda: "answer to the queued message" in texts(app))


@async_test
async def test_a_session_that_cannot_open_says_why(git_repo: Path, tmp_path: Path) -> None:
    from tui_support import app_args  # type: ignore[import-not-found]

    from coder.base.errors import ModelConfigError
    from coder.tui.app import CoderApp
    from coder.tui.widgets import PromptInput

    def opener(on_event, ask, override):
        raise ModelConfigError("ANTHROPIC_API_KEY is not set")

    app = CoderApp(app_args(git_repo), opener=opener, history=InputHistory(tmp_path / "h.jsonl"))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: "could not start a session" in texts(app))
        assert "ANTHROPIC_API_KEY is not set" in texts(app)
        await type_and_send(pilot, app, "hello")
        assert "No session is open: fix the problem above" in texts(app)
        box = app.query_one(PromptInput)
        assert box.text == "hello"  # kept for when a session opens, not cleared
        box.set_text("")
        await type_and_send(pilot, app, "/quit")
        await pilot.pause(0.2)
    assert not app.is_running


@async_test
async def test_typing_before_the_session_is_open_is_sent_once_it_is(factory, git_repo: Path, tmp_path: Path) -> None:
    import threading

    app, f = make_app(factory, git_repo, tmp_path, script={"turns": [{"text": "answered after opening"}]})
    fast = app.control.opener
    typed = threading.Event()  # the session opens only once the message is typed (no race with a slow machine)
    app.control.opener = lambda on_event, ask, override: (typed.wait(30), fast(on_event, ask, override))[1]
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, app, "early question")
        assert app.opened is None and "queued (sent when the session is open)" in texts(app)
        typed.set()
        await wait_for(pilot, lambda: "answered after opening" in texts(app))
