"""Fixes from the frontend QA pass, each pinned by the test that would have caught it: /clear keeps the model and
the mode, /doctor reports the session's model, session ids are never cut, failed commands read as failed, an
edit shows its diff once, review/commit lines are separate, compact tables, Ctrl+R then Esc, Esc on a permission
prompt stops the turn, and /compact's wording."""

from __future__ import annotations

import io
import json
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

from coder.base import events as ev
from coder.commands.slash import run_slash
from coder.tui.blocks import ToolBlock
from coder.tui.widgets import CompletionList, PromptInput

WRITE = {"turns": [
    {"text": "Writing it.", "tool_calls": [{"name": "write_file", "input": {"path": "out.txt", "content": "one\n"}}]},
    {"text": "Written."},
    {"text": "Third."},
]}
HELLO = {"turns": [{"text": "Hello."}, {"text": "Hello again."}, {"text": "And again."}]}


def other_model(tmp_path: Path) -> str:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"turns": [{"text": "from the other model"}]}))
    return f"scripted:{path}"


@async_test
async def test_clear_keeps_the_model_and_the_mode(factory, git_repo: Path, tmp_path: Path) -> None:
    spec = other_model(tmp_path)
    app, f = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, f"/model {spec}")
        await wait_for(pilot, lambda: app.session.parts.provider.spec == spec)
        await type_and_send(pilot, app, "/mode auto-edit")
        await wait_for(pilot, lambda: "mode auto-edit" in str(app.query_one("#status").render()))
        first = app.session.id
        await type_and_send(pilot, app, "/clear")
        await wait_for(pilot, lambda: app.opened is not None and app.session.id != first)
        assert app.session.parts.provider.spec == spec and app.session.parts.policy.mode == "auto-edit"
        # the status bar shortens a long model name from the left (its end tells models apart)
        await wait_for(pilot, lambda: spec[-10:] in str(app.query_one("#status").render()))
        await type_and_send(pilot, app, "hi")
        await wait_for(pilot, lambda: "from the other model" in conversation_text(app))


def test_repl_clear_keeps_the_model_and_the_mode(factory, git_repo: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from coder.repl.repl import Repl

    spec = other_model(tmp_path)
    f = factory(HELLO)
    out = io.StringIO()
    lines = [f"/model {spec}", "/mode plan", "/clear", "/mode", "hi", "/quit"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("".join(line + "\n" for line in lines)))
    monkeypatch.setattr(sys, "stdout", out)
    assert Repl(app_args(git_repo, plain=True), opener=f, out=out).run() == 0
    assert f.overrides[-1]["model"] == spec and f.overrides[-1]["permission_mode"] == "plan"
    text = out.getvalue()
    assert "Mode: plan" in text and "from the other model" in text


def test_doctor_reports_the_session_model_and_an_unset_key_neutrally(factory, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    opened = factory(HELLO)(lambda e: None, None, {})
    text = run_slash(opened, "/doctor").text
    assert "none usable" not in text
    assert "- ✓ **model** `scripted:<dict>` (this session" in text
    assert "- · **ANTHROPIC_API_KEY** not set" in text and "✓ **ANTHROPIC_API_KEY**" not in text


def test_compact_on_a_short_history_says_how_big_the_context_is(factory) -> None:
    opened = factory(HELLO)(lambda e: None, None, {})
    opened.session.send("hello")
    text = run_slash(opened, "/compact").text
    assert text.startswith("Nothing needed compacting yet") and "200,000 tokens" in text
    assert "context manager of this build" not in text


@async_test
async def test_session_ids_are_never_cut_at_80_columns(factory, git_repo: Path, tmp_path: Path) -> None:
    for _ in range(3):  # older sessions with long titles and a long model name
        opened = factory(HELLO)(lambda e: None, None, {})
        opened.session.send("a rather long first prompt " * 5)
        opened.store.close()
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(80, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "/sessions")
        await wait_for(pilot, lambda: "/resume ID" in screen_text(app))
        await pilot.pause(0.2)
        screen = screen_text(app)
        ids = [row.id for row in app.opened.store.sessions(20, str(git_repo), app.opened.session.id)]
        assert len(ids) == 4
        for sid in ids:
            assert sid in screen, screen  # whole, on one line: it can be copied into /resume
        assert all(len(line) <= 80 for line in screen.splitlines())


@async_test
async def test_failed_commands_read_as_failed_and_edits_show_the_diff_once(factory, git_repo: Path,
                                                                           tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    snippet = ("Edited a.py.\nSnippet of the result (cat -n):\n     1\tx = 2\n     2\ty = 3\n")
    diff = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    async with app.run_test(size=(100, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        calls = [("c1", "nosuchcmd", "bash: nosuchcmd: command not found\n[exit code: 127]", {"exit_code": 127}),
                 ("c2", "sleep 100", "[the command was interrupted by the user; it was interrupted (SIGINT)]",
                  {"exit_code": 130}),
                 ("c3", "ls", "a\nb\nc\nd", {"exit_code": 0})]
        for cid, command, output, data in calls:
            app.queue.append(ev.ToolCallRequested(cid, "bash", {"command": command}))
            app.queue.append(ev.ToolCallFinished(cid, "bash", {"command": command}, output, False, [], 0.0, data))
        app.queue.append(ev.ToolCallRequested("e1", "str_replace_based_edit_tool",
                                              {"command": "str_replace", "path": "a.py"}))
        app.queue.append(ev.ToolCallFinished("e1", "str_replace_based_edit_tool",
                                             {"command": "str_replace", "path": "a.py"}, snippet, False,
                                             ["a.py"], 0.0, {"diff": diff}))
        await wait_for(pilot, lambda: len(app.query(ToolBlock)) == 4 and not app.queue)
        await pilot.pause(0.3)
        blocks = {b.call_id: b for b in app.query(ToolBlock)}
        assert "✗ exit 127 · bash: nosuchcmd" in str(blocks["c1"].title) and blocks["c1"].has_class("error")
        assert "✗ interrupted" in str(blocks["c2"].title) and blocks["c2"].has_class("error")
        assert "✓ a … 3 more lines" in str(blocks["c3"].title) and not blocks["c3"].has_class("error")
        screen = screen_text(app)
        assert "+x = 2" in screen and "Snippet of the result" not in screen, screen
        assert "tool output (4 lines)" in screen  # the snippet is one click away, not gone


@async_test
async def test_commit_lines_are_separate_and_tables_compact(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, WRITE, mode="auto")
    async with app.run_test(size=(100, 50)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "write it")
        await wait_for(pilot, lambda: not app.busy and "Written." in conversation_text(app))
        await type_and_send(pilot, app, "/commit add out.txt")
        await wait_for(pilot, lambda: "committed " in screen_text(app))
        await pilot.pause(0.3)
        lines = screen_text(app).splitlines()
        assert sum("committed " in line for line in lines) == 1, lines  # once, not twice
        assert not any("Review verdict" in line and "committed" in line for line in lines)
        review = [line for line in lines if "review: " in line]
        assert len(review) == 1 and "committed" not in review[0]
        await type_and_send(pilot, app, "/cost")
        await wait_for(pilot, lambda: "cache write" in screen_text(app))
        await pilot.pause(0.2)
        assert not any(ch in screen_text(app) for ch in "├┼┤")  # no rule between the rows of a table


@async_test
async def test_ctrl_r_then_escape_gives_the_prompt_back(factory, git_repo: Path, tmp_path: Path) -> None:
    from coder.tui.screens import HistorySearch

    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    app.history.add("/help")
    app.history.add("an older prompt")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        box = app.query_one(PromptInput)
        box.focus()
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, HistorySearch))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HistorySearch))
        await pilot.pause(0.1)
        assert app.focused is box
        await pilot.press(*"hello", "enter")  # typed keys, not set_text: they must reach the prompt
        await wait_for(pilot, lambda: "Hello." in conversation_text(app))
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: isinstance(app.screen, HistorySearch))
        await pilot.press(*"/he", "enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, HistorySearch) and box.text == "/help")
        await pilot.pause(0.1)
        assert not app.query_one(CompletionList).is_open and not box.completion_open
        await pilot.press("enter")
        await wait_for(pilot, lambda: "/rewind" in conversation_text(app))


@async_test
async def test_escape_on_a_permission_prompt_denies_and_stops_the_turn(factory, git_repo: Path,
                                                                      tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, WRITE)
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "write it")
        await wait_for(pilot, lambda: app.questions.prompt is not None)
        await wait_for(pilot, lambda: "Esc: deny and stop the turn" in screen_text(app))  # the key hint
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy)
        assert not (git_repo / "out.txt").exists() and app.questions.prompt is None
        assert "turn stopped: interrupted" in conversation_text(app)
        assert "Written." not in conversation_text(app)  # the model was not asked to go on
