#!/usr/bin/env python3
"""Replays one prepared trajectory through a real coder session, for benchmarks/context.py.

    PYTHONPATH=CHECKOUT python benchmarks/context_session.py JOB.json

Runs inside the checkout on PYTHONPATH (this one, or an older commit's worktree, so both are measured the same
way in one run), which is why it uses only what every version since the context manager has: `open_session`,
`SessionOptions`, `FakeServer`, and events matched by class name. The job (written by benchmarks/context.py)
holds a fake-server script with the trajectory's assistant turns, the observations by tool-call id, and the user
messages in order. The session is the real one (the checkout's system prompt, tools, context manager, Anthropic
provider and SDK) against the fake server on 127.0.0.1, which records every request; only the tools' work is
replayed: each call returns the observation the trajectory recorded (a real shell output of the original run).
The caller sets HOME and XDG_* to a private folder, where the job's user config (context settings, MCP servers)
is written.

A compaction's summary call goes to the fake server too (recorded and priced like every request); what the session
keeps of its answer is cut or padded to `summary_ratio` of the summarised text, at most the configured
`summary_max_tokens`: a stand-in for a model's handoff whose size follows what it summarises, as in
benchmarks/context_baselines.py.

Prints one JSON line: requests recorded, the output tokens of each summary, calls whose result was not the
recorded observation (refused by the policy or by input validation), and the outcome of each user turn.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from coder.engine.builder import SessionOptions, open_session  # the checkout on PYTHONPATH
from coder.tools.base import ToolResult
from coder_testkit.fake_server import FakeServer


class ReplayedTool:
    """The session's tool with its own contract, facts and permission, whose run returns the recorded output."""

    def __init__(self, tool: Any, outputs: dict[str, str], current: dict[str, str]) -> None:
        self._tool, self._outputs, self._current = tool, outputs, current
        self.contract = tool.contract

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tool, name)

    def run(self, args: dict[str, Any], ctx: Any) -> ToolResult:
        return ToolResult(self._outputs.get(self._current.get("id", ""), ""))

    def close(self) -> None:
        self._tool.close()


HANDOFF_HEADER, NARRATIVE = "[Context handoff]", "\n## Handoff\n"  # coder/context/summary.py's render()
EXTENDING = "which stays as it is"  # prompts/compact_extend.md: the model writes only what the new turns add


def summarised_chars(request: Any, verbatim: set[str], rule: str) -> int:
    """The characters a handoff summarises. Rule "all" (rounds 1-3): every text block and tool result of the
    request, 40 for any other block. Rule "narrative": the same minus what the model is told not to repeat because
    the system copies it verbatim beside the handoff (prompts/compact.md: the task, the user's messages, and a
    previous handoff's verbatim sections) and minus the instruction itself; a tool call counts its input, which
    the model wrote (the "all" rule counted 40 for it). A summary that extends the previous handoff (issue 45:
    prompts/compact_extend.md) does not summarise that handoff's narrative again: it stays as it is."""
    messages = request.messages
    last = messages[-1].content[-1] if messages and messages[-1].content else None
    extending = EXTENDING in str(getattr(last, "text", ""))
    total = 0
    for m, message in enumerate(messages):
        for b, block in enumerate(message.content):
            text = getattr(block, "text", None) or getattr(block, "content", None) or ""
            if rule == "all":
                total += len(text) or 40
                continue
            if m == len(messages) - 1 and b == len(message.content) - 1:
                continue  # the instruction
            if isinstance(text, str) and text.strip() in verbatim:
                continue
            if isinstance(text, str) and text.startswith(HANDOFF_HEADER) and NARRATIVE in text:
                text = "" if extending else text[text.index(NARRATIVE) + len(NARRATIVE):]
            if not text and getattr(block, "input", None) is not None:
                text = json.dumps(block.input)
            total += len(text) if isinstance(text, str) else len(str(text))
    return total


def stub_summaries(context: Any, ratio: float, verbatim: set[str], rule: str) -> list[int]:
    """Wrap the context manager's summarizer (after its real call to the fake server) so the handoff it keeps is
    `ratio` of the summarised text (`summarised_chars`), at most `summary_max_tokens`; returns the list the sizes
    are appended to."""
    sizes: list[int] = []
    real = getattr(context, "summarizer", None)
    if real is None:
        return sizes
    cap = int(context.config.summary_max_tokens)

    def summarise(request: Any) -> tuple[str, Any]:
        text, usage = real(request)
        size = min(int(summarised_chars(request, verbatim, rule) * ratio), cap * 4)
        sizes.append((size + 3) // 4)
        return (text * (size // max(1, len(text)) + 1))[:size], usage

    context.summarizer = summarise
    return sizes


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    workspace = Path(job["workspace"])
    workspace.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    outputs: dict[str, str] = job["observations"]
    current: dict[str, str] = {}
    mismatched: list[str] = []

    def on_event(event: Any) -> None:
        kind = type(event).__name__
        if kind == "ToolCallRequested":
            current["id"] = event.id
        elif kind == "ToolCallFinished" and outputs.get(event.id) != event.output:
            mismatched.append(f"{event.tool}: {str(event.output)[:120]}")

    with FakeServer(job["script"], record=job["record"]) as server:
        os.environ["ANTHROPIC_BASE_URL"] = server.base_url
        os.environ["ANTHROPIC_API_KEY"] = "replay"
        wanted = {"cwd": workspace, "model": job["model"], "permission_mode": "auto", "max_turns": 100_000,
                  "max_cost": 1e9, "max_wall_time": 1e7, "checkpoints": False}
        known = {f.name for f in dataclasses.fields(SessionOptions)}
        opened = open_session(SessionOptions(**{k: v for k, v in wanted.items() if k in known}), on_event)
        session = opened.session
        summaries = stub_summaries(session.parts.context, float(job["summary_ratio"]),
                                   {t.strip() for t in job["user_messages"]}, job.get("summary_rule", "all"))
        for name in job["replayed_tools"]:
            if name in session.parts.tools:
                session.parts.tools[name] = ReplayedTool(session.parts.tools[name], outputs, current)
        outcomes = [session.send(text).reason for text in job["user_messages"]]
        if hasattr(opened, "finish"):
            opened.finish("done")
        else:  # before the app's sessions (issue 24), closing was the session's own
            session.close("done")
        requests = len(server.requests)
    print(json.dumps({"requests": requests, "summary_tokens": summaries, "mismatched": mismatched,
                      "outcomes": outcomes}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
