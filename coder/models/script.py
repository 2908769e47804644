"""Script files: scripted model answers for tests, the offline demo and replays.

Format (JSON or YAML):

    {"turns": [
        {"text": "Let me look.", "tool_calls": [{"name": "bash", "input": {"command": "ls"}}]},
        {"thinking": "It is a Python project.", "text": "done"},
        {"when": "Summarize the conversation", "repeat": true, "text": "Summary: ..."}
    ]}

Each model request takes the next turn of the main sequence. A turn with `tool_calls` ends with stop_reason
`tool_use`; one without ends the turn (`end_turn`, or its own `stop_reason`). When the main sequence runs out,
the model answers "The script has no more turns." and ends the turn. A turn with `when` (a regular expression,
searched in the system prompt and in the last user message: its text and its tool results) is kept aside and
answers the first request that matches it, or every matching request when it also has `"repeat": true`. Such
requests do not shift the main sequence, so the compressor's or the reviewer's requests get their own answers.
`thinking` is returned only when the request enables extended thinking, as the real API does. A tool call may
name its `id`; otherwise ids are deterministic (`toolu_<request>_<n>`).

`ScriptCursor` is the one implementation of these rules, shared by the scripted provider and the fake server.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base.errors import ModelConfigError

EXHAUSTED_TEXT = "The script has no more turns."
_TURN_KEYS = {"text", "tool_calls", "thinking", "when", "repeat", "stop_reason", "web_search"}
_STOP_REASONS = {"end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn"}


@dataclass
class ScriptToolCall:
    name: str
    input: dict[str, Any]
    id: str | None = None


@dataclass
class Turn:
    text: str = ""
    tool_calls: list[ScriptToolCall] = field(default_factory=list)
    thinking: str = ""
    when: re.Pattern[str] | None = None
    repeat: bool = False
    stop_reason: str | None = None
    #: server-side web searches the model runs before its text (issue 35): {"query": ..., "results": [{"url",
    #: "title"}]}; the fake server answers them only when the request declares the web search tool. `"pending":
    #: true` (the last search only) leaves the call waiting, as the API does when the turn pauses (`stop_reason`
    #: pause_turn) or the model also calls a client tool: its result opens the answer that continues the turn
    web_search: list[dict[str, Any]] = field(default_factory=list)

    @property
    def final_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if self.tool_calls else "end_turn"


@dataclass
class Answer:
    """One served turn, with tool-call ids filled in."""

    turn: Turn
    index: int  # 1-based number of the request this answers
    tool_ids: list[str]
    exhausted: bool = False


@dataclass
class Script:
    turns: list[Turn]
    source: str = "<dict>"


def load_script(source: str | Path | dict[str, Any]) -> Script:
    """Parse a script from a path (JSON or YAML) or an already-parsed dict; ModelConfigError names the file and
    the reason when it is unreadable or malformed."""
    if isinstance(source, dict):
        return parse_script(source, "<dict>")
    path = Path(source)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelConfigError(f"Cannot read the script file {path}: {exc.strerror or exc}.") from exc
    except UnicodeDecodeError as exc:
        raise ModelConfigError(f"The script file {path} is not UTF-8 text: {exc}.") from exc
    if not raw.strip():
        raise ModelConfigError(f"The script file {path} is empty: it needs {{\"turns\": [...]}} (see docs/models.md).")
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            # start-up time: PyYAML loads only when this runs
            import yaml

            data = yaml.safe_load(raw)
        else:
            data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ModelConfigError(
            f"The script file {path} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
        ) from exc
    except Exception as exc:  # yaml.YAMLError; yaml is imported lazily
        raise ModelConfigError(f"The script file {path} is not valid YAML: {exc}.") from exc
    script = parse_script(data, str(path))
    script.source = str(path.resolve())  # absolute, so a session resumed from another directory finds it
    return script


def parse_script(data: Any, source: str) -> Script:
    def bad(reason: str) -> ModelConfigError:
        return ModelConfigError(f"The script {source} is malformed: {reason}. Expected {{\"turns\": [...]}}.")

    if isinstance(data, list):
        data = {"turns": data}
    if not isinstance(data, dict) or not isinstance(data.get("turns"), list):
        raise bad("the top level must be an object with a list under \"turns\"")
    turns = []
    for number, item in enumerate(data["turns"], start=1):
        if not isinstance(item, dict):
            raise bad(f"turn {number} is not an object")
        unknown = set(item) - _TURN_KEYS
        if unknown:
            raise bad(f"turn {number} has unknown keys {sorted(unknown)} (allowed: {sorted(_TURN_KEYS)})")
        text, thinking = item.get("text", ""), item.get("thinking", "")
        if not isinstance(text, str) or not isinstance(thinking, str):
            raise bad(f"turn {number}: \"text\" and \"thinking\" must be strings")
        calls = []
        raw_calls = item.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise bad(f"turn {number}: \"tool_calls\" must be a list")
        for call in raw_calls:
            if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
                raise bad(f"turn {number}: every tool call needs a \"name\"")
            tool_input = call.get("input", {})
            if not isinstance(tool_input, dict):
                raise bad(f"turn {number}: the input of tool call {call['name']!r} must be an object")
            call_id = call.get("id")
            calls.append(ScriptToolCall(call["name"], tool_input, str(call_id) if call_id else None))
        when = None
        if item.get("when") is not None:
            try:
                when = re.compile(str(item["when"]))
            except re.error as exc:
                raise bad(f"turn {number}: \"when\" is not a valid regular expression ({exc})") from exc
        stop = item.get("stop_reason")
        if stop is not None and stop not in _STOP_REASONS:
            raise bad(f"turn {number}: stop_reason must be one of {sorted(_STOP_REASONS)}")
        if not text and not calls and not thinking and stop is None:
            raise bad(f"turn {number} is empty (give it \"text\" or \"tool_calls\")")
        searches = item.get("web_search") or []
        if not isinstance(searches, list) or not all(isinstance(s, dict) and isinstance(s.get("query"), str)
                                                     for s in searches):
            raise bad(f"turn {number}: \"web_search\" is a list of {{\"query\": ..., \"results\": [...]}}")
        if stop == "pause_turn" and calls:
            raise bad(f"turn {number}: a paused turn leaves no client tool call waiting (server-tools page)")
        if any(s.get("pending") for s in searches[:-1]) or (
                searches and searches[-1].get("pending") and not calls and stop != "pause_turn"):
            raise bad(f"turn {number}: only the last search may be \"pending\", in a turn that pauses "
                      "(stop_reason pause_turn) or calls a client tool")
        turns.append(Turn(text, calls, thinking, when, bool(item.get("repeat", False)), stop, searches))
    return Script(turns, source)


class ScriptCursor:
    """Serves the turns of a script to successive requests (thread-safe: the fake server is threaded)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._main = [t for t in script.turns if t.when is None]
        self._conditional = [t for t in script.turns if t.when is not None]
        self._used: set[int] = set()  # indexes into _conditional of spent one-shot turns
        self._position = 0
        self._served = 0
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Turns left in the main sequence."""
        return len(self._main) - self._position

    def next(self, system: str = "", last_user: str = "", advance: bool = True) -> Answer:
        """The answer to a request with this system prompt and last user message. `advance=False` only looks
        (the fake server uses it for a response it is going to cut: a failed request must not use up a turn)."""
        with self._lock:
            served = self._served + 1
            turn = self._match(system, last_user, advance)
            exhausted = False
            if turn is None:
                if self._position < len(self._main):
                    turn = self._main[self._position]
                    if advance:
                        self._position += 1
                else:
                    turn, exhausted = Turn(text=EXHAUSTED_TEXT), True
            if advance:
                self._served = served
            ids = [c.id or f"toolu_{served:04d}_{i}" for i, c in enumerate(turn.tool_calls)]
            return Answer(turn, served, ids, exhausted)

    def skip(self, count: int) -> None:
        """Move the main sequence on by `count` turns (a resumed session already used them)."""
        with self._lock:
            self._position = min(len(self._main), self._position + max(0, count))
            self._served += max(0, count)

    def _match(self, system: str, last_user: str, advance: bool) -> Turn | None:
        for index, turn in enumerate(self._conditional):
            if index in self._used or turn.when is None:
                continue
            if turn.when.search(system) or turn.when.search(last_user):
                if advance and not turn.repeat:
                    self._used.add(index)
                return turn
        return None


def anthropic_match_text(body: dict[str, Any]) -> tuple[str, str]:
    """(system prompt, last user message text) of an Anthropic Messages body, for `when` matching."""
    system = body.get("system") or ""
    if isinstance(system, list):
        system = "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    last = ""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            last = _content_text(message.get("content"))
            break
    return str(system), last


def openai_match_text(body: dict[str, Any]) -> tuple[str, str]:
    """(system prompt, text of the messages after the last assistant message) of a chat-completions body."""
    messages = body.get("messages") or []
    system = "\n".join(_content_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer"))
    tail: list[str] = []
    for message in reversed(messages):
        if message.get("role") == "assistant":
            break
        if message.get("role") in ("user", "tool"):
            tail.append(_content_text(message.get("content")))
    return system, "\n".join(reversed(tail))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif block.get("type") == "tool_result":
            parts.append(_content_text(block.get("content")))
    return "\n".join(parts)
