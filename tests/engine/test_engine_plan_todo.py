"""Issue 19, plans and the task list through the real session (`open_session`, scripted model, real store, real
git repository): the headless plan run and its JSON, `--plan-file`, the approve / keep-planning answers, and the
task list and the approved plan across a compaction and a resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from coder.base import events as ev
from coder.commands.slash import run_slash
from coder.engine.builder import SessionOptions, open_session
from coder.engine.work import PlanVerdict
from coder.tools.base import parse_call
from coder.tools.params import ToolInputError
from coder.tools.registry import builtin_tools

REPO = Path(__file__).resolve().parents[2]
PLAN = "# Plan\n1. Create notes.txt with one line\n2. Check it exists"
TODOS = [{"id": "1", "text": "Create notes.txt", "status": "in_progress"},
         {"id": "2", "text": "Check it exists", "status": "pending"}]
HANDOFF = "## Intent\nKeep going with the notes."


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "coder", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def script(tmp_path: Path, turns: list[dict[str, Any]], name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"turns": turns + [{"when": "about to be compacted", "repeat": True,
                                                   "text": HANDOFF}]}))
    return path


def call(name: str, args: dict[str, Any], text: str = "") -> dict[str, Any]:
    return {"text": text or f"using {name}", "tool_calls": [{"name": name, "input": args}]}


def stored(session_id: str) -> list[dict[str, Any]]:
    from coder.base import paths
    from coder.store.db import SessionStore

    store = SessionStore(paths.sessions_db())
    try:
        return [e.to_dict() for e in store.events(session_id)]
    finally:
        store.close()


def test_headless_plan_mode_ends_with_the_plan_as_its_result(git_repo: Path, tmp_path: Path) -> None:
    s = script(tmp_path, [call("exit_plan", {"plan": PLAN}), {"text": "The plan is ready for review."}])
    out = run_cli("run", "--model", f"scripted:{s}", "--permission-mode", "plan", "--no-sandbox",
                  "--output-format", "json", "plan the notes", cwd=git_repo)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["plan"] == PLAN and result["final_text"] == PLAN  # not the model's closing remark
    kinds = [e["type"] for e in stored(result["session_id"])]
    assert kinds.index("plan_proposed") < kinds.index("plan_decision")
    decision = next(e for e in stored(result["session_id"]) if e["type"] == "plan_decision")
    assert decision["outcome"] == "headless" and decision["mode"] == "plan"
    finished = next(e for e in stored(result["session_id"]) if e["type"] == "tool_call_finished")
    assert "End your turn now" in finished["output"]  # the model is told to stop, nobody can approve here
    text = run_cli("run", "--model", f"scripted:{s}", "--permission-mode", "plan", "--no-sandbox", "plan it",
                   cwd=git_repo)
    assert text.returncode == 0 and text.stdout.strip() == PLAN  # the text format prints the plan alone


def test_a_run_without_a_plan_reports_plan_null(git_repo: Path, tmp_path: Path) -> None:
    s = script(tmp_path, [{"text": "Nothing to plan."}])
    out = run_cli("run", "--model", f"scripted:{s}", "--no-sandbox", "--output-format", "json", "hi", cwd=git_repo)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["plan"] is None and result["final_text"] == "Nothing to plan."


def test_plan_file_starts_the_work_from_the_approved_plan_and_resume_pins_it(git_repo: Path, tmp_path: Path) -> None:
    plan_file = tmp_path / "PLAN.md"
    plan_file.write_text(PLAN + "\n")
    s = script(tmp_path, [call("todo", {"todos": TODOS}),
                          call("str_replace_based_edit_tool", {"command": "create", "path": "notes.txt",
                                                               "file_text": "one line\n"}), {"text": "Done."}])
    out = run_cli("run", "--model", f"scripted:{s}", "--permission-mode", "auto-edit", "--no-sandbox",
                  "--plan-file", str(plan_file), "--output-format", "stream-json", "keep it short", cwd=git_repo)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.strip().splitlines()]
    assert [line["items"] for line in lines if line["type"] == "todo"] == [TODOS]  # stream-json shows the list
    result = lines[-1]
    assert result["type"] == "result" and result["plan"] is None and result["final_text"] == "Done."
    assert (git_repo / "notes.txt").read_text() == "one line\n"
    events = stored(result["session_id"])
    first = next(e for e in events if e["type"] == "user_message")["text"]
    assert PLAN in first and "keep it short" in first and "approved" in first
    decision = next(e for e in events if e["type"] == "plan_decision")
    assert (decision["outcome"], decision["source"], decision["plan"]) == ("approved", "file", PLAN)
    opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{s}", resume=result["session_id"],
                                         no_sandbox=True), lambda e: None)
    try:
        assert opened.session.parts.pinned.plan == PLAN  # a resumed session pins the approved plan again
    finally:
        opened.session.close("done")
        opened.store.close()


def test_plan_file_refuses_plan_mode_and_an_empty_file(git_repo: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.md"
    empty.write_text("  \n")
    s = script(tmp_path, [{"text": "x"}])
    both = run_cli("run", "--model", f"scripted:{s}", "--permission-mode", "plan", "--plan-file", str(empty), "x",
                   cwd=git_repo)
    assert both.returncode == 2 and "plan again" in both.stderr and "Traceback" not in both.stderr
    blank = run_cli("run", "--model", f"scripted:{s}", "--plan-file", str(empty), "x", cwd=git_repo)
    assert blank.returncode == 2 and "is empty" in blank.stderr


def open_with(git_repo: Path, s: Path, answers: list[Any], events: list[ev.Event], mode: str = "plan",
              resume: str | None = None) -> Any:
    def ask(request: ev.PermissionRequest) -> Any:
        assert isinstance(request, ev.PlanProposed), request
        return answers.pop(0)

    return open_session(SessionOptions(cwd=git_repo, model=f"scripted:{s}", permission_mode=mode, resume=resume,
                                       no_sandbox=True), events.append, ask)


def test_keep_planning_with_feedback_then_approve_switches_the_mode(git_repo: Path, tmp_path: Path) -> None:
    s = script(tmp_path, [
        call("str_replace_based_edit_tool", {"command": "create", "path": "early.txt", "file_text": "x"}),
        call("exit_plan", {"plan": "# Plan v1\nedit everything"}),
        call("exit_plan", {"plan": PLAN}),
        call("str_replace_based_edit_tool", {"command": "create", "path": "notes.txt", "file_text": "one line\n"}),
        {"text": "Done."}])
    events: list[ev.Event] = []
    answers = [PlanVerdict("revise", "plan", "only touch notes.txt"), PlanVerdict("approved", "auto-edit")]
    opened = open_with(git_repo, s, answers, events)
    try:
        opened.session.send("add notes")
    finally:
        opened.session.close("done")
        opened.store.close()
    results = [e for e in events if isinstance(e, ev.ToolCallFinished)]
    assert results[0].is_error and not (git_repo / "early.txt").exists()  # plan mode: read only until approved
    assert "only touch notes.txt" in results[1].output and "keep planning" in results[1].output
    assert "auto-edit mode" in results[2].output
    assert (git_repo / "notes.txt").read_text() == "one line\n"  # approved: auto-edit writes without asking
    assert opened.session.parts.policy.mode == "auto-edit" and opened.session.parts.pinned.plan == PLAN
    decisions = [(e.outcome, e.mode) for e in events if isinstance(e, ev.PlanDecision)]
    assert decisions == [("revise", "plan"), ("approved", "auto-edit")]


def test_a_frontend_that_answers_like_a_permission_prompt_approves_in_ask_mode(git_repo: Path, tmp_path: Path) -> None:
    from coder.policy.base import PermissionAnswer

    s = script(tmp_path, [call("exit_plan", {"plan": PLAN}), {"text": "ok"}])
    events: list[ev.Event] = []
    opened = open_with(git_repo, s, [PermissionAnswer(True)], events)
    try:
        opened.session.send("plan")
        assert opened.session.parts.policy.mode == "ask"  # the careful mode, never auto
    finally:
        opened.session.close("done")
        opened.store.close()


def test_exit_plan_outside_plan_mode_asks_nobody(git_repo: Path, tmp_path: Path) -> None:
    s = script(tmp_path, [call("tool_search", {"query": "select:exit_plan"}), call("exit_plan", {"plan": PLAN}),
                          {"text": "ok"}])  # outside plan mode the model loads it first (it is deferred)
    events: list[ev.Event] = []
    opened = open_with(git_repo, s, [], events, mode="ask")  # `ask` would fail the test if called
    try:
        opened.session.send("go")
    finally:
        opened.session.close("done")
        opened.store.close()
    finished = next(e for e in events if isinstance(e, ev.ToolCallFinished) and e.tool == "exit_plan")
    assert "not in plan mode" in finished.output and opened.session.parts.pinned.plan == ""


def test_todo_list_and_plan_survive_a_compaction_and_a_resume(git_repo: Path, tmp_path: Path) -> None:
    done = [dict(t, status="done") if t["id"] == "1" else dict(t, status="in_progress") for t in TODOS]
    s = script(tmp_path, [call("exit_plan", {"plan": PLAN}), call("todo", {"todos": TODOS}), {"text": "first"},
                          {"text": "second"}, {"text": "third"}])
    # after a compaction the view holds fewer turns than the history, so the resumed session answers by matching
    later = script(tmp_path, [dict(call("todo", {"todos": done}), when="^finish$"),
                              {"when": "Task list updated", "text": "after"}], "later.json")
    events: list[ev.Event] = []
    opened = open_with(git_repo, s, [PlanVerdict("approved", "ask")], events)
    try:
        for text in ("start", "more", "again"):
            opened.session.send(text)
        todo_events = [e for e in events if isinstance(e, ev.TodoUpdated)]
        assert [i["status"] for i in todo_events[-1].items] == ["in_progress", "pending"]
        assert "Check it exists" in run_slash(opened, "/todo").text
        result = run_slash(opened, "/compact")
        assert not result.error and "Nothing needed" not in result.text, result.text
        handoff = next(e for e in events if isinstance(e, ev.CompactionEvent) and e.kind == "summary").data["text"]
        assert "## Task list (pinned" in handoff and "- [~] Create notes.txt (in progress)" in handoff
        assert "## Current plan (pinned)" in handoff and "Check it exists" in handoff
        sid = opened.session.id
    finally:
        opened.session.close("done")
        opened.store.close()
    again: list[ev.Event] = []
    resumed = open_with(git_repo, later, [], again, mode="ask", resume=sid)
    try:
        pinned = resumed.session.parts.pinned
        assert pinned.plan == PLAN and [i["text"] for i in pinned.todos] == ["Create notes.txt", "Check it exists"]
        assert "Create notes.txt" in run_slash(resumed, "/todo").text
        resumed.session.send("finish")  # the model updates the list after the resume
        assert [i["status"] for i in pinned.todos] == ["done", "in_progress"]
        assert "1/2 done" in run_slash(resumed, "/todo").text
    finally:
        resumed.session.close("done")
        resumed.store.close()


@pytest.mark.parametrize("bad, problem", [
    ([{"id": "1", "text": "a", "status": "later"}], "status"),
    ([{"id": "1", "text": "a", "status": "done"}, {"id": "1", "text": "b", "status": "done"}], "unique"),
    ([{"id": "1", "text": " ", "status": "done"}], "no text"),
])
def test_a_bad_todo_list_is_an_error_the_model_reads(bad: list[dict[str, Any]], problem: str) -> None:
    todo = builtin_tools(["todo"])["todo"]
    with pytest.raises(ToolInputError, match=problem):
        parse_call(todo, {"todos": bad})
    # what other agents' lists say (Claude Code's `completed`, an item without an id) is taken as meant
    kept = parse_call(todo, {"todos": [{"text": "x", "status": "Completed"}, {"id": "b", "text": "y",
                                                                             "status": "in progress"}]}).params
    assert [(i.id, i.status) for i in kept.todos] == [("1", "done"), ("b", "in_progress")]


def test_the_list_the_plan_and_a_loaded_skill_are_never_masked_as_stale() -> None:
    from coder.tools.registry import describe

    todo = describe("todo", {"todos": TODOS})
    assert not todo.maskable and todo.title == "todo: 0/2 done, now: Create notes.txt"
    assert not describe("exit_plan", {"plan": PLAN}).maskable
    assert not describe("skill", {"name": "pdf"}).maskable
    assert describe("skill", {"name": "pdf", "file": "reference.md"}).maskable  # a file it read: like any read
