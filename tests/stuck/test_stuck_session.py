"""Scripted models that loop, through the real `coder run` (real bash in the sandbox, the real edit tool, a temp
git repository): each way of being stuck is nudged twice and then stopped with exit reason `stuck`; polling
until a server answers and re-running a failing test after each edit are not. The interactive mode warns and
goes on, and a resumed session sees the nudges the model saw."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from coder.base import events as ev
from coder.base.resources import data_dir
from coder.context.base import PassthroughContext, Pinned
from coder.engine.history import rebuild
from coder.engine.session import Session
from coder.engine.session_parts import Limits, SessionParts, no_questions
from coder.models.scripted import ScriptedProvider
from coder.policy.base import ModePolicy
from coder.tools.base import ToolContext, ToolContract
from coder.tools.edit_tool import EditTool

REPO = Path(__file__).resolve().parents[2]
CONTRACT = ToolContract.load(data_dir("tools") / "str_replace_based_edit_tool.json")


def run(repo: Path, tmp: Path, turns: list[dict[str, Any]], *flags: str) -> tuple[int, list[dict[str, Any]]]:
    script = tmp / "script.json"
    script.write_text(json.dumps({"turns": turns}))
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "coder", "run", "--output-format", "stream-json",
                           "--permission-mode", "auto", "--no-checkpoints", "--model", f"scripted:{script}",
                           *flags, "work"], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert events and events[-1]["type"] == "result", done.stderr
    return done.returncode, events


def stuck(events: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(e["pattern"], e["action"], e["step"]) for e in events if e["type"] == "stuck"]


def bash(command: str, text: str = "") -> dict[str, Any]:
    return {"text": text, "tool_calls": [{"name": "bash", "input": {"command": command}}]}


def edit(**args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "str_replace_based_edit_tool", "input": args}]}


def test_same_command_same_result_is_stopped(git_repo: Path, tmp_path: Path) -> None:
    code, events = run(git_repo, tmp_path, [{**bash("git status --short"), "repeat": True, "when": "."}],
                       "--max-turns", "30")
    assert stuck(events) == [("repeat", "nudge", 3), ("repeat", "nudge", 5), ("repeat", "stop", 7)]
    result = events[-1]
    assert code == 1 and result["exit_reason"] == "stuck" and result["turns"] == 7
    assert "ran 7 times with the same result" in result["error"]
    nudge = next(e for e in events if e["type"] == "stuck")
    assert nudge["note"].startswith("[Note from coder: you may be stuck: `bash: git status --short` ran 3 times")
    assert nudge["tool_id"] == "toolu_0003_0"


def test_failing_edits_with_the_same_error_are_stopped(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "app.py").write_text("def greet(name):\n    return 'hello ' + name\n")
    turns = [edit(command="str_replace", path="app.py", old_str=f"return 'hi' + name  # try {n}",
                  new_str="return f'Hello, {name}!'") for n in range(12)]
    code, events = run(git_repo, tmp_path, turns)
    assert stuck(events) == [("same_error", "nudge", 4), ("same_error", "nudge", 6), ("same_error", "stop", 8)]
    assert code == 1 and events[-1]["exit_reason"] == "stuck"


def test_ping_pong_between_two_versions_is_stopped(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "app.py").write_text("LIMIT = 10\n")
    a = edit(command="str_replace", path="app.py", old_str="LIMIT = 10", new_str="LIMIT = 20")
    b = edit(command="str_replace", path="app.py", old_str="LIMIT = 20", new_str="LIMIT = 10")
    code, events = run(git_repo, tmp_path, [a, b] * 8)
    assert stuck(events) == [("ping_pong", "nudge", 6), ("ping_pong", "nudge", 8), ("ping_pong", "stop", 10)]
    assert code == 1 and (git_repo / "app.py").read_text() == "LIMIT = 10\n"


def test_same_text_and_long_stretch_without_progress(git_repo: Path, tmp_path: Path) -> None:
    """Issue 32: repetition with no new information is stopped; calls that bring something new are not, however
    many (the distinct `echo` calls were stopped after 50 steps before). Ten commands in turn (too far apart for
    `repeat`), their outputs all seen before from the eleventh step on, the same sentence every time: the same
    message is stopped; with a new sentence every time, the long stretch without anything new is."""
    cycle = [f"echo round-{k}" for k in range(10)]
    turns = [bash(cycle[n % 10], "Let me think about this once more.") for n in range(60)]
    code, events = run(git_repo, tmp_path, turns, "--max-turns", "60")
    assert stuck(events) == [("same_text", "nudge", 13), ("same_text", "nudge", 15), ("same_text", "stop", 17)]
    turns = [bash(cycle[n % 10], f"Thinking, round {n}.") for n in range(80)]
    code, events = run(git_repo, tmp_path, turns, "--max-turns", "80")
    assert stuck(events) == [("no_progress", "nudge", 40), ("no_progress", "nudge", 50),
                             ("no_progress", "stop", 60)]  # 30, 40 and 50 steps after the tenth
    assert code == 1 and events[-1]["exit_reason"] == "stuck"


def test_distinct_calls_and_reading_a_file_by_ranges_are_never_stopped(git_repo: Path, tmp_path: Path) -> None:
    """The issue's two false stops: a bash-only agent reading a long file with `sed -n` ranges and `grep`, the
    same sentence each time, and 300 distinct `echo` calls. Both make progress every step: nothing fires."""
    (git_repo / "big.py").write_text("".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(700)))
    turns = []
    for n in range(0, 2100, 30):
        turns.append(bash(f"sed -n '{n + 1},{n + 30}p' big.py", "Let me keep reading the file."))
        turns.append(bash(f"grep -n 'def f{n // 3}(' big.py", "Let me keep reading the file."))
    turns.append({"text": "Read it all."})
    code, events = run(git_repo, tmp_path, turns, "--max-turns", "200")
    assert code == 0 and stuck(events) == [] and events[-1]["final_text"] == "Read it all."
    turns = [bash(f"echo step {n}", "Next step.") for n in range(300)] + [{"text": "Done stepping."}]
    code, events = run(git_repo, tmp_path, turns, "--max-turns", "400")
    assert code == 0 and stuck(events) == [] and events[-1]["final_text"] == "Done stepping."


def test_polling_a_server_until_it_answers_is_left_alone(git_repo: Path, tmp_path: Path) -> None:
    poll = ("sleep 1; python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:8765/')"
            ".status, 'SERVER-UP-7')\" 2>/dev/null || echo POLL-WAITING-7")
    turns = [bash("(sleep 4; python3 -m http.server 8765 --bind 127.0.0.1) > server.log 2>&1 &"), bash(poll),
             {"text": "the script ran out"},
             {"when": "SERVER-UP-7", "text": "The server answers."},
             {"when": "POLL-WAITING-7", "repeat": True, **bash(poll)}]
    code, events = run(git_repo, tmp_path, turns, "--max-turns", "40")
    polls = [e for e in events if e["type"] == "tool_call_finished" and "POLL-WAITING-7" in e["output"]]
    assert len(polls) >= 2, "the server came up too fast to show polling"
    assert code == 0 and events[-1]["final_text"] == "The server answers." and stuck(events) == []


def test_same_failing_test_after_each_edit_is_left_alone(git_repo: Path, tmp_path: Path) -> None:
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    test = "python3 -c 'import calc; assert calc.add(2, 2) == 4, \"add is wrong\"'"
    turns = []
    for n in range(8):
        turns += [bash(test, "Running the test."),
                  edit(command="insert", path="calc.py", insert_line=0, insert_text=f"# attempt {n}\n")]
    turns.append({"text": "Still failing; here is what I found."})
    code, events = run(git_repo, tmp_path, turns)
    failing = [e for e in events if e["type"] == "tool_call_finished" and "add is wrong" in e["output"]]
    assert len(failing) == 8 and stuck(events) == [] and code == 0


def test_interactive_sessions_warn_and_go_on_and_resume_sees_the_nudges(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    view = {"text": "Looking again.", "tool_calls": [
        {"name": "str_replace_based_edit_tool", "input": {"command": "view", "path": "a.txt"}}]}
    seen: list[ev.Event] = []
    ctx = ToolContext(tmp_path, tmp_path, "s1", threading.Event(), tmp_path / "state")
    parts = SessionParts("s1", ScriptedProvider({"turns": [view] * 9 + [{"text": "done"}]}),
                         {"str_replace_based_edit_tool": EditTool(CONTRACT)}, ModePolicy("auto"),
                         PassthroughContext(), ctx, "system prompt", Pinned(), Limits(), seen.append, no_questions)
    session = Session(parts)  # no guard given: the default one, which warns and never stops
    outcome = session.send("look")
    assert outcome.reason == "done"
    marks = [(e.pattern, e.action, e.step) for e in seen if isinstance(e, ev.StuckEvent)]
    assert marks == [("repeat", "nudge", 3), ("repeat", "nudge", 5), ("repeat", "warn", 7), ("repeat", "warn", 9)]
    third = session.history[6].content[0]  # user, then (assistant, results) per step: step 3's result
    assert "alpha" in third.content and "[Note from coder: you may be stuck" in third.content
    restored = rebuild(e for e in seen if e.persist)
    assert [m.to_dict() for m in restored.history] == [m.to_dict() for m in session.history]
