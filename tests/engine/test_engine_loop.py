"""The session loop with the in-process scripted provider and a small real tool."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from coder.base import events as ev
from coder.context.base import PassthroughContext, Pinned
from coder.engine.history import rebuild
from coder.engine.session import Session
from coder.engine.session_parts import Limits, SessionParts, no_questions
from coder.models.scripted import ScriptedProvider
from coder.policy.base import ModePolicy, PermissionAnswer
from coder.tools.base import Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params

ECHO = ToolContract("echo", "Echo the text back.", {"type": "object", "properties": {"text": {"type": "string"}},
                                                    "required": ["text"]}, "execute")
NOTE = ToolContract("note", "Write a note file.", {"type": "object", "properties": {"name": {"type": "string"}},
                                                   "required": ["name"]}, "write")


@dataclass(frozen=True)
class Text(Params):
    text: str


@dataclass(frozen=True)
class Name(Params):
    name: str


class EchoTool(Tool[Text]):
    contract = ECHO

    def run(self, params: Text, ctx: ToolContext) -> ToolResult:
        if params.text == "boom":
            raise RuntimeError("exploded")
        return ToolResult(f"echo: {params.text}")


class NoteTool(Tool[Name]):
    contract = NOTE

    def run(self, params: Name, ctx: ToolContext) -> ToolResult:
        (ctx.workspace / params.name).write_text("note\n")
        return ToolResult("written", files_changed=[params.name])


def make_session(tmp_path: Path, script: dict, mode: str = "auto", limits: Limits | None = None,
                 ask=no_questions, **provider_kw) -> tuple[Session, list[ev.Event]]:
    seen: list[ev.Event] = []
    provider = ScriptedProvider(script, **provider_kw)
    ctx = ToolContext(tmp_path, tmp_path, "s1", threading.Event(), tmp_path / "state")
    parts = SessionParts("s1", provider, {"echo": EchoTool(), "note": NoteTool()}, ModePolicy(mode),
                         PassthroughContext(), ctx, "system prompt", Pinned(), limits or Limits(), seen.append, ask)
    return Session(parts), seen


def types(events: list[ev.Event]) -> list[str]:
    return [e.type for e in events if e.type != "text_delta"]


def test_tool_round_trip_and_event_order(tmp_path: Path) -> None:
    script = {"turns": [{"text": "calling", "tool_calls": [{"name": "echo", "input": {"text": "hi"}}]},
                        {"text": "all done"}]}
    session, seen = make_session(tmp_path, script)
    outcome = session.send("say hi")
    assert outcome.reason == "done" and outcome.final_text == "all done"
    assert types(seen) == ["user_message", "usage", "assistant_message", "tool_call_requested",
                           "tool_call_approved", "tool_call_finished", "usage", "assistant_message", "turn_end"]
    finished = next(e for e in seen if isinstance(e, ev.ToolCallFinished))
    assert finished.output == "echo: hi" and not finished.is_error
    assert [m.role for m in session.history] == ["user", "assistant", "user", "assistant"]
    assert session.stats.turns == 2


def test_unknown_tool_bad_input_and_tool_crash_become_error_results(tmp_path: Path) -> None:
    script = {"turns": [{"tool_calls": [{"name": "nope", "input": {}}, {"name": "echo", "input": {"txt": 1}},
                                        {"name": "echo", "input": {"text": "boom"}}]}, {"text": "ok"}]}
    session, seen = make_session(tmp_path, script)
    assert session.send("go").reason == "done"
    outputs = [e.output for e in seen if isinstance(e, ev.ToolCallFinished)]
    assert "Unknown tool 'nope'" in outputs[0] and "echo" in outputs[0]
    assert outputs[1] == "Invalid input for echo: text: missing (it is required)"
    assert "RuntimeError: exploded" in outputs[2]
    results = session.history[2].content
    assert all(block.is_error for block in results)  # type: ignore[union-attr]


def test_max_turns_limit(tmp_path: Path) -> None:
    loop = {"turns": [{"when": ".", "repeat": True, "tool_calls": [{"name": "echo", "input": {"text": "x"}}]}]}
    session, seen = make_session(tmp_path, loop, limits=Limits(max_turns=3))
    outcome = session.send("loop forever")
    assert outcome.reason == "max_turns" and session.stats.turns == 3
    assert isinstance(seen[-1], ev.TurnEnd) and seen[-1].reason == "max_turns"


def test_max_cost_limit(tmp_path: Path) -> None:
    loop = {"turns": [{"when": ".", "repeat": True, "text": "x" * 400,
                       "tool_calls": [{"name": "echo", "input": {"text": "x"}}]}]}
    session, _ = make_session(tmp_path, loop, limits=Limits(max_cost=0.001), price_as="claude-opus-4-1")
    outcome = session.send("spend")
    assert outcome.reason == "max_cost"
    assert session.stats.cost_usd >= 0.001 and session.stats.turns < 100


def test_wall_time_limit(tmp_path: Path) -> None:
    session, _ = make_session(tmp_path, {"turns": [{"text": "never"}]}, limits=Limits(max_wall_time=0))
    assert session.send("hi").reason == "wall_time"


def test_plan_mode_denies_writes_and_headless_ask_denies(tmp_path: Path) -> None:
    script = {"turns": [{"tool_calls": [{"name": "note", "input": {"name": "a.txt"}}]},
                        {"tool_calls": [{"name": "echo", "input": {"text": "x"}}]}, {"text": "fine"}]}
    session, seen = make_session(tmp_path, script, mode="plan")
    session.send("write")
    assert not (tmp_path / "a.txt").exists()
    denied = [e for e in seen if isinstance(e, ev.ToolCallDenied)]
    assert [d.by for d in denied] == ["policy", "policy"]

    session, seen = make_session(tmp_path, script, mode="ask")
    session.send("write")
    assert not (tmp_path / "a.txt").exists()
    assert any(isinstance(e, ev.PermissionRequest) for e in seen)
    assert all(d.by == "user" for d in seen if isinstance(d, ev.ToolCallDenied))


def test_ask_answered_allow_remembers(tmp_path: Path) -> None:
    script = {"turns": [{"tool_calls": [{"name": "note", "input": {"name": "a.txt"}}]},
                        {"tool_calls": [{"name": "note", "input": {"name": "b.txt"}}]}, {"text": "fine"}]}
    asked: list[ev.PermissionRequest] = []

    def ask(request: ev.PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return PermissionAnswer(True, remember="session", rule="note")

    session, seen = make_session(tmp_path, script, mode="ask", ask=ask)
    session.send("write two")
    assert (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").exists()
    assert len(asked) == 1  # the second call was allowed by the remembered rule
    assert session.stats.files_changed == {"a.txt", "b.txt"}


def test_interrupt_mid_stream_leaves_history_valid(tmp_path: Path) -> None:
    script = {"turns": [{"text": "word " * 400, "tool_calls": [{"name": "echo", "input": {"text": "x"}}]}]}
    session, seen = make_session(tmp_path, script, chunk_delay=0.3)
    timer = threading.Timer(0.1, session.interrupt)
    timer.start()
    started = time.monotonic()
    outcome = session.send("talk")
    assert outcome.reason == "interrupted" and time.monotonic() - started < 3
    assert not any(isinstance(e, ev.ToolCallFinished) for e in seen)  # the cut tool call never ran
    assert session.history[-1].role == "assistant" and not session.history[-1].tool_uses()


def test_rebuild_pairs_unfinished_tool_calls(tmp_path: Path) -> None:
    script = {"turns": [{"tool_calls": [{"name": "echo", "input": {"text": "a"}},
                                        {"name": "echo", "input": {"text": "b"}}]}, {"text": "done"}]}
    session, seen = make_session(tmp_path, script)
    session.send("go")
    stored = [e for e in seen if e.persist]
    # simulate a kill after the first tool finished: drop everything after it
    cut = next(i for i, e in enumerate(stored) if isinstance(e, ev.ToolCallFinished)) + 1
    restored = rebuild(stored[:cut])
    assert [m.role for m in restored.history] == ["user", "assistant", "user"]
    first, second = restored.history[-1].content
    assert first.content == "echo: a" and not first.is_error  # type: ignore[union-attr]
    assert second.is_error and "stopped before" in second.content  # type: ignore[union-attr]
    assert restored.turns == 1 and restored.task == "go"


def test_turn_and_time_limits_hold_per_user_turn_cost_per_session(tmp_path: Path) -> None:
    script = {"turns": [{"when": ".", "repeat": True, "text": "ok"}]}
    session, _ = make_session(tmp_path, script, limits=Limits(max_turns=1, max_wall_time=5))
    for text in ("one", "two", "three"):
        assert session.send(text).reason == "done"  # an interactive session keeps working turn after turn
    assert session.stats.turns == 3
    session.stats.turn_started -= 10  # a turn that began long ago does not matter: the next one starts afresh
    assert session.send("four").reason == "done"
    expensive, _ = make_session(tmp_path, {"turns": [{"when": ".", "repeat": True, "text": "x" * 4000}]},
                                limits=Limits(max_cost=0.01), price_as="claude-opus-4-1")
    reasons = [expensive.send(t).reason for t in ("a", "b", "c", "d", "e", "f")]
    assert "max_cost" in reasons and reasons[-1] == "max_cost"  # the budget spans the session
