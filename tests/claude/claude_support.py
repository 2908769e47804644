"""Helpers for the Claude Code compatibility tests: a `.claude/` folder written as Claude Code's docs show, and a
session opened on it through the real builder (scripted model, real sandbox, real git)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coder.base import events as ev
from coder.engine.builder import Opened, SessionOptions, open_session
from coder.models.types import TextBlock


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path


def write_script(path: Path, turns: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def hook(command: str, matcher: str | None = None, timeout: float | None = None) -> dict[str, Any]:
    """One matcher group with one command hook, in settings.json's shape."""
    entry: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        entry["timeout"] = timeout
    group: dict[str, Any] = {"hooks": [entry]}
    if matcher is not None:
        group["matcher"] = matcher
    return group


def open_on(repo: Path, model: str, *, trust: bool | None = True, mode: str = "auto") -> tuple[Opened, list[ev.Event]]:
    seen: list[ev.Event] = []
    opened = open_session(SessionOptions(cwd=repo, model=model, permission_mode=mode, trust=trust), seen.append)
    return opened, seen


def texts_sent(opened: Opened) -> list[str]:
    """Every text block of the session's history (what the model was sent)."""
    return [b.text for m in opened.session.history for b in m.content if isinstance(b, TextBlock)]


def finished(seen: list[ev.Event]) -> list[ev.ToolCallFinished]:
    return [e for e in seen if isinstance(e, ev.ToolCallFinished)]
