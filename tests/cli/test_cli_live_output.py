"""Issue 32, item 3: the real `coder run --output-format stream-json` with the real sandboxed shell running a
5-second `yes` and a 10 MB line (35 MB on the stream before): the stream stays small, while the result keeps the
head, the tail and the handle of the whole text."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import coder, write_script  # type: ignore[import-not-found]

from coder.engine.live_output import CUT_NOTE, HEAD, INTERVAL

FLOOD = "timeout 5 yes; head -c 10000000 /dev/zero | tr '\\0' x; echo; echo THE-END"


def test_stream_json_stays_small_for_a_flood_and_a_huge_line(git_repo: Path, tmp_path: Path) -> None:
    """The issue's numbers: 35 MB on the stream for these two commands. Control: the commands do print that much
    (the result says how many bytes there were)."""
    script = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "bash", "input": {"command": FLOOD, "timeout": 60}}]},
        {"text": "flooded"}])
    out = coder("run", "--model", f"scripted:{script}", "--permission-mode", "auto", "--output-format",
                "stream-json", "flood please", cwd=git_repo, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    live = [e for e in events if e["type"] == "tool_output"]
    finished = next(e for e in events if e["type"] == "tool_call_finished")
    shown = "".join(e["text"] for e in live)
    assert len(shown) <= HEAD + len(CUT_NOTE.format(head=HEAD)) and "live output stops here" in shown
    assert len(live) <= 5 / INTERVAL + 10  # throttled: not one event per pipe read
    assert len(out.stdout) < 200_000  # the whole stream, every event included (it was 35 MB)
    result, data = finished["output"], finished["data"]
    assert result.startswith("y\ny\n")  # the model's view: the head, and the tail (the end, or the shell's own
    assert "THE-END" in result[-2000:] or "the command printed more than" in result[-2000:]  # stop at 16 MB)
    assert data["output_handle"] and data["truncated"]  # and the whole text behind the handle
    assert "bytes were dropped" in result or "lines cut" in result  # control: the command printed megabytes
