"""Trajectories in two shapes: our event JSONL (as `coder sessions export` prints it) and the
mini-swe-agent `.traj.json` shape, so tools written for mini-swe-agent's runs (its inspector, the SWE-bench
leaderboard's trajectory checks) read ours too.

The `.traj.json` shape (trajectory_format "mini-swe-agent-1.1"): `{"info": {"exit_status", "submission",
"model_stats": {"instance_cost", "api_calls"}, ...}, "messages": [OpenAI-style chat messages with tool_calls and
role "tool" results], "trajectory_format", "instance_id"}`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coder import __version__

TRAJECTORY_FORMAT = "mini-swe-agent-1.1"

#: mini-swe-agent's exit statuses, by our exit reasons.
EXIT_STATUS = {"done": "Submitted", "max_turns": "LimitsExceeded", "max_cost": "LimitsExceeded",
               "wall_time": "TimeoutError", "interrupted": "Interrupted", "error": "Error",
               "stuck": "Stuck"}


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "tool_result":
                    parts.append(text_of(block.get("content", "")))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(p for p in parts if p)
    return "" if content is None else str(content)


def to_mini_messages(events: list[dict[str, Any]], system_prompt: str = "") -> list[dict[str, Any]]:
    """Our events as OpenAI-style chat messages, the way mini-swe-agent stores them."""
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    pending: list[str] = []  # tool_use ids of the last assistant message not yet answered, in order
    for ev in events:
        kind = ev.get("type")
        if kind == "session_start" and not system_prompt and ev.get("system_prompt"):
            messages.insert(0, {"role": "system", "content": str(ev["system_prompt"])})
        elif kind == "user_message":
            msg = ev.get("message")
            text = text_of(msg.get("content")) if isinstance(msg, dict) else str(ev.get("text") or msg or "")
            messages.append({"role": "user", "content": text})
        elif kind == "assistant_message":
            msg = ev.get("message") or {}
            content = msg.get("content") if isinstance(msg, dict) else msg
            calls = []
            pending = []
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    call_id = str(block.get("id") or f"call_{len(messages)}_{len(calls)}")
                    pending.append(call_id)
                    calls.append({"id": call_id, "type": "function",
                                  "function": {"name": block.get("name", ""),
                                               "arguments": json.dumps(block.get("input") or {})}})
            entry: dict[str, Any] = {"role": "assistant", "content": text_of(content)}
            if calls:
                entry["tool_calls"] = calls
            messages.append(entry)
        elif kind == "tool_call_finished":
            call_id = str(ev.get("tool_use_id") or ev.get("id") or (pending.pop(0) if pending else ""))
            if call_id in pending:
                pending.remove(call_id)
            output = text_of(ev.get("output"))
            messages.append({"role": "tool", "tool_call_id": call_id, "content": output,
                             "extra": {"tool": ev.get("tool"), "is_error": bool(ev.get("is_error"))}})
    return messages


def write_mini_trajectory(dest: Path, instance_id: str, events: list[dict[str, Any]], *, exit_reason: str,
                          patch: str, cost_usd: float, model: str, config: dict[str, Any]) -> dict[str, Any]:
    messages = to_mini_messages(events)
    api_calls = sum(1 for ev in events if ev.get("type") == "assistant_message")
    traj = {
        "info": {
            "exit_status": EXIT_STATUS.get(exit_reason, exit_reason),
            "submission": patch,
            "model_stats": {"instance_cost": cost_usd, "api_calls": api_calls},
            "mini_version": None,
            "coder_version": __version__,
            "config": {"model": {"model_name": model}, "coder": config},
        },
        "messages": messages,
        "trajectory_format": TRAJECTORY_FORMAT,
        "instance_id": instance_id,
    }
    tmp = dest.with_suffix(".tmp")
    tmp.write_text(json.dumps(traj, indent=1), encoding="utf-8")
    tmp.replace(dest)
    return traj
