"""Other agents' trajectories as our events, so the stuck detector can be measured on real runs.

Formats read (the ones in the shared data, see benchmarks/stuck.py):
- mini-swe-agent `.traj.json`: `messages` in the OpenAI chat shape (tool calls and `tool` results, or the older
  one-```bash-block-per-reply shape with `<returncode>` in the next user message), or a bare list of them;
- SWE-agent `.traj`: `trajectory` steps with `action`, `observation`, `thought`;
- SWE-agent request/response logs (`.jsonl`): one session per run of requests whose message list grows.

Each model step becomes an AssistantMessage and one ToolCallFinished per action, with `exit_code` when the
format records it; tokens per step where the format records them (SWE-agent `.traj` only has totals: spread
evenly). The other agents' vocabulary is translated here, and only here: their shell (`bash`, SWE-agent's actions)
becomes our shell, their editor (`str_replace_editor`, which speaks the protocol of ours) our editor, and
SWE-agent's own file commands (`edit 12:14`, `create`, `insert`) a write of the files they name
(`files_changed`), so the detector reads every run through our tools' facts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base import events as ev
from coder.tools.registry import builtin_by_protocol

#: the other agents' names for their shell and their editor (SWE-agent, mini-swe-agent)
OTHER_SHELL, OTHER_EDITOR = "bash", "str_replace_editor"
#: SWE-agent's own file commands (its tool bundles), as shell lines: `edit 12:14` (the open file), `create PATH`,
#: `insert N`, `str_replace_editor create|str_replace|insert|undo_edit PATH`
_SWE_AGENT_WRITE = re.compile(r"^\s*(edit\s+\d+:\d+|insert\s+\d+|create\s+(?P<path>\S+)|str_replace_editor\s+"
                              r"(create|str_replace|insert|undo_edit)\s+(?P<edited>\S+))", re.MULTILINE)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_BASH_BLOCK = re.compile(r"```(?:bash|sh)?\s*\n(.*?)```", re.DOTALL)
#: what an observation without a return code says when the action failed (SWE-agent's tools, str_replace_editor)
_FAILED_TEXT = re.compile(r"^(error|usage:)|traceback \(most recent call last\)|no replacement was performed|"
                          r"command not found|no such file or directory|your proposed edit has introduced new "
                          r"syntax error|did not appear verbatim|invalid `\w+` parameter", re.IGNORECASE | re.MULTILINE)


@dataclass
class ReplayStep:
    events: list[ev.Event]
    tokens: int = 0


@dataclass
class Run:
    name: str
    steps: list[ReplayStep] = field(default_factory=list)
    resolved: bool | None = None  # None: outcome not known
    exit_status: str = ""

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.steps)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def _finished(call_id: str, tool: str, args: dict[str, Any], output: str, exit_code: int | None) -> ev.Event:
    """A call of another agent's `tool` as ours: its shell and editor become our shell and editor, SWE-agent's
    file commands writes of their files."""
    failed = exit_code not in (None, 0) if exit_code is not None else bool(_FAILED_TEXT.search(output[:2000]))
    data = {"exit_code": exit_code} if exit_code is not None else {}
    ours = {OTHER_SHELL: builtin_by_protocol("bash_"), OTHER_EDITOR: builtin_by_protocol("text_editor_")}
    changed: list[str] = []
    command = str(args.get("command") or "")
    if tool == OTHER_SHELL and (write := _SWE_AGENT_WRITE.search(command)) and not failed:
        changed = [write.group("path") or write.group("edited") or "(the open file)"]
    return ev.ToolCallFinished(call_id, ours.get(tool, tool), args, output, failed if exit_code is None else False,
                               changed, 0.0, data)


def _assistant(text: str) -> ev.Event:
    return ev.AssistantMessage({"role": "assistant", "content": [{"type": "text", "text": text}]}, "tool_use")


def _usage(message: dict[str, Any]) -> int:
    usage = (((message.get("extra") or {}).get("response") or {}).get("usage")) or message.get("usage") or {}
    return int(usage.get("total_tokens") or (usage.get("prompt_tokens", 0) or 0)
               + (usage.get("completion_tokens", 0) or 0))


def chat_steps(messages: list[dict[str, Any]]) -> list[ReplayStep]:
    """OpenAI-shaped messages (tool calls, or one bash block per reply) as steps."""
    results = {m.get("tool_call_id"): _text(m.get("content")) for m in messages if m.get("role") == "tool"}
    steps: list[ReplayStep] = []
    for i, msg in enumerate(messages):
        if msg.get("role") != "assistant":
            continue
        events = [_assistant(_text(msg.get("content")))]
        calls = msg.get("tool_calls") or []
        for n, call in enumerate(calls):
            fn = call.get("function") or {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except json.JSONDecodeError:
                args = {"raw": fn.get("arguments")}
            output = results.get(call.get("id"), "")
            code = _RETURNCODE.search(output)
            events.append(_finished(call.get("id") or f"c{i}.{n}", str(fn.get("name") or "tool"),
                                    args if isinstance(args, dict) else {"raw": args}, output,
                                    int(code.group(1)) if code else None))
        if not calls:
            block = _BASH_BLOCK.search(_text(msg.get("content")))
            following = messages[i + 1] if i + 1 < len(messages) else {}
            if block and following.get("role") in ("user", "tool"):
                output = _text(following.get("content"))
                code = _RETURNCODE.search(output)
                events.append(_finished(f"c{i}", OTHER_SHELL, {"command": block.group(1).strip()}, output,
                                        int(code.group(1)) if code else None))
        steps.append(ReplayStep(events, _usage(msg)))
    return steps


def swe_agent_steps(data: dict[str, Any]) -> list[ReplayStep]:
    traj = data.get("trajectory") or []
    stats = (data.get("info") or {}).get("model_stats") or {}
    total = int(stats.get("tokens_sent", 0) or 0) + int(stats.get("tokens_received", 0) or 0)
    each = total // len(traj) if traj else 0
    steps = []
    for i, step in enumerate(traj):
        action = str(step.get("action") or "").strip()
        events: list[ev.Event] = [_assistant(str(step.get("thought") or step.get("response") or ""))]
        if action:
            events.append(_finished(f"s{i}", OTHER_SHELL, {"command": action}, str(step.get("observation") or ""),
                                    None))
        steps.append(ReplayStep(events, each))
    return steps


def interaction_runs(path: Path) -> list[tuple[str, list[ReplayStep]]]:
    """A request/response log holds several runs: a request whose message list is shorter than the previous
    one starts the next. Each run is its longest request's messages plus the last response."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    runs: list[list[dict[str, Any]]] = []
    last_len = 0
    for row in rows:
        if row.get("type") == "request":
            messages = (row.get("request_params") or {}).get("messages") or []
            if len(messages) < last_len or not runs:
                runs.append([])
            last_len = len(messages)
            runs[-1].append(row)
        elif row.get("type") == "response" and runs:
            runs[-1].append(row)
    out = []
    for k, rows_of_run in enumerate(runs):
        requests = [r for r in rows_of_run if r.get("type") == "request"]
        messages = list(requests[-1]["request_params"]["messages"])
        responses = [r for r in rows_of_run if r.get("type") == "response"]
        usage = [((r.get("response") or {}).get("usage")) or {} for r in responses]
        steps = chat_steps(messages)
        for step, u in zip(steps, usage, strict=False):  # responses in order: one per assistant message
            step.tokens = int(u.get("total_tokens", 0) or 0)
        out.append((f"{path.name}#{k + 1}", steps))
    return out


def load_runs(root: Path, index: Path | None = None) -> list[Run]:
    """Every trajectory under `root` (the shared data's `trajectories/`), with the outcomes `index.jsonl` knows."""
    index = index or root / "index.jsonl"
    known: dict[str, dict[str, Any]] = {}
    if index.is_file():
        for line in index.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                known[row["file"]] = row
    runs: list[Run] = []
    for path in sorted(_files(root)):
        rel = path.relative_to(root).as_posix()
        meta = known.get(rel, {})
        for name, steps, status in _read(path, rel):
            if steps:
                runs.append(Run(name, steps, meta.get("resolved"), str(meta.get("exit_status") or status or "")))
    return runs


def _files(root: Path) -> Iterable[Path]:
    for pattern in ("**/*.traj.json", "**/*.traj", "**/interactions_*.jsonl"):
        yield from root.glob(pattern)


def _read(path: Path, rel: str) -> list[tuple[str, list[ReplayStep], str]]:
    if path.suffix == ".jsonl":
        return [(name, steps, "") for name, steps in interaction_runs(path)]
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, list):
        return [(rel, chat_steps(data), "")]
    status = str((data.get("info") or {}).get("exit_status") or "")
    if "messages" in data:
        return [(rel, chat_steps(data["messages"]), status)]
    return [(rel, swe_agent_steps(data), status)]
