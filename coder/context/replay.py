"""Real agent trajectories as our history, to replay them through the context manager (benchmarks/context.py).

Reads SWE-agent `.traj` (plain action and function-calling histories) and mini-swe-agent `.traj.json` (tool-call
messages, or the older text protocol with the command in a fenced block). Every action becomes a tool call and
every observation its result, with SWE-agent's editor commands mapped to our editor tool (open/goto/scroll are
views of the open file, edit/create/insert are edits of it), so superseded views and repeated runs are
recognisable exactly as in a session of ours. Our shell and our editor are found by the protocol they speak (the
`anthropic_type` of their contracts), not by name.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.base.errors import UsageError
from coder.context.history import repair_pairing
from coder.models.types import Block, Message, TextBlock, ToolResultBlock, ToolUseBlock
from coder.tools.registry import builtin_by_protocol

#: our tools that speak the protocols other agents' shells and editors map to (input `command` / `path`)
SHELL = builtin_by_protocol("bash_")
EDITOR = builtin_by_protocol("text_editor_")
FENCE = re.compile(r"```(?:mswea_bash_command|bash|sh)?\s*\n(.*?)\n```", re.DOTALL)


@dataclass
class Replay:
    name: str
    fmt: str
    system: str
    messages: list[Message]


class _SweAgentMapper:
    """SWE-agent commands -> our tool calls; remembers the open file like SWE-agent's editor does."""

    def __init__(self) -> None:
        self.current = ""

    def call(self, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        path = str(args.get("path") or args.get("filename") or args.get("file_name") or "")
        if name == "bash":
            return self.action(str(args.get("command", "")))
        if name == "str_replace_editor":
            if args.get("path"):
                self.current = str(args["path"])
            return EDITOR, dict(args)
        if name in ("open", "create"):
            self.current = path or self.current
            return EDITOR, {"command": "view" if name == "open" else "create", "path": self.current}
        if name in ("goto", "scroll_down", "scroll_up"):
            return EDITOR, {"command": "view", "path": self.current}
        if name in ("edit", "insert", "append"):
            return EDITOR, {"command": "str_replace", "path": path or self.current,
                            "new_str": str(args.get("replace") or args.get("replacement_text") or args)}
        text = " ".join([name] + [str(v) for v in args.values()])
        return SHELL, {"command": text}

    def action(self, action: str) -> tuple[str, dict[str, Any]]:
        first, _, rest = action.strip().partition("\n")
        try:
            words = shlex.split(first)
        except ValueError:
            words = first.split()
        if not words:
            return SHELL, {"command": action.strip()}
        verb, args = words[0], words[1:]
        if verb in ("open", "create") and args:
            return self.call(verb, {"path": args[0]})
        if verb in ("goto", "scroll_down", "scroll_up"):
            return self.call(verb, {})
        if verb in ("edit", "insert", "append"):
            return self.call(verb, {"replace": rest})
        return SHELL, {"command": action.strip()}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
    return "" if content is None else str(content)


def _from_messages(raw: list[dict[str, Any]], sweagent: bool) -> tuple[str, list[Message]]:
    """Chat messages (system/user/assistant/tool) of either agent -> (system, our messages)."""
    mapper = _SweAgentMapper()
    system_parts: list[str] = []
    out: list[Message] = []
    pending: list[str] = []  # ids of tool calls of the last assistant message still waiting for a result
    counter = 0
    for item in raw:
        role, content = item.get("role"), _text(item.get("content"))
        if role == "system":
            system_parts.append(content)
        elif role == "assistant":
            blocks: list[Any] = []
            thought = item.get("thought") if sweagent and item.get("thought") is not None else content
            if str(thought).strip():
                blocks.append(TextBlock(str(thought)))
            calls = item.get("tool_calls") or []
            pending = []
            for call in calls:
                fn = call.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except json.JSONDecodeError:
                    args = {"command": fn.get("arguments", "")}
                name = fn.get("name", "bash")
                name, args = mapper.call(name, args) if sweagent else (SHELL, args)
                counter += 1
                call_id = call.get("id") or f"call_{counter}"
                blocks.append(ToolUseBlock(call_id, name, args))
                pending.append(call_id)
            if not calls:
                action = item.get("action") if sweagent else None
                if action is None and not sweagent:
                    match = FENCE.search(content)
                    action = match.group(1) if match else None
                if action and str(action).strip():
                    name, args = mapper.action(str(action)) if sweagent else (SHELL, {"command": str(action)})
                    counter += 1
                    blocks.append(ToolUseBlock(f"call_{counter}", name, args))
                    pending = [f"call_{counter}"]
            out.append(Message("assistant", blocks or [TextBlock("(no text)")]))
        elif role == "tool" and pending:
            ids = item.get("tool_call_ids") or [item.get("tool_call_id")]
            call_id = str(ids[0]) if ids and ids[0] in pending else pending[0]
            pending.remove(call_id)
            result: list[Block] = [ToolResultBlock(call_id, content)]
            out.append(Message("user", result))
        elif role in ("user", "tool"):
            if pending:  # text protocol: the next user message is the observation
                out.append(Message("user", [ToolResultBlock(pending.pop(0), content)]))
            else:
                out.append(Message("user", [TextBlock(content)]))
    return "\n\n".join(system_parts), repair_pairing(out)


def load_trajectory(path: Path) -> Replay:
    """One trajectory file -> Replay; UsageError for files of another kind."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read trajectory {path}: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("history"), list):
        system, messages = _from_messages(data["history"], sweagent=True)
        fmt = "swe-agent"
    elif isinstance(data, dict) and isinstance(data.get("messages"), list):
        system, messages = _from_messages(data["messages"], sweagent=False)
        fmt = str(data.get("trajectory_format", "mini-swe-agent"))
    elif isinstance(data, list) and data and isinstance(data[0], dict) and "role" in data[0]:
        system, messages = _from_messages(data, sweagent=False)
        fmt = "mini-swe-agent-text"
    else:
        raise UsageError(f"{path} is not a SWE-agent .traj or mini-swe-agent .traj.json trajectory")
    # drop a trailing call without an answer: it was never sent back to the model
    while messages and (messages[-1].role == "assistant"):
        messages.pop()
    return Replay(path.name, fmt, system, messages)


def find_trajectories(paths: list[Path]) -> list[Path]:
    """Files given directly, and `*.traj` / `*.traj.json` under folders, sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.name.endswith((".traj", ".traj.json")))
        elif path.exists():
            found.append(path)
        else:
            raise UsageError(f"no such trajectory file or folder: {path}")
    return found


#: the text the fake server answers a compaction's summary request with (the replay sizes it: context_session.py)
SUMMARY_TEXT = "## Intent\nReplayed session.\n## Decisions\n" + "decision and why; " * 20
#: what marks a summary request: the start of prompts/compact.md's instruction
SUMMARY_MARKER = "Your context is about to be compacted"


def session_job(replay: Replay, workspace: Path, record: Path, model: str) -> dict[str, Any]:
    """What benchmarks/context_session.py needs to replay `replay` through a real session: a fake-server script
    whose turns are the trajectory's assistant turns (then "Done." after the last result, and a short answer to every
    summary request, which the replay sizes), the recorded observation of each call by its id, and the user
    messages in order.
    Ids are made safe for the API and unique (one SWE-agent demonstration repeats one)."""
    turns: list[dict[str, Any]] = []
    outputs: dict[str, str] = {}
    users: list[str] = []
    renamed: dict[str, str] = {}
    for message in replay.messages:
        if message.role == "assistant":
            calls = []
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    safe = re.sub(r"[^a-zA-Z0-9_-]", "_", block.id)[:60] or "call"
                    while safe in outputs or safe in renamed.values():
                        safe += "_"
                    renamed[block.id] = safe
                    outputs[safe] = ""
                    calls.append({"name": block.name, "input": block.input, "id": safe})
            text = "\n".join(b.text for b in message.content if isinstance(b, TextBlock)).strip()
            turns.append({"text": text, "tool_calls": calls} if calls else {"text": text or "(no text)"})
            continue
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                outputs[renamed.get(block.tool_use_id, block.tool_use_id)] = block.content
        texts = [b.text for b in message.content if isinstance(b, TextBlock)]
        if texts:
            users.append("\n".join(texts))
    turns.append({"text": "Done."})
    turns.append({"when": re.escape(SUMMARY_MARKER), "repeat": True, "text": SUMMARY_TEXT})
    tools = sorted({c["name"] for t in turns for c in t.get("tool_calls", [])})
    return {"script": {"turns": turns}, "observations": outputs, "user_messages": users, "replayed_tools": tools,
            "workspace": str(workspace), "record": str(record), "model": f"anthropic:{model}",
            "summary_marker": SUMMARY_MARKER, "summary_ratio": 0.1}
