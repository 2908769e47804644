"""Hooks from config: blocking before-hooks, after-hooks, turn/session hooks, in the real sandbox and on the host."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from coder.base import events as ev
from coder.base.errors import ConfigError
from coder.config.layers import settings
from coder.context.base import PassthroughContext, Pinned
from coder.engine.session import Session
from coder.engine.session_parts import Limits, SessionParts, no_questions
from coder.ext.hooks import parse_hooks
from coder.ext.session_hooks import hooks_from_config
from coder.models.scripted import ScriptedProvider
from coder.policy.base import ModePolicy
from coder.tools.base import Tool, ToolContext, ToolContract, ToolResult
from coder.tools.params import Params

ECHO = ToolContract("echo", "Echo.", {"type": "object", "properties": {"text": {"type": "string"}}}, "execute")


@dataclass(frozen=True)
class Text(Params):
    text: str | None = None


class EchoTool(Tool[Text]):
    contract = ECHO

    def run(self, params: Text, ctx: ToolContext) -> ToolResult:
        return ToolResult(f"echo: {params.text}")


def session_with_hooks(workspace: Path, hooks_config: dict, script: dict) -> tuple[Session, list[ev.Event]]:
    seen: list[ev.Event] = []
    config = settings({"hooks": hooks_config})
    hooks = hooks_from_config(config, workspace, "s-hooks", lambda m: seen.append(ev.ErrorEvent(m)))
    ctx = ToolContext(workspace, workspace, "s-hooks", threading.Event(), workspace / ".state", config)
    parts = SessionParts("s-hooks", ScriptedProvider(script), {"echo": EchoTool()}, ModePolicy("auto"),
                         PassthroughContext(), ctx, "sys", Pinned(), Limits(), seen.append, no_questions, hooks=hooks)
    return Session(parts), seen


SCRIPT = {"turns": [{"tool_calls": [{"name": "echo", "input": {"text": "rm -rf /"}}]},
                    {"tool_calls": [{"name": "echo", "input": {"text": "safe text"}}]}, {"text": "done"}]}
BLOCKER = ("python3 -c \"import json,sys; e=json.load(sys.stdin); "
           "t=e['input']['text']; print('no rm please', file=sys.stderr) if 'rm' in t else None; "
           "sys.exit(2 if 'rm' in t else 0)\"")


@pytest.mark.parametrize("sandboxed", [True, False])
def test_before_tool_exit_2_blocks_with_reason(tmp_path: Path, sandboxed: bool) -> None:
    session, seen = session_with_hooks(tmp_path, {"before_tool": [
        {"match": "ech*", "command": BLOCKER, "sandbox": sandboxed}]}, SCRIPT)
    assert session.send("go").reason == "done"
    finished = [e for e in seen if isinstance(e, ev.ToolCallFinished)]
    assert finished[0].is_error and "Blocked by a hook: no rm please" in finished[0].output
    assert not finished[1].is_error and finished[1].output == "echo: safe text"
    assert [e.by for e in seen if isinstance(e, ev.ToolCallDenied)] == ["hook"]


def test_after_tool_turn_end_and_session_end_receive_json(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    append = f"cat >> {log} && echo >> {log}"
    session, seen = session_with_hooks(tmp_path, {
        "after_tool": [{"command": append}],
        "turn_end": [{"command": append}],
        "session_end": [{"command": append}],
    }, SCRIPT)
    session.send("go")
    session.close("done")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [line["event"] for line in lines] == ["after_tool", "after_tool", "turn_end", "session_end"]
    assert lines[0]["output"] == "echo: rm -rf /" and lines[0]["session_id"] == "s-hooks"
    assert lines[2]["reason"] == "done"


def test_failing_or_slow_hook_is_reported_not_blocking(tmp_path: Path) -> None:
    session, seen = session_with_hooks(tmp_path, {"before_tool": [
        {"command": "exit 1", "sandbox": False}, {"command": "sleep 5", "timeout": 0.5, "sandbox": False}]},
        {"turns": [{"tool_calls": [{"name": "echo", "input": {"text": "x"}}]}, {"text": "ok"}]})
    session.send("go")
    finished = [e for e in seen if isinstance(e, ev.ToolCallFinished)]
    assert finished[0].output == "echo: x"
    notes = [e.message for e in seen if isinstance(e, ev.ErrorEvent)]
    assert any("exited 1" in n for n in notes) and any("timed out" in n for n in notes)


def test_hook_in_sandbox_cannot_write_outside_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside.txt"
    session, _ = session_with_hooks(workspace, {"before_tool": [{"command": f"echo x > {outside}; true"}]},
                                    {"turns": [{"tool_calls": [{"name": "echo", "input": {"text": "x"}}]}]})
    session.send("go")
    assert not outside.exists()


@pytest.mark.parametrize("section, message", [
    ({"before_everything": []}, "[hooks] before_everything: unknown key (known: after_tool, before_commit"),
    ({"before_tool": {"command": "x"}}, "[hooks] before_tool = a table: expected a list of tables "
                                        "([[hooks.before_tool]])"),
    ({"before_tool": [{"match": "*"}]}, "[hooks] before_tool #1: needs `command`"),
    ({"before_tool": [{"command": ""}]}, "[hooks.before_tool #1] command = \"\": must not be empty"),
    ({"before_tool": [{"command": "x", "when": 1}]}, "[hooks.before_tool #1] when: unknown key"),
])
def test_bad_hook_config(section: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        settings({"hooks": section})
    assert message in str(info.value)


def test_hooks_keep_their_order_within_an_event() -> None:
    hooks = parse_hooks(settings({"hooks": {"turn_end": [{"command": "a"}, {"command": "b", "sandbox": False}],
                                            "before_tool": [{"command": "c", "match": "bash"}]}}).hooks)
    assert [(h.event, h.command, h.sandbox) for h in hooks] == [("before_tool", "c", True), ("turn_end", "a", True),
                                                                ("turn_end", "b", False)]
