"""Issue 32's smaller items in the app (Pilot), the REPL and a real terminal (tmux): `/model` newest first with the
current one marked, `/resume` with nothing to resume, a question seen when the conversation is scrolled up, an
interrupted command marked the same in the view and in Ctrl+T, Ctrl+U and Esc with a burst typed behind them,
and the REPL's numbered lists."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from types import SimpleNamespace

from terminal_support import Tmux, coder_command  # type: ignore[import-not-found]
from tui_support import (  # type: ignore[import-not-found]
    async_test,
    conversation_text,
    make_app,
    screen_text,
    type_and_send,
    wait_for,
)

from coder.commands.model import known_models, model_choices
from coder.commands.transcript import transcript_markdown
from coder.tui.screens import Picker
from coder.tui.widgets import PromptInput

HELLO = {"turns": [{"text": "Hello.", "repeat": True}]}


def test_models_are_listed_newest_first_with_the_current_one_marked() -> None:
    models = known_models()
    anthropic = [m for m in models if m.startswith("anthropic:")]
    assert anthropic.index("anthropic:claude-sonnet-4-6") < anthropic.index("anthropic:claude-3-haiku")
    choices = model_choices("anthropic:claude-sonnet-4-6-20250929")  # a dated id of a family the table knows
    assert choices[0] == ("anthropic:claude-sonnet-4-6-20250929",
                          "● anthropic:claude-sonnet-4-6-20250929  (current)")
    assert "anthropic:claude-sonnet-4-6" not in [v for v, _ in choices]  # listed once, as the current one


@async_test
async def test_model_picker_starts_on_the_current_model(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "/model")
        await wait_for(pilot, lambda: isinstance(app.screen, Picker))
        assert "(current)" in app.screen.matches[0][1] and "● scripted" in screen_text(app)


@async_test
async def test_resume_with_nothing_to_resume_says_so(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "/resume")
        await wait_for(pilot, lambda: "No other session to resume" in conversation_text(app))
        assert not isinstance(app.screen, Picker)


@async_test
async def test_a_question_is_seen_when_the_conversation_is_scrolled_up(factory, git_repo: Path,
                                                                       tmp_path: Path) -> None:
    script = {"turns": [{"text": "\n\n".join(f"Paragraph {i}." for i in range(60)),
                         "tool_calls": [{"name": "bash", "input": {"command": "make deploy"}}]}, {"text": "ok"}]}
    app, _ = make_app(factory, git_repo, tmp_path, script, chunk_delay=0.3)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "deploy")
        # the answer has begun (still streaming, or, on a loaded machine, already whole: the feed may take its three
        # chunks in one drain, so the stream itself need never be seen)
        await wait_for(pilot, lambda: "Paragraph 0." in conversation_text(app))
        await pilot.press("pageup", "pageup")  # reading further up
        await wait_for(pilot, lambda: app.questions.prompt is not None)
        await pilot.pause(0.3)
        assert "Allow bash: make deploy?" in screen_text(app) and "1. Yes, this once" in screen_text(app)


def test_an_interrupted_command_is_marked_failed_in_the_transcript_too() -> None:
    row = SimpleNamespace(created=0.0, id="s1", model="m", status="done", workspace="/w")
    finished = {"type": "tool_call_finished", "tool": "bash", "input": {"command": "sleep 100"}, "is_error": False,
                "output": "[the command was interrupted by the user]", "duration_s": 2.0,
                "data": {"exit_code": 130, "interrupted": True}}
    assert "**✗ interrupted bash: sleep 100**" in transcript_markdown(row, [finished])
    ok = dict(finished, output="fine", data={"exit_code": 0})
    assert "**✓ bash: sleep 100**" in transcript_markdown(row, [ok])


@async_test
async def test_esc_twice_clears_a_draft_and_up_brings_it_back(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        box = app.query_one(PromptInput)
        await pilot.press(*"fix it")
        await pilot.press("escape")
        assert box.text == "fix it"  # once: only a word about it
        await pilot.press("escape")
        assert box.text == ""
        await pilot.press("up")
        assert box.text == "fix it"


def test_a_burst_after_ctrl_u_runs_the_command_in_tmux(git_repo: Path, tmp_path: Path) -> None:
    """Ctrl+U, `/help` and Enter read at once: the input's editing keys acted after the burst (they were bindings),
    and the old draft went to the model with `/help` glued to it."""
    script = tmp_path / "s.json"
    script.write_text(json.dumps(HELLO))
    tmux = Tmux(tmp_path, coder_command(script, "--permission-mode", "auto"), git_repo)
    try:
        tmux.wait("idle │")
        tmux.type("some draft")
        tmux.wait("some draft")  # the draft is in the input before the burst comes
        tmux.send("C-u", "/help", "Enter")  # one send: the terminal delivers the keys together
        screen = tmux.wait("leave (the session is saved)")  # /help's list ran (its end: it is taller than the screen)
        assert "some draft" not in screen and "Hello." not in screen  # nothing went to the model
    finally:
        tmux.close()


def test_repl_offers_a_numbered_list_for_resume(git_repo: Path, tmp_path: Path) -> None:
    """`/resume` in `--plain` on a terminal: the sessions numbered, a number resumes one (it printed ids to copy)."""
    script = tmp_path / "first.json"
    script.write_text(json.dumps({"turns": [{"text": "First answer.", "repeat": True}]}))
    tmux = Tmux(tmp_path, coder_command(script, "--plain"), git_repo)
    try:
        tmux.wait("ask>")
        tmux.type("write the release notes")
        tmux.send("Enter")
        tmux.wait("First answer.")
        tmux.wait("ctx ")
        time.sleep(0.5)
        tmux.type("/clear")
        time.sleep(0.3)
        tmux.send("Enter")
        tmux.wait("Started a fresh session")
        time.sleep(0.5)
        tmux.type("/resume")
        time.sleep(0.3)
        tmux.send("Enter")
        screen = tmux.wait("number (Enter cancels) >")
        assert "Resume a session:" in screen and "1. " in screen and "write the release notes" in screen
        tmux.type("1")
        tmux.send("Enter")
        tmux.wait("resumed: earlier conversation above")
        tmux.wait("ask>")
        time.sleep(0.3)
        tmux.type("/quit")
        tmux.send("Enter")
        tmux.wait("EXIT=0")
    finally:
        tmux.close()


def test_repl_prints_a_failing_commands_markdown() -> None:
    from coder.repl.printer import Printer

    out = io.StringIO()
    Printer(out, color=False).markdown("- **high** `src/app.py:2` does not parse", "red")
    assert "**" not in out.getvalue() and "high" in out.getvalue()
