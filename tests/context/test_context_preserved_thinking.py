"""Compaction (masking and the LLM handoff) on the models whose thinking blocks are bound to the conversation they
were made in (preserved thinking, the 5.x models) and on the other thinking kinds, through the real anthropic SDK
and the strict fake server, which refuses a thinking block whose prefix changed. Every request of the session must
be accepted: thinking after a changed prefix is dropped, never sent back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from coder.config.sections import ContextSettings
from coder.context.base import Pinned
from coder.context.manager import TieredContext
from coder.models.registry import create_provider
from coder.models.types import Message, ToolResultBlock, ToolSpec
from coder_testkit.fake_server import FakeServer

TOOLS = [ToolSpec("bash", "Run a shell command in the repository.",
                  {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})]
COMMANDS = ["cat src/app.py", "seq 1 300", "ls -la src", "cat src/app.py", "seq 1 300", "git status --short"]


def _script(turns: int) -> dict[str, Any]:
    main = [{"thinking": f"Step {i}: what next?", "text": f"Step {i}.",
             "tool_calls": [{"name": "bash", "input": {"command": COMMANDS[i % len(COMMANDS)]}}]}
            for i in range(turns)]
    main.append({"thinking": "All checked.", "text": "All done."})
    return {"turns": main + [{"when": "about to be compacted", "repeat": True, "text": "## Intent\nLook around."}]}


@pytest.mark.parametrize(("model", "budget"), [
    ("claude-opus-5-5", None),  # always thinks, preserved thinking
    ("claude-sonnet-5-5", 4000),  # adaptive, on by default, preserved thinking
    ("claude-haiku-4-5", 4000),  # budget thinking, no binding
])
def test_compacting_session_is_accepted_on_every_request(model: str, budget: int | None, git_repo: Path,
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    turns = 24
    with FakeServer(_script(turns)) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy-key")
        provider = create_provider(f"anthropic:{model}", {"providers": {"anthropic": {"max_retries": 0}}})
        cm = TieredContext(provider, ContextSettings(compact_at=3_000, target=0.5, recent_turns=2, clip_chars=2_000),
                           tmp_path / "state")
        history = [Message.user_text("Look around the repository.")]
        pinned = Pinned(task="Look around the repository.")
        kinds: list[str] = []
        for _ in range(turns + 1):
            prepared = cm.prepare("You are coder.", history, TOOLS, pinned)
            kinds += [c.kind for c in prepared.compactions]
            prepared.request.thinking_budget = budget
            response = provider.complete(prepared.request)
            history.append(response.message)
            if not response.message.tool_uses():
                break
            history.append(Message("user", [
                ToolResultBlock(c.id, _run(git_repo, c.input["command"])) for c in response.message.tool_uses()]))
        bodies = srv.requests
    assert history[-1].text() == "All done.", "every request was accepted to the end"
    assert "summary" in kinds, kinds
    sent_thinking = sum(json.dumps(b["messages"]).count('"type": "thinking"') for b in bodies)
    assert sent_thinking > 0, "thinking blocks still go back where their prefix is intact"


def _run(repo: Path, command: str) -> str:
    proc = subprocess.run(["bash", "-c", command], cwd=repo, capture_output=True, text=True, timeout=30, check=False)
    return f"{proc.stdout}{proc.stderr}\n[exit {proc.returncode}]"
