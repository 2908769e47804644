"""Tier 2: observations older than the last K turns shrink to a one-line stub.

Two modes (`[context] mask`). "stale" masks only superseded observations: a later call made them stale (the same
file viewed again or edited since, the same command, a test run or a reproduction script, run again). "old" masks
every old observation, superseded or not (observation masking as in Lindenbauer et al. 2025, "The Complexity
Trap": as good as an LLM summary for solve rate, at a fraction of its cost), except what the handoff guarantees:
the last failure and the last test run stay whole, and tools whose contract says `maskable: false` (the task
list, the plan) are never touched. The model's own calls stay verbatim, so what it ran and which files it edited
stay in view; the full output stays readable behind an output:// handle, so masking forgets nothing for good.
Masking changes old messages, which invalidates the cached prefix from the first newly masked one on; the manager
therefore masks only at a compaction, in one large step, never a little every turn, and each step masks only
what came after the previous one, so the prefix before it stays cached.

What a call reads and writes is what its tool says (`CallFacts`: the shell line, the files a view shows or an
edit writes, whether its result may be masked at all); this module knows no tool by name.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.context.history import Observation, assistant_indexes, observations
from coder.models.types import Message
from coder.store.outputs import save_output
from coder.tools.base import CallFacts
from coder.tools.registry import describe

#: (tool name, input) -> what the call does, as its tool says
Describe = Callable[[str, dict[str, Any]], CallFacts]
#: shell commands whose single path argument is a read of that file
SHELL_READERS = {"cat", "head", "tail", "nl", "less", "more", "bat", "view", "open"}
#: flags that do not change what a test run tests
NOISE_FLAGS = re.compile(r"\s(-q|-v+|-x|-s|-rA|-ra|--tb=\S+|--no-header|-p no:\S+|--color=\S+|2>&1)(?=\s|$)")
EXIT_PATTERNS = [
    re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>"),
    re.compile(r"\bexit(?:ed with)?(?: code| status)?[:= ]\s*(-?\d+)", re.IGNORECASE),
    re.compile(r"\[exit (-?\d+)\]"),
]
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1([^\n]*)\n.*?^\s*\2\s*$", re.DOTALL | re.MULTILINE)
#: a shell line that runs a test suite: its last result stays unmasked (the handoff's "last test result")
TEST_RUN = re.compile(r"\b(pytest|py\.test|unittest|tox|nox|runtests?\.py"
                      r"|(go|cargo|npm|yarn|pnpm|mvn|gradle) (run )?test|make (test|check))\b")
#: how a masked output's stub starts (`stub`, `old_stub`)
STUBS = ("[stale output masked", "[old output masked")
ERROR_HINT = re.compile(r"Traceback \(most recent call last\)|\b\w*(Error|Exception)\b:|\bFAILED\b|\berror:",
                        re.IGNORECASE)


@dataclass
class Keys:
    """What one call reads (its result goes stale when these change) and what it writes."""

    reads: set[str]
    writes: set[str]


def command_of(obs: Observation, facts: CallFacts | None = None) -> str:
    """A short human line naming the call: the shell command, or the tool and its main arguments."""
    data = obs.input
    facts = facts if facts is not None else describe(obs.name, data)
    if facts.shell is not None:
        return facts.shell.strip()
    if "command" in data and "path" in data:
        return f"{obs.name} {data['command']} {data['path']}"
    parts = [f"{k}={v}" for k, v in data.items() if isinstance(v, (str, int, float)) and len(str(v)) < 80]
    return (obs.name + " " + " ".join(parts)).strip()


def exit_status(obs: Observation) -> str:
    """'exit N' when the output says so, else 'error' / 'ok' from the result flag."""
    head_tail = obs.content[:400] + obs.content[-400:]
    for pattern in EXIT_PATTERNS:
        match = pattern.search(head_tail)
        if match:
            return f"exit {match.group(1)}"
    if "exit_code" in obs.extra:
        return f"exit {obs.extra['exit_code']}"
    return "error" if obs.is_error else "ok"


def is_failure(obs: Observation) -> bool:
    """Whether this observation reports an error: a nonzero exit or the error flag; when the output states no
    exit status, a traceback or an error line. A script that exits 0 while printing "Error: ..." (a caught
    exception it was written to show) is not a failure."""
    status = exit_status(obs)
    if obs.is_error or (status.startswith("exit ") and status != "exit 0"):
        return True
    if status == "exit 0":
        return False
    return bool(ERROR_HINT.search(obs.content[-3000:]))


def _norm_path(path: str) -> str:
    return path.strip().strip("'\"").removeprefix("./")


def _split(command: str) -> list[list[str]]:
    """Simple commands of a shell line (split on && || ; |), each tokenised; unparsable parts are dropped."""
    parts = re.split(r"&&|\|\||;|\|", command)
    out = []
    for part in parts:
        try:
            tokens = shlex.split(part, posix=True)
        except ValueError:
            tokens = part.split()
        if tokens:
            out.append(tokens)
    return out


def shell_keys(command: str) -> Keys:
    reads, writes = _shell_keys(command)
    return Keys(set(reads), set(writes))


@functools.lru_cache(maxsize=8192)
def _shell_keys(command: str) -> tuple[frozenset[str], frozenset[str]]:
    """Cached: every compaction re-reads the whole history, and tokenising shell lines is the slow part."""
    reads: set[str] = set()
    writes: set[str] = set()
    normalized = " ".join(NOISE_FLAGS.sub(" ", " " + " ".join(command.split()) + " ").split())
    reads.add("cmd:" + normalized)
    for tokens in _split(command):
        prog, args = tokens[0], tokens[1:]
        paths = [a for a in args if not a.startswith("-") and not re.fullmatch(r"[\d,]+p?", a)]
        if prog in SHELL_READERS and len(paths) == 1:
            reads.add("file:" + _norm_path(paths[0]))
        elif prog == "sed" and "-n" in args and paths:
            reads.add("file:" + _norm_path(paths[-1]))
        elif prog == "sed" and any(a.startswith("-i") for a in args) and paths:
            writes.add("file:" + _norm_path(paths[-1]))
    # redirections write files; `->` / `=>` in code and the bodies of here-documents are not redirections
    for match in re.finditer(r"(?:^|[^>=-])>{1,2}\s*([\w./-]+)", HEREDOC.sub(r"\3", command)):
        if match.group(1) not in ("/dev/null", "&1", "&2"):
            writes.add("file:" + _norm_path(match.group(1)))
    return frozenset(reads), frozenset(writes)


def keys_of(obs: Observation, describe_call: Describe = describe) -> Keys:
    """What the call read (a later read or write of it makes the result stale) and what it wrote."""
    facts = describe_call(obs.name, obs.input)
    if facts.shell is not None:
        return shell_keys(facts.shell)
    files = {"file:" + _norm_path(p) for p in facts.paths}
    if files and facts.writes:  # an edit's own result shows the file as it was then: a later view or edit supersedes it
        return Keys(files, set(files))
    if files and facts.reads:
        return Keys(files, set())
    return Keys({f"call:{obs.name}:{sorted(obs.input.items())!r}"}, set())


def superseded(obs_list: list[Observation], describe_call: Describe = describe) -> set[str]:
    """ids of observations a later call made stale."""
    stale: set[str] = set()
    seen_later: set[str] = set()
    for obs in reversed(obs_list):
        keys = keys_of(obs, describe_call)
        if keys.reads & seen_later:
            stale.add(obs.tool_use_id)
        seen_later |= keys.reads | keys.writes
    return stale


def stub(obs: Observation, handle: str, facts: CallFacts | None = None) -> str:
    command = " ".join(command_of(obs, facts).split())
    if len(command) > 160:
        command = command[:150] + " …"
    return (f"[stale output masked: `{command}` ({exit_status(obs)}), superseded by a later call; "
            f"{len(obs.content)} chars at {handle}]")


def old_stub(obs: Observation, handle: str) -> str:
    """The stub of an old, not superseded output: the call stands just before it, so only its status and where the
    whole text is (a few tokens: every request after the compaction carries it)."""
    return f"[old output masked ({exit_status(obs)}); {len(obs.content)} chars: read_output {handle}]"


def is_test_run(facts: CallFacts) -> bool:
    return facts.shell is not None and bool(TEST_RUN.search(facts.shell))


@dataclass
class MaskTier:
    state_dir: Path
    recent_turns: int = 5
    #: results shorter than this are left alone: a stub would save next to nothing
    min_chars: int = 300
    #: what a call does, as its tool says (the built-in tools by default)
    describe: Describe = field(default=describe)
    #: "stale": only superseded observations; "old": every old one (see the module's docstring)
    mode: str = "stale"

    def floor(self, view: list[Message]) -> int:
        """The first message of `view` a later mask may change: the one holding the oldest output long enough to
        be masked that is not masked yet (len(view) when there is none). Masks only move forward, so everything
        before it stays byte for byte until the next summary: a cache breakpoint just before it lets that mask
        read the prefix from the cache however far back the mask starts."""
        for obs in observations(view):
            if (obs.result_index is not None and len(obs.content) >= self.min_chars
                    and not obs.content.startswith(STUBS) and self.describe(obs.name, obs.input).maskable):
                return obs.result_index
        return len(view)

    def run(self, history: list[Message], replacements: dict[str, str]) -> dict[str, str]:
        """Stubs for the observations outside the last `recent_turns` turns that the mode masks. The last failure
        is never masked (it is what the agent is working on), nor in "old" mode the last test run."""
        turns = assistant_indexes(history)
        if len(turns) <= self.recent_turns:
            return {}
        boundary = turns[-self.recent_turns] if self.recent_turns > 0 else len(history)
        obs_list = [o for o in observations(history) if o.result_index is not None]
        stale = superseded(obs_list, self.describe)
        failures = [o for o in obs_list if is_failure(o)]
        keep = {failures[-1].tool_use_id} if failures else set()
        facts_of = {o.tool_use_id: self.describe(o.name, o.input) for o in obs_list}
        tests = [o for o in obs_list if is_test_run(facts_of[o.tool_use_id])]
        if self.mode == "old" and tests:
            keep.add(tests[-1].tool_use_id)
        new: dict[str, str] = {}
        for obs in obs_list:
            masked = replacements.get(obs.tool_use_id, "").startswith(STUBS)
            if (obs.use_index >= boundary or obs.tool_use_id in keep or masked
                    or obs.tool_use_id not in stale and self.mode != "old"):
                continue
            facts = facts_of[obs.tool_use_id]
            if len(obs.content) < self.min_chars or not facts.maskable:
                continue
            handle = save_output(self.state_dir, obs.content)
            new[obs.tool_use_id] = (stub(obs, handle, facts) if obs.tool_use_id in stale
                                    else old_stub(obs, handle))
        return new
