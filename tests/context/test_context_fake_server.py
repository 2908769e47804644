"""The tiers together: a long scripted session through the real anthropic SDK and our fake server.

Real commands run in a real git repository; the recorded requests must show the shapes we promise: a prefix
that only grows between compactions (what the provider caches), a handoff after each compaction carrying the
task, every user message, the files touched and the plan, valid tool pairing everywhere, and a cached share
of input tokens that stays high."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from coder.base.errors import ContextOverflowError
from coder.config.sections import ContextSettings
from coder.context.base import Pinned
from coder.context.manager import TieredContext
from coder.models.registry import create_provider
from coder.models.types import Message, TextBlock, ToolResultBlock, ToolSpec
from coder_testkit.fake_server import FakeServer

TASK = "Make greet() in src/app.py polite and add a test for it."
INSTRUCTION = "Also: keep every line under 80 characters, please."
HANDOFF = "## Intent\nPolite greet.\n## Plan and next\n1. run the tests again"
TOOLS = [ToolSpec("bash", "Run a shell command in the repository.",
                  {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]})]
COMMANDS = [
    "cat src/app.py",
    "seq 1 3000",  # a long output: clipped at first sight
    "python3 -c 'import sys; sys.exit(\"AssertionError: greet is rude\")'",
    "sed -i 's/hello/good day/' src/app.py",
    "cat src/app.py",
    "git diff --stat",
    "ls -la src",
    "seq 1 400",
]


def _script(turns: int) -> dict[str, Any]:
    main = [{"text": f"Step {i}: running a command.",
             "tool_calls": [{"name": "bash", "input": {"command": COMMANDS[i % len(COMMANDS)]}}]}
            for i in range(turns)]
    main.append({"text": "All done."})
    return {"turns": main + [{"when": "about to be compacted", "repeat": True, "text": HANDOFF}]}


def _run(repo: Path, command: str) -> str:
    proc = subprocess.run(check=False, args=["bash", "-c", command], cwd=repo, capture_output=True, text=True,
                          timeout=30)
    return f"{proc.stdout}{proc.stderr}\n[exit {proc.returncode}]"


def _strip_cache(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_cache(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_cache(v) for v in obj]
    return obj


def _is_summary_call(body: dict[str, Any]) -> bool:
    return "about to be compacted" in json.dumps(body["messages"][-1])


def test_long_session_through_the_fake_server(git_repo: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    turns = 60
    with FakeServer(_script(turns), record=tmp_path / "requests.jsonl") as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy-key")
        provider = create_provider("anthropic:claude-sonnet-4-6", {})
        # the summary tier's test: only superseded outputs are masked and masking alone is never enough
        cm = TieredContext(provider, ContextSettings(compact_at=5_000, target=0.5, recent_turns=3, clip_chars=4_000,
                                                     mask="stale", mask_target=0.01), tmp_path / "state")
        history = [Message.user_text(TASK)]
        pinned = Pinned(task=TASK, plan="1. make greet polite\n2. add a test", files_touched=[])
        events = []
        for step in range(turns + 1):
            prepared = cm.prepare("You are coder, a coding agent.", history, TOOLS, pinned)
            events += prepared.compactions
            response = provider.complete(prepared.request)
            cm.record_usage(response.usage)
            history.append(response.message)
            calls = response.message.tool_uses()
            if not calls:
                break
            results = []
            for call in calls:
                output = _run(git_repo, call.input["command"])
                if call.input["command"].startswith("sed -i"):
                    pinned.files_touched = ["src/app.py"]
                results.append(ToolResultBlock(call.id, output, "[exit 0]" not in output))
            blocks: list[Any] = list(results)
            if step == 5:
                blocks.append(TextBlock(INSTRUCTION))
            history.append(Message("user", blocks))
        bodies = srv.requests

    assert history[-1].text() == "All done.", "the session ran to its end"
    main = [b for b in bodies if not _is_summary_call(b)]
    summaries = [b for b in bodies if _is_summary_call(b)]
    assert len(main) == turns + 1
    kinds = [e.kind for e in events]
    assert kinds.count("summary") == len(summaries) >= 2
    assert "truncate" in kinds, "the long seq output was clipped"
    # between compactions every request extends the previous one: the cached prefix stays valid
    extended = 0
    for prev, cur in itertools.pairwise(main):
        a, b = _strip_cache(prev["messages"]), _strip_cache(cur["messages"])
        if b[:len(a)] == a:
            extended += 1
    assert extended >= len(main) - 1 - kinds.count("summary") - kinds.count("mask"), "prefix broken too often"
    # after the first compaction the handoff leads every request, with everything pinned in it
    first_compacted = next(i for i, b in enumerate(main) if "[Context handoff]" in json.dumps(b["messages"][:3]))
    for body in main[first_compacted:]:
        assert _strip_cache(body["messages"][0]) == _strip_cache(main[0]["messages"][0]), "the task stays first"
        assert "[Context handoff]" in json.dumps(body["messages"][2])
        head = json.dumps(body["messages"][:3])
        for needle in (TASK, INSTRUCTION, "src/app.py", "1. make greet polite", "Polite greet."):
            assert json.dumps(needle)[1:-1] in head
        marks = json.dumps(body).count("cache_control")
        assert 1 <= marks <= 4
    # the summary call reuses the cached prefix of the request before it
    assert all(_strip_cache(s["system"]) == _strip_cache(main[0]["system"])
               and _strip_cache(s["tools"]) == _strip_cache(main[0]["tools"]) for s in summaries)
    # peak stays bounded while the raw history keeps growing
    sizes = [len(json.dumps(b["messages"])) for b in main]
    assert max(sizes[first_compacted:]) < 3 * min(sizes[first_compacted:]) + 40_000
    assert cm.stats.cached_share > 0.6, cm.stats
    assert (tmp_path / "requests.jsonl").exists()


def test_overflow_from_the_api_means_one_compaction_and_one_retry(git_repo: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's window is far smaller than the one the client believes in: the API refuses the request,
    the engine's rule (force_compaction, prepare again, retry once) gets it through."""
    turns = 30
    with FakeServer(_script(turns), context_window=5_000) as srv:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy-key")
        provider = create_provider("anthropic:claude-sonnet-4-6", {})
        cm = TieredContext(provider, ContextSettings(compact_at=0.9, recent_turns=3, clip_chars=4_000),
                           tmp_path / "state")
        history = [Message.user_text(TASK)]
        overflows = retried = 0
        for _ in range(turns + 1):
            for attempt in (1, 2):  # what coder.engine.session does
                prepared = cm.prepare("You are coder.", history, TOOLS, Pinned(task=TASK))
                try:
                    response = provider.complete(prepared.request)
                except ContextOverflowError:
                    assert attempt == 1, "the retry after a forced compaction must fit"
                    overflows += 1
                    cm.force_compaction()
                    continue
                retried += attempt == 2
                break
            cm.record_usage(response.usage)
            history.append(response.message)
            calls = response.message.tool_uses()
            if not calls:
                break
            history.append(Message("user", [ToolResultBlock(c.id, _run(git_repo, c.input["command"]))
                                            for c in calls]))
        bodies = srv.requests
    assert overflows >= 1 and retried == overflows
    assert history[-1].text() == "All done."
    assert any("[Context handoff]" in json.dumps(b["messages"][:3]) for b in bodies)
