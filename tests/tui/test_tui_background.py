"""Issue 24: Ctrl+B sends the running command to the background, in the app, with the real session and the real
bubblewrap sandbox: the tool block says which job it became, the turn goes on, and a note says when the job
ended. Ctrl+B with nothing running only says so."""

from __future__ import annotations

import json
from pathlib import Path

from tui_support import app_args, async_test, type_and_send, wait_for  # type: ignore[import-not-found]

from coder.tui.blocks import NoteBlock, ToolBlock

SCRIPT = {"turns": [
    {"text": "Building.", "tool_calls": [{"name": "bash", "input": {
        # the build ends when the test says so (it creates `go`), not after a time a loaded machine could outlast
        "command": "echo part1; for i in $(seq 6000); do [ -e go ] && break; sleep 0.1; done; "
                   "echo built > built.txt"}}]},
    {"text": "Carrying on while it builds."}]}


@async_test
async def test_ctrl_b_sends_the_running_command_to_the_background(git_repo: Path, tmp_path: Path) -> None:
    from coder.frontend.history import InputHistory
    from coder.tui.app import CoderApp

    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    args = app_args(git_repo, model=f"scripted:{script}", permission_mode="auto", no_sandbox=False)
    app = CoderApp(args, history=InputHistory(tmp_path / "hist.jsonl"))
    async with app.run_test(size=(150, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await pilot.press("ctrl+b")  # nothing runs: nothing happens but a word
        await type_and_send(pilot, app, "build it")
        await wait_for(pilot, lambda: any("│ part1" in str(b.title) for b in app.query(ToolBlock)))
        assert "Ctrl+B: background" in str(app.query_one("#status").render())  # the status bar says how
        await pilot.press("ctrl+b")
        await wait_for(pilot, lambda: not app.busy)  # the turn went on and ended while the build waits for `go`
        block = list(app.query(ToolBlock))[-1]
        assert "⇥ background job bg1" in str(block.title), block.title
        assert not (git_repo / "built.txt").exists()
        (git_repo / "go").touch()
        notes = lambda: [str(n.render()) for n in app.query(NoteBlock)]  # noqa: E731
        await wait_for(pilot, lambda: any("background job bg1" in n and "exit code 0" in n for n in notes()))
        assert (git_repo / "built.txt").read_text() == "built\n"  # it ran to its end, in the sandbox
