"""The patterns: fed the session's events, after each model step it says which patterns are active and how strong.

A step is one model response and the tool calls it made. A step makes progress when it brought something new
(issue 32: agents read code with `sed -n` ranges and `grep`, and a detector that only counted new files stopped
them): a call never made before, an output never seen before (a test whose result changed), a change to the
workspace, a change to the task list. What is left is repetition with no new information, and only that is
counted as "no progress" or "the same message again". The detector keeps a bounded history of steps (the largest
window in the thresholds), the digests of the calls and outputs seen, and a few counters; it never looks at
files, only at events, so coder.stuck.replay can feed it other agents' trajectories and the benchmark measures the
very code sessions run.
"""

from __future__ import annotations

import copy
import json
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base import events as ev
from coder.config.stuck import StuckSettings
from coder.stuck.signals import Call, call_from_event, digest
from coder.tools.base import one_line
from coder.tools.registry import describe

DEFAULT_THRESHOLDS = Path(__file__).with_name("thresholds.json")
PATTERNS = ("repeat", "same_error", "ping_pong", "no_progress", "same_text")


@dataclass
class Thresholds:
    """The data in thresholds.json (merged with the user's `[stuck]` overrides)."""

    patterns: dict[str, dict[str, Any]]
    nudges_before_stop: int = 2

    def of(self, pattern: str, key: str, default: float = 0) -> float:
        return float(self.patterns.get(pattern, {}).get(key, default))

    def enabled(self, pattern: str) -> bool:
        return pattern in self.patterns and self.patterns[pattern].get("enabled", True) is not False

    @property
    def history(self) -> int:
        return max([int(self.of(p, "window", 0)) for p in PATTERNS] + [1])


def load_thresholds(overrides: StuckSettings | None = None, path: Path = DEFAULT_THRESHOLDS) -> Thresholds:
    """The shipped thresholds, with the user's `[stuck]` (checked at load: coder/config/stuck.py) on top."""
    data = json.loads(path.read_text(encoding="utf-8"))
    patterns = copy.deepcopy(data["patterns"])
    nudges = int(data.get("nudges_before_stop", 2))
    if overrides is not None:
        if overrides.nudges_before_stop is not None:
            nudges = overrides.nudges_before_stop
        for name, values in overrides.pattern_overrides().items():
            patterns[name].update(values)
    return Thresholds(patterns, nudges)


@dataclass
class Detection:
    pattern: str
    key: str  # what exactly repeats (a digest); the guard escalates per key
    strength: int  # the pattern's count now (calls, steps or reversals)
    detail: str  # for people and for the model: what repeats


@dataclass
class Step:
    calls: list[Call] = field(default_factory=list)
    text: str = ""
    progress: bool = False  # it brought something new (set when the step closes)


def _label(call: Call) -> str:
    """`bash: git status --short`: the call as its tool names it, cut for a line."""
    return f"`{call.title if len(call.title) <= 90 else call.title[:89] + '…'}`"


class Detector:
    def __init__(self, thresholds: Thresholds) -> None:
        self.t = thresholds
        self.steps: deque[Step] = deque(maxlen=thresholds.history)
        self.current = Step()
        self.index = 0  # steps closed so far
        self.last_write = -1  # index of the last step that changed the workspace
        self.last_progress = -1
        self.actions: set[str] = set()  # digests of every call made since the task began
        self.results: set[str] = set()  # digests of every (normalized) output seen
        self.task_list_changed = False  # in the step being made
        self.states: dict[str, list[str]] = {}  # path -> digests of its written states
        self.replacements: dict[str, set[tuple[str, str]]] = {}  # path -> (before, after) of its replacements
        self.reversals: deque[tuple[int, str]] = deque()  # (step index, path)

    def reset(self) -> None:
        """A new user message: whatever repeated before, the task changed."""
        self.__init__(self.t)  # type: ignore[misc]

    def observe(self, event: ev.Event) -> None:
        if isinstance(event, ev.UserMessage):
            self.reset()
        elif isinstance(event, ev.AssistantMessage):
            texts = [b.get("text", "") for b in event.message.get("content", []) if b.get("type") == "text"]
            self.current.text = " ".join(" ".join(texts).split())
        elif isinstance(event, ev.TodoUpdated):
            self.task_list_changed = True
        elif isinstance(event, ev.ToolCallFinished):
            facts = describe(event.tool, event.input)
            self.current.calls.append(call_from_event(event.tool, event.input, event.output, event.is_error,
                                                      event.files_changed, event.data, facts))

    def end_step(self) -> list[Detection]:
        """Close the current step; the patterns active after it."""
        step, self.current = self.current, Step()
        self._progress(step)
        self.steps.append(step)
        found: list[Detection] = []
        for pattern in PATTERNS:
            if self.t.enabled(pattern):
                found.extend(getattr(self, "_" + pattern)(step))
        self.index += 1
        return found

    # ---- bookkeeping ------------------------------------------------------------------------------------------
    def _progress(self, step: Step) -> None:
        i = self.index
        step.progress, self.task_list_changed = self.task_list_changed, False
        for call in step.calls:
            if call.wrote or call.action not in self.actions or call.result not in self.results:
                step.progress = True  # a change, a new question, or a new answer
            if call.wrote:
                self.last_write = i
            self.actions.add(call.action)
            self.results.add(call.result)
        if step.progress:
            self.last_progress = i
        for call in step.calls:
            for path, before, after in call.transitions:
                if before == "":
                    seq = self.states.setdefault(path, [])
                    seq.append(after)
                    if len(seq) >= 3 and seq[-1] == seq[-3] != seq[-2]:
                        self.reversals.append((i, path))
                else:
                    done = self.replacements.setdefault(path, set())
                    if (after, before) in done:
                        self.reversals.append((i, path))
                    done.add((before, after))

    def _recent(self, window: float) -> list[tuple[int, Step]]:
        """(index, step) of the steps within `window` of now and after the last workspace change."""
        first = max(self.index - int(window) + 1, min(self.last_write + 1, self.index))
        start = self.index - len(self.steps) + 1
        return [(start + k, s) for k, s in enumerate(self.steps) if start + k >= first]

    # ---- the patterns -----------------------------------------------------------------------------------------
    def _repeat(self, step: Step) -> list[Detection]:
        window = self.t.of("repeat", "window", 20)
        out = []
        for call in step.calls:
            if call.wrote:
                continue
            count = sum(1 for _, s in self._recent(window) for c in s.calls
                        if c.action == call.action and c.result == call.result)
            need = self.t.of("repeat", "nudge_at", 3) * (self.t.of("repeat", "wait_factor", 1) if call.waits else 1)
            if count >= need:
                out.append(Detection("repeat", call.action + call.result, count,
                                     f"{_label(call)} ran {count} times with the same result"))
        return _strongest(out)

    def _same_error(self, step: Step) -> list[Detection]:
        window = self.t.of("same_error", "window", 20)
        out = []
        for call in step.calls:
            if not call.failed or not call.error:
                continue
            count = sum(1 for _, s in self._recent(window) for c in s.calls
                        if c.failed and c.kind == call.kind and c.error == call.error)
            if count >= self.t.of("same_error", "nudge_at", 4) and not call.waits:
                out.append(Detection("same_error", digest(call.kind + call.error), count,
                                     f"{count} {call.kind} calls failed the same way ({one_line(call.error, 120)}); "
                                     f"the last: {_label(call)}"))
        return _strongest(out)

    def _ping_pong(self, step: Step) -> list[Detection]:
        window = self.t.of("ping_pong", "window", 30)
        while self.reversals and self.reversals[0][0] <= self.index - window:
            self.reversals.popleft()
        counts: dict[str, int] = {}
        for _, path in self.reversals:
            counts[path] = counts.get(path, 0) + 1
        touched = {p for c in step.calls for p, _, _ in c.transitions}
        return _strongest([Detection("ping_pong", digest(path), n, f"{path} went back to an earlier state {n} times")
                           for path, n in counts.items() if path in touched
                           and n >= self.t.of("ping_pong", "nudge_at", 2)])

    def _no_progress(self, step: Step) -> list[Detection]:
        idle = self.index - self.last_progress
        if idle >= self.t.of("no_progress", "nudge_at", 30):
            return [Detection("no_progress", "no_progress", idle,
                              f"{idle} steps that only repeated earlier calls and outputs (nothing new was run, "
                              "read or changed)")]
        return []

    def _same_text(self, step: Step) -> list[Detection]:
        """The same message on steps that brought nothing new: a fixed "Let me look further." while reading on
        is no loop."""
        if len(step.text) < self.t.of("same_text", "min_chars", 20) or step.progress:
            return []
        count = sum(1 for _, s in self._recent(self.t.of("same_text", "window", 20))
                    if s.text == step.text and not s.progress)
        if count >= self.t.of("same_text", "nudge_at", 3):
            return [Detection("same_text", digest(step.text), count,
                              f"the same message ({one_line(step.text, 80)!r}) {count} times")]
        return []


def _strongest(found: list[Detection]) -> list[Detection]:
    """One detection per key (a step may repeat the same call twice)."""
    best: dict[str, Detection] = {}
    for d in found:
        if d.key not in best or d.strength > best[d.key].strength:
            best[d.key] = d
    return list(best.values())
