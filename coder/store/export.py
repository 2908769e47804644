"""Trajectories out: a stored session in the Agent Data Protocol's shape (schema 1.2.0).

Our own format is the event JSONL of `coder sessions export ID` (documented in docs/sessions.md). ADP is the
interlingua for fine-tuning datasets: user text is a text_observation from "user", the assistant's prose a
message_action, a shell command a code_action (bash), any other tool call an api_action, and each tool result a
text_observation from "environment". Thinking goes to the next action's reasoning_content.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ADP_SCHEMA_VERSION = "1.2.0"
#: ADP's word for a shell command's language
ADP_SHELL_LANGUAGE = "bash"


#: what a tool call's shell line is (None: not a shell), asked of its tool: `coder.tools.registry.describe(name,
#: args).shell` (the store sits below the tools, so the caller hands it in)
ShellOf = Callable[[str, dict[str, Any]], str | None]


def _action_for_tool(name: str, args: dict[str, Any], description: str, shell_of: ShellOf) -> dict[str, Any]:
    shell = shell_of(name, args)
    if shell:  # a call that runs no line (a shell restart) is an api_action
        return {"class_": "code_action", "language": ADP_SHELL_LANGUAGE, "content": shell,
                "description": description}
    action: dict[str, Any] = {"class_": "api_action", "function": name, "kwargs": args}
    if description:
        action["description"] = description
    return action


def to_adp(row: Any, events: list[dict[str, Any]], shell_of: ShellOf) -> dict[str, Any]:
    """One ADP trajectory from a session row and its event dicts (in order); a call whose tool runs a shell line
    (`shell_of`) is a code_action."""
    content: list[dict[str, Any]] = []
    finished: dict[str, dict[str, Any]] = {e["id"]: e for e in events if e["type"] == "tool_call_finished"}
    for event in events:
        kind = event["type"]
        if kind == "user_message":
            content.append({"class_": "text_observation", "content": event["text"], "source": "user"})
        elif kind == "assistant_message":
            blocks = event["message"]["content"]
            thinking = "\n".join(b["thinking"] for b in blocks if b["type"] == "thinking")
            text = "".join(b["text"] for b in blocks if b["type"] == "text")
            uses = [b for b in blocks if b["type"] == "tool_use"]
            if not uses:
                action = {"class_": "message_action", "content": text}
                if thinking:
                    action["reasoning_content"] = thinking
                content.append(action)
                continue
            for i, use in enumerate(uses):
                action = _action_for_tool(use["name"], use["input"], text if i == 0 else "", shell_of)
                if thinking and i == 0:
                    action["reasoning_content"] = thinking
                content.append(action)
                result = finished.get(use["id"])
                output = result["output"] if result else "(no result: the session stopped)"
                content.append({"class_": "text_observation", "content": output, "source": "environment",
                                "name": use["name"]})
    return {
        "schema_version": ADP_SCHEMA_VERSION,
        "id": row.id,
        "content": content,
        "details": {"agent": "coder", "model": row.model, "workspace": row.workspace, "status": row.status},
    }
