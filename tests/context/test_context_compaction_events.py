"""Issue 45: a summary is announced when it starts. Through the real builder (`open_session`, a scripted model, the
user's `[context]` config): the session hears `CompactionStarted` before the summary call and the summary's
`CompactionEvent` carries how long it took; Claude Code's PreCompact hook (trigger `auto`) runs on the start, before
the summary is made, not after it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pexpect
import pytest

from coder.base import events as ev
from coder.engine.builder import SessionOptions, open_session

ROOT = Path(__file__).resolve().parents[2]
SUMMARY_ANSWER = {"when": "about to be compacted", "repeat": True, "text": "## Intent\nCount.\n## Plan and next\n1. go"}


@pytest.mark.parametrize("handoff", ["model", "code"])
def test_a_summary_is_announced_before_it_is_made(git_repo: Path, tmp_path: Path, handoff: str) -> None:
    """With `handoff = "code"` (the `cost` preset) no model call is made: the start is still announced (the
    frontends say nothing of it, having nothing to wait for) so the PreCompact hook runs first all the same."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "coder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[context]\ncompact_at = 2500\nrecent_turns = 1\nmask_target = 0.01\nsummary_max_tokens = 200\n"
                      f'handoff = "{handoff}"\n')
    log = tmp_path / "precompact.log"
    settings = Path.home() / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": {"PreCompact": [
        {"matcher": "auto", "hooks": [{"type": "command", "command": f"cat >> {log}; echo >> {log}"}]}]}}))
    long_text = "counting " * 600
    turns = [{"text": f"{long_text} {n}", "tool_calls": [{"name": "todo", "input": {"items": [
        {"id": str(n), "text": f"step {n}", "status": "in_progress"}]}}]} for n in range(5)]
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [*turns, {"text": "Done."}, SUMMARY_ANSWER]}))
    seen: list[ev.Event] = []
    hook_ran_at: list[int] = []

    def on_event(event: ev.Event) -> None:
        seen.append(event)
        if isinstance(event, ev.CompactionEvent) and event.kind == "summary":
            hook_ran_at.append(len(log.read_text().splitlines()) if log.exists() else 0)

    opened = open_session(SessionOptions(cwd=git_repo, model=f"scripted:{script}", permission_mode="auto"), on_event)
    outcome = opened.session.send("count")
    stored = [r.type for r in opened.store.events(opened.session.id)]
    summary_calls = opened.session.parts.context.stats.summary_calls
    opened.finish("done")
    assert outcome.reason == "done"
    started = [e for e in seen if isinstance(e, ev.CompactionStarted)]
    summaries = [e for e in seen if isinstance(e, ev.CompactionEvent) and e.kind == "summary"]
    assert len(started) == len(summaries) >= 1 and all(s.trigger == "auto" and s.messages > 0 for s in started)
    for start, summary in zip(started, summaries, strict=True):  # each announced before it ends, and only once
        assert seen.index(start) < seen.index(summary)
        assert summary.duration_s >= 0 and summary.tokens_before == start.tokens_before
    assert hook_ran_at and hook_ran_at[0] >= 1, "PreCompact ran before the summary's result was known"
    calls = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert len(calls) == len(summaries) and {c["trigger"] for c in calls} == {"auto"}
    assert "compaction_started" not in stored and "compaction" in stored  # a notice, not part of the record
    assert {s.by for s in started} == {handoff} and {s.data["by"] for s in summaries} == {handoff}
    assert summary_calls == (len(summaries) if handoff == "model" else 0)
    if handoff == "code":  # the handoff holds what code copies, and says who wrote it
        text = summaries[-1].data["text"]
        assert "## Calls so far" in text and "written by code, no summary" in text, text
        assert "Intent" not in text  # the model's answer was never asked for


def test_plain_in_a_real_terminal_shows_the_summary_start_then_its_duration(git_repo: Path, tmp_path: Path) -> None:
    """The same, end to end as a user runs it: `coder --plain` in a pseudo-terminal, the compaction settings from
    the user's config file, a scripted model. The start line comes before the end line with its seconds, both
    before the answer that follows the compaction."""
    config = Path(os.environ["XDG_CONFIG_HOME"]) / "coder" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[context]\ncompact_at = 2500\nrecent_turns = 1\nmask_target = 0.01\nsummary_max_tokens = 200\n")
    turns = [{"text": f"{'counting ' * 600} {n}", "tool_calls": [{"name": "todo", "input": {"todos": [
        {"id": str(n), "text": f"step {n}", "status": "in_progress"}]}}]} for n in range(5)]
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [*turns, {"text": "Counted them all."}, SUMMARY_ANSWER]}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TERM": "xterm"}
    child = pexpect.spawn(sys.executable, ["-m", "coder", "--plain", "--no-sandbox", "--permission-mode", "auto",
                                           "--model", f"scripted:{script}"],
                          cwd=str(git_repo), env=env, timeout=120, encoding="utf-8", dimensions=(40, 200))
    try:
        child.expect("auto>")
        child.send("count\r")
        child.expect(r"compacting the context \(the context is full\): summarising \d+ earlier messages")
        child.expect(r"context compacted \(summary in \d+\.\d+s\)")
        child.expect("Counted them all.")
        child.expect("auto>")
        child.send("/quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
