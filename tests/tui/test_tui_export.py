"""Issue 24: `/export` writes the session's transcript as Markdown (from the stored events: messages, every tool
call with its result or diff, checkpoints), in the app with Pilot; `coder sessions export --format md` too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tui_support import async_test, conversation_text, make_app, type_and_send, wait_for  # type: ignore[import-not-found]

SCRIPT = {"turns": [
    {"text": "Writing it.", "tool_calls": [{"name": "write_file", "input": {"path": "out.txt", "content": "one\n"}}]},
    {"text": "Now a check.", "tool_calls": [{"name": "bash", "input": {"command": "echo ```fenced```"}}]},
    {"text": "All **done**."},
]}
REPO = Path(__file__).resolve().parents[2]


@async_test
async def test_export_writes_the_transcript_as_markdown(factory, git_repo: Path, tmp_path: Path) -> None:
    app, f = make_app(factory, git_repo, tmp_path, SCRIPT, mode="auto")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.opened is not None)
        await type_and_send(pilot, app, "write out.txt please")
        await wait_for(pilot, lambda: not app.busy and app.session.stats.turns >= 3)
        await type_and_send(pilot, app, "/export")
        sid = app.opened.session.id
        await wait_for(pilot, lambda: "Transcript written to" in conversation_text(app))
        text = (git_repo / f"coder-{sid}.md").read_text()
        await type_and_send(pilot, app, "/export notes/t.md")
        await wait_for(pilot, lambda: (git_repo / "notes" / "t.md").exists())
    assert text.startswith(f"# coder session {sid}")
    you, answer = text.index("## You\n\nwrite out.txt please"), text.index("All **done**.")
    assert you < text.index("Writing it.") < answer
    assert "**✓ write_file" in text and "**✓ bash: echo" in text
    assert "```diff\n--- a/out.txt\n+++ b/out.txt" in text and "+one" in text
    assert "````\nran: echo ```fenced```" in text  # the fence is longer than the backticks inside
    assert "_checkpoint 1: `out.txt`_" in text

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "coder", "sessions", "export", sid, "--format", "md"], cwd=git_repo,
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("- workspace")[1] == text.split("- workspace")[1]  # the status line differs: done
