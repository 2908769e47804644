"""Issue 24: `/review` and `/commit` showed "idle" for 5-10 s; each review stage now shows as it ends, in the app
(Pilot) and in the plain REPL, with the real review pipeline on a real repository."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest
from tui_support import (  # type: ignore[import-not-found]
    app_args,
    async_test,
    conversation_text,
    make_app,
    screen_text,
    type_and_send,
    wait_for,
)

HELLO = {"turns": [{"text": "Hello."}]}
STAGES = ["apply", "parse", "hygiene"]


@async_test
async def test_review_stages_show_as_they_end(factory, git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        app.opened.config.review.stages = STAGES
        await type_and_send(pilot, app, "/review")
        await wait_for(pilot, lambda: "review: " in conversation_text(app) and not app.state.info.state.startswith("/"))
        text = conversation_text(app)
        for name in STAGES:
            assert f"{name}: pass" in text, text
        assert text.index("✓ apply: pass") < text.index("✓ hygiene: pass") < text.index("review: pass")


def test_repl_prints_the_review_stages(factory, git_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from coder.repl.repl import Repl

    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'hi ' + name\n")
    f = factory(HELLO)
    opener = f

    def opened_with_stages(*args, **kwargs):
        opened = opener(*args, **kwargs)
        opened.config.review.stages = STAGES
        return opened

    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO("/review\n/quit\n"))
    monkeypatch.setattr(sys, "stdout", out)
    assert Repl(app_args(git_repo, plain=True), opener=opened_with_stages, out=out).run() == 0
    text = out.getvalue()
    assert "review apply: pass" in text and "review hygiene: pass" in text


@pytest.mark.slow  # benchmark-like: a 320-call session
@async_test
async def test_a_resumed_long_session_counts_every_token_as_cost_does(factory, git_repo: Path,
                                                                     tmp_path: Path) -> None:
    """Token figures counted different things: after resuming a long session the status bar summed only the
    usage of the replayed tail (the newest 600 events); now it is the whole session, the total `/cost` shows."""
    from coder.commands.slash import run_slash

    turns = []
    for part in range(4):
        turns += [{"tool_calls": [{"name": "bash", "input": {"command": f"echo {part}-{i}"}}]} for i in range(80)]
        turns.append({"text": f"part {part} done"})
    opened = factory({"turns": turns}, mode="auto")(lambda e: None, None, {})
    for part in range(4):
        opened.session.send(f"part {part}")
    sid = opened.session.id
    assert sum(1 for _ in opened.store.events(sid)) > 1200
    opened.store.close()
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, f"/resume {sid}")
        await wait_for(pilot, lambda: app.opened is not None and app.session.id == sid and not app.queue, timeout=30)
        await pilot.pause(0.5)
        cost = run_slash(app.opened, "/cost").text
        total = int(cost.rsplit("|", 2)[-2].strip().replace(",", ""))
        assert total > 0 and app.state.info.tokens == total


@pytest.mark.slow  # benchmark-like: a 320-call session in the app
@async_test
async def test_ctrl_t_shows_the_whole_session_folded_blocks_included(factory, git_repo: Path,
                                                                    tmp_path: Path) -> None:
    """Blocks beyond the newest 300 (60 now) left the conversation's widgets; Ctrl+T shows the whole session."""
    from coder.tui.screens import TranscriptScreen, TranscriptView
    from coder.tui.widgets import PromptInput

    turns = []
    for part in range(4):
        turns += [{"tool_calls": [{"name": "bash", "input": {"command": f"echo call{part}-{i}"}}]}
                  for i in range(80)] + [{"text": f"part {part} done"}]
    app, f = make_app(factory, git_repo, tmp_path, {"turns": turns}, mode="auto")
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        for part in range(4):
            await type_and_send(pilot, app, f"part {part}")
            await wait_for(pilot, lambda: not app.busy, timeout=60)
        assert app.state.folded > 0 and "echo call0-0" not in conversation_text(app)  # folded
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: isinstance(app.screen, TranscriptScreen) and app.screen.complete)
        view = app.screen.query_one(TranscriptView)
        await wait_for(pilot, lambda: view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y)  # the end
        text = "\n".join(view.texts)
        assert text.index("› part 0") < text.index("✓ bash: echo call0-0") < text.index("› part 3")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, TranscriptScreen))
        assert isinstance(app.focused, PromptInput)


def unscrolled(screen: str) -> list[str]:
    """The screen's lines without their last columns (the border and a scroll bar's thumb)."""
    return [line[:-4] for line in screen.splitlines()]


@async_test
async def test_ctrl_t_on_2000_calls_shows_the_last_entries_and_scrolls_to_the_first(factory, git_repo: Path,
                                                                                    tmp_path: Path) -> None:
    """Issue 32, round 3: Ctrl+T on a session of 2,000 tool calls opens at its end and Home reaches its start;
    the view draws the lines on screen only. The calls are written to the session's store as the engine writes
    them (running 2,000 model turns is the benchmark's work, benchmarks/tui.py)."""
    from coder.base import events as ev
    from coder.tui.screens import TranscriptScreen, TranscriptView

    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        store, sid = app.opened.store, app.opened.session.id
        for event in [ev.UserMessage("the first message")] + [e for i in range(2000) for e in (
                ev.ToolCallRequested(f"t{i}", "bash", {"command": f"echo step{i}"}),
                ev.ToolCallFinished(f"t{i}", "bash", {"command": f"echo step{i}"}, f"step{i}\n" * 3, False))]:
            store.append(sid, event)
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: isinstance(app.screen, TranscriptScreen) and bool(app.screen.lines))
        view = app.screen.query_one(TranscriptView)
        await wait_for(pilot, lambda: view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y)
        await pilot.pause(0.1)
        end = screen_text(app)
        assert "✓ bash: echo step1999" in end and "✓ bash: echo step1998" in end and "the first message" not in end
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        await wait_for(pilot, lambda: screen.complete)  # the end came first; the whole session then
        await pilot.pause(0.1)
        # the reader was left at the end (the text on screen the same; the scroll bar's thumb is smaller)
        assert view.scroll_y == view.max_scroll_y and unscrolled(screen_text(app)) == unscrolled(end)
        await pilot.press("home")
        await wait_for(pilot, lambda: view.scroll_y == 0)
        await pilot.pause(0.1)
        start = screen_text(app)
        assert "the first message" in start and "✓ bash: echo step0" in start and "step1999" not in start
        await pilot.press("end")
        await wait_for(pilot, lambda: view.scroll_y == view.max_scroll_y)
        await pilot.pause(0.1)
        assert "echo step1999" in screen_text(app)


@async_test
async def test_commit_findings_are_drawn_after_the_stages(factory, git_repo: Path, tmp_path: Path) -> None:
    """Issue 32: a failing `/commit` printed its findings as raw Markdown (`**high**`), before the stages and the
    verdict they came from."""
    (git_repo / "src" / "app.py").write_text("def greet(name):\n    return 'hi ' +\n")  # does not parse
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        app.opened.config.review.stages = STAGES
        await type_and_send(pilot, app, "/commit")
        await wait_for(pilot, lambda: "/commit --force" in conversation_text(app), timeout=60)
        text = conversation_text(app)
        assert text.index("parse: fail") < text.index("review: fail") < text.index("src/app.py")
        block = [b for b in app.query("CommandBlock") if "/commit --force" in getattr(b, "source", "")][-1]
        assert block.has_class("error") and "**" not in " ".join(str(w.render()) for w in block.query("*"))
        # the gate's sentence ends before the next one (issue 47: "after 2 fix round(s) Fix the findings")
        assert re.search(r"[.:] Fix the findings, or `/commit --force`\.", block.source), block.source


@async_test
async def test_ctrl_t_renders_the_words_as_the_conversation_does(factory, git_repo: Path, tmp_path: Path) -> None:
    """Issue 47: Ctrl+T showed the transcript's Markdown source (`## You`, `**bold**`, fences around outputs)."""
    from coder.tui.screens import TranscriptScreen, TranscriptView

    call = {"name": "bash", "input": {"command": "echo one; echo two"}}
    script = {"turns": [{"text": "Looking.", "tool_calls": [call]},
                        {"text": "## Result\n\nThe **parser** is fixed:\n\n- first point\n- second point\n"}]}
    app, _ = make_app(factory, git_repo, tmp_path, script, mode="auto")
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "fix *the* parser")
        await wait_for(pilot, lambda: not app.busy, timeout=60)
        await pilot.press("ctrl+t")
        await wait_for(pilot, lambda: isinstance(app.screen, TranscriptScreen) and app.screen.complete)
        view = app.screen.query_one(TranscriptView)
        await pilot.pause(0.1)
        shown = screen_text(app)
        assert "› fix *the* parser" in shown  # the person's words as typed
        assert "The parser is fixed:" in shown and "**" not in shown and "## " not in shown and "```" not in shown
        assert "• first point" in shown and "✓ bash: echo one; echo two" in shown
        assert "    ran: echo one; echo two" in shown  # the call's output under it (the echo tool's)
        assert any(s.style is not None and s.style.bold for line in view.lines for s in line if "parser" in s.text)
        await pilot.press("escape")


@async_test
async def test_ctrl_t_draws_no_scrollbar_for_lines_that_fit() -> None:
    """The trial's stray `▋` under Ctrl+T's last line: the view was 8 cells wider than its widest line, so lines
    that fit still drew a horizontal scrollbar. A line wider than the view scrolls sideways, as before."""
    from rich.segment import Segment
    from textual.app import App, ComposeResult

    from coder.tui.screens import TranscriptView

    class One(App[None]):
        def compose(self) -> ComposeResult:
            yield TranscriptView()

    app = One()
    async with app.run_test(size=(80, 20)) as pilot:
        view = app.query_one(TranscriptView)
        for width, scrolls in ((76, False), (80, False), (81, True), (120, True)):
            view.show([[Segment("x" * width)]] * 5)
            await pilot.pause(0.05)
            assert view.show_horizontal_scrollbar is scrolls, (width, view.virtual_size)
