"""Issue 19 in the interactive frontends, with the real `open_session` and built-in tools (scripted model): the
plan-approve-continue flow and the task list in the Textual app (Pilot) and in the plain REPL (a real
pseudo-terminal through pexpect)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pexpect
from tui_support import app_args, async_test, screen_text, type_and_send, wait_for

REPO = Path(__file__).resolve().parents[2]
PLAN = "# Notes plan\n1. Create notes.txt\n2. Check it exists"
TODOS = [{"id": "1", "text": "Create notes.txt", "status": "in_progress"},
         {"id": "2", "text": "Check notes.txt", "status": "pending"}]
DONE = [dict(t, status="done") for t in TODOS]


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"text": f"using {name}", "tool_calls": [{"name": name, "input": args}]}


def write_script(tmp_path: Path, *, revise: bool = False) -> Path:
    turns = [call("exit_plan", {"plan": "# First try\nchange everything"})] if revise else []
    turns += [call("exit_plan", {"plan": PLAN}), call("todo", {"todos": TODOS}),
              call("str_replace_based_edit_tool", {"command": "create", "path": "notes.txt", "file_text": "hi\n"}),
              call("todo", {"todos": DONE}), {"text": "All done."}]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return path


def make(git_repo: Path, tmp_path: Path, script: Path) -> Any:
    from coder.frontend.history import InputHistory
    from coder.tui.app import CoderApp

    args = app_args(git_repo, model=f"scripted:{script}", permission_mode="plan", trust=None)
    return CoderApp(args, history=InputHistory(tmp_path / "hist.jsonl"))


@async_test
async def test_app_plan_is_approved_then_the_task_list_stays_visible(git_repo: Path, tmp_path: Path) -> None:
    from coder.tui.work_view import PlanPrompt, PlanScreen, TodoPanel

    app = make(git_repo, tmp_path, write_script(tmp_path))
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        assert not app.query_one(TodoPanel).display  # no list yet: no panel
        await type_and_send(pilot, app, "add notes")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen))
        await wait_for(pilot, lambda: "Keep planning" in screen_text(app))
        shown = screen_text(app)
        assert "Create notes.txt" in shown and "go on in auto-edit" in shown and "Keep planning" in shown
        assert not (git_repo / "notes.txt").exists()
        plan = app.screen
        await wait_for(pilot, lambda: plan.query_one(PlanPrompt).armed)
        await pilot.press("1", "enter")  # auto-edit is lasting: its confirmation, read, then Down and Enter
        await wait_for(pilot, lambda: "↓ then Enter saves it" in screen_text(app))
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: not app.busy and (git_repo / "notes.txt").exists())
        plan._check()  # its timer's tick, come late (a loaded machine) after the screen has gone: nothing happens
        await pilot.pause(0.2)
        assert app.session.parts.policy.mode == "auto-edit"
        panel = app.query_one(TodoPanel)
        assert panel.display and [i["status"] for i in panel.items] == ["done", "done"]
        text = screen_text(app)
        assert "Tasks 2/2" in text and "✓ Check notes.txt" in text and "mode auto-edit" in text
        first = app.session.id
        await type_and_send(pilot, app, "/clear")  # a fresh session has no list: the panel goes
        await wait_for(pilot, lambda: app.session is not None and app.session.id != first and not panel.display)
        await type_and_send(pilot, app, f"/resume {first}")  # resumed: the replayed list comes back
        await wait_for(pilot, lambda: app.session is not None and app.session.id == first and panel.display)
        assert [i["status"] for i in panel.items] == ["done", "done"]


@async_test
async def test_app_keep_planning_sends_the_feedback_and_esc_stops(git_repo: Path, tmp_path: Path) -> None:
    from textual.widgets import Input

    from coder.base import events as ev
    from coder.tui.work_view import PlanPrompt, PlanScreen

    app = make(git_repo, tmp_path, write_script(tmp_path, revise=True))
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "add notes")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen))
        await wait_for(pilot, lambda: app.screen.query_one(PlanPrompt).armed)
        await pilot.press("3")  # keep planning (once no key followed the digit for a moment): say what to change
        await wait_for(pilot, lambda: app.screen.query_one(Input).has_focus)
        assert isinstance(app.screen, PlanScreen)
        for key in "only notes":
            await pilot.press("space" if key == " " else key)
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen) and "Notes plan" in app.screen.plan)
        await pilot.press("escape")  # the second plan: Esc interrupts the turn, the screen goes away
        await wait_for(pilot, lambda: not app.busy and not isinstance(app.screen, PlanScreen))
        assert app.session.parts.policy.mode == "plan" and not (git_repo / "notes.txt").exists()
        rows = [e for e in app.opened.store.events(app.session.id) if e.type == "tool_call_finished"]
        assert "only notes" in rows[0].data["output"]
        decisions = [e.data["outcome"] for e in app.opened.store.events(app.session.id)
                     if e.type == ev.PlanDecision.type]
        assert decisions == ["revise", "rejected"]


def test_repl_plan_approval_and_task_list_in_a_terminal(git_repo: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm"}
    child = pexpect.spawn(sys.executable, ["-m", "coder", "--plain", "--no-sandbox", "--permission-mode", "plan",
                                           "--model", f"scripted:{script}"],
                          cwd=str(git_repo), env=env, timeout=60, encoding="utf-8", dimensions=(40, 140))
    try:
        child.expect("plan>")
        child.send("add notes\r")
        child.expect("Esc: deny and stop the turn > ")
        assert "Create notes.txt" in child.before and "go on in auto-edit" in child.before
        time.sleep(0.8)  # the question takes keys once the keyboard was quiet for a moment
        child.send("1\r")  # auto-edit is lasting: its confirmation, read, then Down and Enter
        child.expect("Read it first")
        time.sleep(1.3)
        child.send("\x1b[B")
        child.expect("Enter saves it")
        child.send("\r")
        child.expect("plan approved by the user; mode auto-edit")
        child.expect("Tasks 0/2")
        child.expect("Tasks 2/2")
        child.expect("auto-edit>")
        child.send("/todo\r")
        child.expect(r"\[x\] Check notes.txt")
        child.expect("auto-edit>")
        child.send("/quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert (git_repo / "notes.txt").read_text() == "hi\n"


@async_test
async def test_undo_takes_the_task_list_back_too(git_repo: Path, tmp_path: Path) -> None:
    """Issue 32: after `/undo` the panel still showed the undone turn's items as done."""
    from coder.tui.work_view import TodoPanel

    script = tmp_path / "undo.json"
    script.write_text(json.dumps({"turns": [
        call("todo", {"todos": TODOS}), {"text": "Planned."},
        call("str_replace_based_edit_tool", {"command": "create", "path": "notes.txt", "file_text": "hi\n"}),
        call("todo", {"todos": DONE}), {"text": "All done."}]}))
    app = make(git_repo, tmp_path, script)
    app.state.args.permission_mode = "auto"
    async with app.run_test(size=(110, 40)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        panel = app.query_one(TodoPanel)
        await type_and_send(pilot, app, "plan it")
        await wait_for(pilot, lambda: not app.busy and panel.display)
        await type_and_send(pilot, app, "do it")
        await wait_for(pilot, lambda: not app.busy and [i["status"] for i in panel.items] == ["done", "done"])
        await type_and_send(pilot, app, "/undo yes")
        await wait_for(pilot, lambda: [i["status"] for i in panel.items] == ["in_progress", "pending"], timeout=30)
        assert not (git_repo / "notes.txt").exists()
        assert app.session.parts.pinned.todos == TODOS  # what the model reads next
