"""Evidence end to end through the real `coder run` (the real sandbox, real test runners, a temp git repository,
scripted model turns): each state reached and said in the text, JSON and stream-json outputs; a claim the
evidence does not support flagged; the nudge sent once per turn and never twice, only where the model could act
on it; `run` mode running the reviewer's tests itself; the commit's trailer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from coder.base import events as ev
from coder.base.event_versions import event_from_dict
from coder.base.events import EVENT_TYPES
from coder.engine.builder import SessionOptions, open_session
from coder.engine.history import rebuild

REPO = Path(__file__).resolve().parents[2]
FIX = {"text": "The sign is wrong.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
    "command": "str_replace", "path": "calc.py", "old_str": "a - b", "new_str": "a + b"}}]}
BREAK = {"text": "Changing it.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
    "command": "str_replace", "path": "calc.py", "old_str": "a - b", "new_str": "a * b"}}]}


def bash(command: str, text: str = "Running it.") -> dict[str, Any]:
    return {"text": text, "tool_calls": [{"name": "bash", "input": {"command": command}}]}


def calc_repo(git_repo: Path) -> Path:
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (git_repo / "tests").mkdir()
    (git_repo / "tests" / "test_calc.py").write_text(
        "import unittest\n\nfrom calc import add\n\n\nclass TestAdd(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")
    commit(git_repo)
    return git_repo


def commit(repo: Path) -> None:
    for args in (["add", "-A"], ["commit", "-qm", "work"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def coder(repo: Path, tmp: Path, turns: list[dict[str, Any]], *flags: str, fmt: str = "stream-json",
          env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    script = tmp / f"script{len(list(tmp.glob('script*.json')))}.json"
    script.write_text(json.dumps({"turns": turns}))
    full = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "coder", "run", "--output-format", fmt, "--model",
                           f"scripted:{script}", *(flags or ("--permission-mode", "auto")), "fix add"], cwd=repo,
                          env=full, capture_output=True, text=True, timeout=300)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")] if fmt != "text" else []
    return done, events


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def test_verified_by_pytest_in_every_output(git_repo: Path, tmp_path: Path) -> None:
    repo = calc_repo(git_repo)
    turns = [FIX, bash("python -m pytest -q tests"), {"text": "Fixed; all tests pass."}]
    done, events = coder(repo, tmp_path, turns)
    assert done.returncode == 0, done.stderr
    evidence = of(events, "evidence")
    assert len(evidence) == 1 and evidence[0]["state"] == "verified" and not of(events, "verify_nudge")
    record = events[-1]["evidence"]
    assert record == evidence[0]["record"] and record["changed"] == ["calc.py"]
    assert record["runs"][0]["counts"] == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}
    assert record["claim"] == "Fixed; all tests pass." and not record["unsupported_claim"]
    assert [e["type"] for e in events[-4:]] == ["evidence", "turn_end", "session_end", "result"]
    subprocess.run(["git", "checkout", "-q", "calc.py"], cwd=repo, check=True)
    done, _ = coder(repo, tmp_path, turns, fmt="json")
    assert json.loads(done.stdout)["evidence"]["state"] == "verified"
    subprocess.run(["git", "checkout", "-q", "calc.py"], cwd=repo, check=True)
    done, _ = coder(repo, tmp_path, turns, fmt="text")
    assert done.stdout.strip() == "Fixed; all tests pass."  # stdout keeps the answer alone
    assert "coder: evidence: verified — `python -m pytest -q tests`: 1 passed" in done.stderr


def test_failed_then_told_once(git_repo: Path, tmp_path: Path) -> None:
    repo = calc_repo(git_repo)
    turns = [BREAK, bash("python -m pytest -q tests"), {"text": "All tests pass."},
             {"text": "They fail: add() multiplies now; I could not fix it in time."}]
    done, events = coder(repo, tmp_path, turns)
    nudges = of(events, "verify_nudge")
    assert len(nudges) == 1 and "the last run that covers it failed" in nudges[0]["text"]
    assert "1 failed" in nudges[0]["text"]
    record = events[-1]["evidence"]
    assert record["state"] == "failed" and record["nudged"] == "nudge" and not record["unsupported_claim"]
    assert done.returncode == 0 and events[-1]["final_text"].startswith("They fail")


def test_an_unsupported_claim_is_flagged_and_the_nudge_never_comes_twice(git_repo: Path, tmp_path: Path) -> None:
    repo = calc_repo(git_repo)
    turns = [FIX, {"text": "Fixed: all tests pass."}, {"text": "It works now."}, {"text": "A third ending."}]
    done, events = coder(repo, tmp_path, turns, fmt="text")
    assert "coder: evidence: unverified — no test ran. Unsupported claim: “It works now.”" in done.stderr
    subprocess.run(["git", "checkout", "-q", "calc.py"], cwd=repo, check=True)
    done, events = coder(repo, tmp_path, turns)
    assert [e["action"] for e in of(events, "verify_nudge")] == ["nudge"]  # the model ended twice: told once
    assert "no test ran" in of(events, "verify_nudge")[0]["text"]
    record = events[-1]["evidence"]
    assert record["state"] == "unverified" and record["unsupported_claim"] and record["claim"] == "It works now."
    assert events[-1]["turns"] == 3  # the fourth turn of the script was never asked for
    # a resumed session has the note where the model read it
    stored = [e for e in events if e["type"] in EVENT_TYPES and EVENT_TYPES[e["type"]].persist]
    restored = rebuild(event_from_dict(e) for e in stored)
    texts = [b.text for m in restored.history if m.role == "user" for b in m.content if hasattr(b, "text")]
    assert any(t.startswith("[coder: your turn is ending without proof") for t in texts)


def test_unittest_and_the_projects_own_command_in_the_sandbox(git_repo: Path, tmp_path: Path) -> None:
    repo = calc_repo(git_repo)
    done, events = coder(repo, tmp_path, [FIX, bash("python -m unittest discover -s tests"), {"text": "Ok."}])
    record = events[-1]["evidence"]
    assert record["state"] == "verified", done.stderr
    assert (record["runs"][0]["runner"], record["runs"][0]["counts"]["passed"]) == ("unittest", 1)
    subprocess.run(["git", "checkout", "-q", "calc.py"], cwd=repo, check=True)
    (repo / "check.sh").write_text("#!/bin/sh\nset -e\npython -m unittest discover -s tests 2>&1\n")
    (repo / "check.sh").chmod(0o755)
    (repo / "AGENTS.md").write_text("# calc\n\nTo test a change, run `./check.sh` from the top folder.\n")
    commit(repo)
    done, events = coder(repo, tmp_path, [FIX, bash("./check.sh"), {"text": "Ok."}])
    record = events[-1]["evidence"]
    assert record["state"] == "verified", done.stderr
    assert (record["runs"][0]["kind"], record["runs"][0]["why"]) == ("project", "the project's test command")


def test_node_test_runner_in_the_sandbox(git_repo: Path, tmp_path: Path) -> None:
    node = shutil.which("node")
    assert node, "node is not installed: `apt-get install nodejs`"
    (git_repo / "calc.js").write_text("exports.add = (a, b) => a - b;\n")
    (git_repo / "calc.test.js").write_text("const test = require('node:test');\nconst assert = require('node:assert');"
                                           "\nconst { add } = require('./calc');\n"
                                           "test('add', () => assert.strictEqual(add(2, 3), 5));\n")
    commit(git_repo)
    edit = {"text": "Fixing.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
        "command": "str_replace", "path": "calc.js", "old_str": "a - b", "new_str": "a + b"}}]}
    done, events = coder(git_repo, tmp_path, [edit, bash("node --test calc.test.js"), {"text": "Ok."}])
    record = events[-1]["evidence"]
    assert record["state"] == "verified", done.stderr + json.dumps(events[-6:])[:2000]
    assert record["runs"][0]["runner"] == "node --test" and record["runs"][0]["counts"]["passed"] == 1


def test_run_mode_runs_the_reviewers_tests(git_repo: Path, tmp_path: Path) -> None:
    repo = calc_repo(git_repo)
    env = {"CODER_VERIFY": "run"}
    done, events = coder(repo, tmp_path, [FIX, {"text": "Done."}, {"text": "unused"}], env=env)
    record = events[-1]["evidence"]
    assert record["state"] == "verified" and record["runs"][0]["by"] == "coder", done.stderr
    assert not of(events, "verify_nudge") and events[-1]["turns"] == 2  # passed: the model was not asked again
    subprocess.run(["git", "checkout", "-q", "calc.py"], cwd=repo, check=True)
    done, events = coder(repo, tmp_path, [BREAK, {"text": "Done."}, {"text": "The test fails; I stop here."}],
                         env=env)
    nudges = of(events, "verify_nudge")
    assert len(nudges) == 1 and nudges[0]["action"] == "run" and "FAIL" in nudges[0]["text"]
    assert events[-1]["evidence"]["state"] == "failed" and events[-1]["turns"] == 3


def test_no_nudge_where_the_model_cannot_run_a_command(git_repo: Path, tmp_path: Path) -> None:
    repo = calc_repo(git_repo)
    done, events = coder(repo, tmp_path, [FIX, {"text": "Changed."}, {"text": "unused"}],
                         "--permission-mode", "auto-edit")  # headless: a shell command would ask nobody
    assert not of(events, "verify_nudge") and events[-1]["evidence"]["state"] == "unverified", done.stderr


def test_the_commit_trailer(git_repo: Path, tmp_path: Path) -> None:
    repo = calc_repo(git_repo)
    done, _ = coder(repo, tmp_path, [FIX, bash("python -m pytest -q tests"), {"text": "Fixed."}], "--permission-mode",
                    "auto", "--commit", fmt="text")
    message = subprocess.run(["git", "log", "-1", "--format=%B"], cwd=repo, capture_output=True, text=True).stdout
    assert "Verified-by: python -m pytest -q tests: 1 passed" in message, done.stderr
    done, _ = coder(repo, tmp_path, [{"text": "Again.", "tool_calls": [{"name": "str_replace_based_edit_tool",
                                                                         "input": {"command": "str_replace",
                                                                                   "path": "calc.py",
                                                                                   "old_str": "a + b",
                                                                                   "new_str": "b + a"}}]},
                                     {"text": "Swapped."}, {"text": "Still swapped."}],
                    "--permission-mode", "auto", "--commit", fmt="text")
    message = subprocess.run(["git", "log", "-1", "--format=%B"], cwd=repo, capture_output=True, text=True).stdout
    assert "Evidence: unverified (no test ran)" in message, done.stderr


def test_the_nudge_is_a_step_of_the_stuck_detector(git_repo: Path, tmp_path: Path, isolated_home: Path) -> None:
    repo = calc_repo(git_repo)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [FIX, {"text": "Done."}, {"text": "Done."}]}))
    seen: list[ev.Event] = []
    opened = open_session(SessionOptions(cwd=repo, model=f"scripted:{script}", permission_mode="auto",
                                         checkpoints=False), seen.append)
    try:
        steps = []
        original = opened.session.stuck.after_step

        def counted(*args: Any) -> Any:
            steps.append(threading.current_thread().name)
            return original(*args)

        opened.session.stuck.after_step = counted  # type: ignore[method-assign]
        outcome = opened.session.send("fix add")
    finally:
        opened.session.close("done")
        opened.store.close()
    assert outcome.reason == "done" and outcome.evidence is not None and outcome.evidence["state"] == "unverified"
    assert len([e for e in seen if isinstance(e, ev.VerifyNudge)]) == 1
    assert len(steps) == 2  # the edit's step, and the nudge's


def test_off_and_what_a_repository_may_set(git_repo: Path, tmp_path: Path) -> None:
    """`off` sends no note and still ends with the record; a repository's config may lower the setting (to off)
    and never raise it (to run: coder running the tests itself)."""
    repo = calc_repo(git_repo)
    turns = [FIX, {"text": "Changed."}, {"text": "unused"}]
    done, events = coder(repo, tmp_path, turns, env={"CODER_VERIFY": "off"})
    assert not of(events, "verify_nudge") and events[-1]["turns"] == 2, done.stderr
    assert (events[-1]["evidence"]["state"], events[-1]["evidence"]["nudged"]) == ("unverified", "")
    (repo / ".coder").mkdir(exist_ok=True)
    (repo / ".coder" / "config.toml").write_text('[verify]\non_unverified = "run"\n')
    subprocess.run(["git", "checkout", "-q", "calc.py"], cwd=repo, check=True)
    done, events = coder(repo, tmp_path, turns)
    assert [e["action"] for e in of(events, "verify_nudge")] == ["nudge"], done.stderr  # not raised to run
    (repo / ".coder" / "config.toml").write_text('[verify]\non_unverified = "off"\n')
    subprocess.run(["git", "checkout", "-q", "calc.py"], cwd=repo, check=True)
    done, events = coder(repo, tmp_path, turns)
    assert not of(events, "verify_nudge") and events[-1]["turns"] == 2, done.stderr  # lowered to off


def test_the_projects_command_from_claude_md_and_from_a_trusted_config(git_repo: Path, tmp_path: Path) -> None:
    repo = calc_repo(git_repo)
    (repo / "check.sh").write_text("#!/bin/sh\nset -e\npython -m unittest discover -s tests 2>&1\n")
    (repo / "check.sh").chmod(0o755)
    (repo / "verify.sh").write_text("#!/bin/sh\nset -e\npython -m unittest discover -s tests 2>&1\n")
    (repo / "verify.sh").chmod(0o755)
    (repo / "CLAUDE.md").write_text("# calc\n\n## Testing\n\nRun `./check.sh` before you finish.\n")
    commit(repo)
    done, events = coder(repo, tmp_path, [FIX, bash("./check.sh"), {"text": "Ok."}])
    run = events[-1]["evidence"]["runs"][0]
    assert (events[-1]["evidence"]["state"], run["kind"]) == ("verified", "project"), done.stderr
    subprocess.run(["git", "checkout", "-q", "calc.py"], cwd=repo, check=True)
    done, events = coder(repo, tmp_path, [FIX, bash("./verify.sh"), {"text": "Ok."}])
    assert events[-1]["evidence"]["state"] == "unverified", done.stderr  # a script nobody named, that imports nothing
    (repo / ".coder").mkdir(exist_ok=True)
    (repo / ".coder" / "config.toml").write_text('[review.tests]\ncommand = "./verify.sh"\n')
    subprocess.run(["git", "checkout", "-q", "calc.py"], cwd=repo, check=True)
    done, events = coder(repo, tmp_path, [FIX, bash("./verify.sh"), {"text": "Ok."}], "--permission-mode", "auto",
                         "--trust")
    run = events[-1]["evidence"]["runs"][0]
    assert (events[-1]["evidence"]["state"], run["kind"]) == ("verified", "project"), done.stderr
