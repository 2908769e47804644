"""Issue 49: the app's turn line and the plain prompt say the evidence a turn that changed code ended with, in the
colour of its state, and flag a claim the evidence does not support; the real app and `--plain` in a real terminal
(tmux) with the real sandbox and pytest say the nudge and the evidence, and `/commit` puts the trailer in the
message."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest
from terminal_support import Tmux, coder_command, quit_plain  # type: ignore[import-not-found]
from tui_support import async_test, make_app, wait_for  # type: ignore[import-not-found]

from coder.base import events as ev
from coder.evidence.record import Evidence, RunRecord, nudge_line
from coder.repl.printer import Printer
from coder.tui.blocks import NoteBlock

HELLO = {"turns": [{"text": "Hello."}]}
RUN = RunRecord("python -m pytest -q tests", "tests", "pytest", "passed", 0,
                {"passed": 4, "failed": 0, "errors": 0, "skipped": 1}, True, True, "model", "the whole suite")
VERIFIED = Evidence("verified", ["calc.py"], [RUN], 0, "tests that cover the change passed after the last change")
FAILED = Evidence("failed", ["calc.py"], [RunRecord("pytest -q", "tests", "pytest", "failed", 1,
                                                    {"passed": 3, "failed": 1, "errors": 0, "skipped": 0}, True,
                                                    True, "model", "the whole suite")], 0, "a run failed")
CLAIMED = Evidence("unverified", ["calc.py"], [], 0, "no test ran", "All tests pass.", True, "nudge")


def event(record: Evidence) -> ev.TurnEvidence:
    return ev.TurnEvidence(record.state, record.to_dict())


@async_test
async def test_the_turn_line(factory, git_repo: Path, tmp_path: Path) -> None:
    app, _ = make_app(factory, git_repo, tmp_path, HELLO)
    async with app.run_test(size=(140, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        for record in (VERIFIED, FAILED, CLAIMED):
            app.queue.append(event(record))
            app.queue.append(ev.TurnEnd(1, "done"))

        def notes() -> list[NoteBlock]:
            return [n for n in app.query(NoteBlock) if "evidence:" in str(n.render())]

        await wait_for(pilot, lambda: len(notes()) == 3)
        verified, failed, claimed = notes()
        assert str(verified.render()) == "evidence: verified — `python -m pytest -q tests`: 4 passed, 1 skipped"
        assert verified.has_class("ok") and failed.has_class("error") and claimed.has_class("error")
        assert "3 passed, 1 failed" in str(failed.render())
        assert str(claimed.render()) == "evidence: unverified — no test ran. Unsupported claim: “All tests pass.”"


def test_the_plain_prompt_line() -> None:
    out = io.StringIO()
    printer = Printer(out, color=False)
    printer.event(ev.VerifyNudge("nudge", "[coder: your turn is ending without proof] ..."))
    for record in (VERIFIED, CLAIMED):
        printer.event(event(record))
    text = out.getvalue()
    assert "evidence: verified — `python -m pytest -q tests`: 4 passed, 1 skipped" in text
    assert "Unsupported claim: “All tests pass.”" in text
    assert nudge_line("nudge") in text and "[coder: your turn" not in text  # the model's note is the model's


SCRIPT = {"turns": [
    {"text": "The sign is wrong.", "tool_calls": [{"name": "str_replace_based_edit_tool", "input": {
        "command": "str_replace", "path": "calc.py", "old_str": "a - b", "new_str": "a + b"}}]},
    {"text": "Fixed: all tests pass."},  # no test ran: coder tells the model so, once
    {"text": "Running them.", "tool_calls": [{"name": "bash", "input": {"command": "python -m pytest -q"}}]},
    {"text": "Fixed; the test passes."}]}


@pytest.mark.parametrize("frontend", ["app", "plain"])
def test_in_a_terminal_the_nudge_the_evidence_and_the_commit_trailer(frontend: str, git_repo: Path,
                                                                      tmp_path: Path) -> None:
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (git_repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    for args in (["add", "-A"], ["commit", "-qm", "calc"]):
        subprocess.run(["git", *args], cwd=git_repo, check=True, capture_output=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    line = coder_command(script, *(["--plain"] if frontend == "plain" else [])).replace(
        "--permission-mode ask", "--permission-mode auto")
    tmux = Tmux(tmp_path, line, git_repo, width=160, height=40)
    try:
        tmux.wait("idle │" if frontend == "app" else "auto>")
        tmux.type("fix add")
        tmux.send("Enter")
        screen = " ".join(tmux.wait("Fixed; the test passes.", "evidence: verified — `python -m pytest -q`: 1 passed",
                                    timeout=120).split())  # lines joined: a narrow frontend may wrap one
        assert screen.count(nudge_line("nudge")) == 1, screen
        assert screen.index(nudge_line("nudge")) < screen.index("Running them.")
        assert "[coder: your turn" not in screen  # the note itself went to the model
        tmux.wait("idle │" if frontend == "app" else "ctx ")
        (tmux.type_at_prompt if frontend == "plain" else tmux.type)("/commit")
        tmux.send("Enter")
        tmux.wait("committed ", timeout=120)
        message = subprocess.run(["git", "log", "-1", "--format=%B"], cwd=git_repo, capture_output=True,
                                 text=True).stdout
        assert "Verified-by: python -m pytest -q: 1 passed" in message, message
        if frontend == "plain":
            quit_plain(tmux)
        else:
            tmux.wait("idle │")
            tmux.quit_app()
    finally:
        tmux.close()


def test_commit_in_a_project_whose_python_has_no_pytest(git_repo: Path, tmp_path: Path) -> None:
    """The trial's finding: in a project whose Python has no pytest, `/commit` read `python -m pytest`'s one line
    ("No module named pytest") as failing tests, sent the model to fix the code twice, and did not commit. No test
    ran: the review says so as a warning, and the commit goes ahead. The project's own .venv (made without pytest)
    is the Python the review runs its tests with."""
    import sys

    (git_repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (git_repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    (git_repo / ".gitignore").write_text(".venv/\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(git_repo / ".venv")], check=True)
    probe = subprocess.run([str(git_repo / ".venv" / "bin" / "python"), "-m", "pytest"], capture_output=True,
                           text=True)
    assert "No module named pytest" in probe.stderr  # the plant is live
    for args in (["add", "-A"], ["commit", "-qm", "calc"]):
        subprocess.run(["git", *args], cwd=git_repo, check=True, capture_output=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [SCRIPT["turns"][0], {"text": "Fixed."}, {"text": "I ran no test."}]}))
    line = coder_command(script, "--plain").replace("--permission-mode ask", "--permission-mode auto")
    tmux = Tmux(tmp_path, line, git_repo, width=160, height=40)
    try:
        tmux.wait("auto>")
        tmux.type_at_prompt("fix add")
        tmux.send("Enter")
        tmux.wait("I ran no test.", "ctx ", timeout=120)
        tmux.type_at_prompt("/commit")
        tmux.send("Enter")
        screen = tmux.wait("committed ", timeout=120)
        joined = " ".join(screen.split())
        assert "review tests: warn" in joined and "No module named pytest (install pytest for that Python" in joined
        assert "fix round" not in screen
        quit_plain(tmux)
    finally:
        tmux.close()
