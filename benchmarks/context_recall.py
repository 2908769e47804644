"""What the model still knows: recall of next-used facts in the requests a replayed session sent (issue 45).

Used by benchmarks/context.py. No model runs here, so what a compaction costs the model is measured by a proxy:

- **A fact** is a code-like token the real model used in an action (a tool call's input: the shell line, an
  editor's arguments) that it could only have learnt from an earlier tool output: a path (`pvlib/tools.py`; a
  leading `./` or mount point such as `/testbed/` left out), an identifier with an underscore or a capital inside
  (`_golden_sect_DataFrame`, `getValue`), a line number of three digits or more where a command addresses lines
  (`sed -n '1145,1165p'`, `awk 'NR>=1145'`, `vim +1145`, an editor's `view_range`), or a quoted string of six
  characters or more (`grep "def _process_raw_stack"`). It counts only when it is in no system or user text (the
  task), and when the first message of the trajectory that holds it is a tool output, not the model's own words.
  Identifiers, paths and numbers match whole (no letter, digit or `_` on either side); quoted strings anywhere.
- **Recall in the request**: the share of facts that are still in the request that led to the action (system
  prompt, messages, tool calls and results). **One `read_output` away**: also the facts found in a stored output
  whose `output://` handle is in that request.
- **Summaries**, credited three ways. The replay cannot write a real handoff (its narrative is filler of a size
  that follows what it summarises; benchmarks/context_session.py), so: `nothing`: only what coder copies into
  the handoff verbatim (the task, user messages, files touched, the last error and test result) is there;
  `extractive`: what a summary of that size could extract, a model-free stand-in defined by `extract` below;
  `everything`: every fact the summary request held (a perfect summary). A handoff carries the previous one, so
  each credit is chained from one summary to the next.
- **Steps acting on a lost fact**: the share of steps with a fact neither in the request nor one `read_output`
  away (credit `nothing`).
"""

from __future__ import annotations

import builtins
import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from coder.models.types import Message, TextBlock, ToolResultBlock, ToolUseBlock

CREDITS = ("nothing", "extractive", "everything")
HANDLE = re.compile(r"output://([0-9a-f]{16})")
#: file names by extension (a dotted name such as `np.sqrt` is not a path), or anything with a slash in it
EXTENSIONS = ("py|pyx|pyi|pxd|c|h|cc|cpp|hpp|rs|go|java|kt|js|jsx|ts|tsx|rb|php|json|toml|cfg|ini|txt|rst|md|"
              "yaml|yml|sh|html|css|xml|sql|csv|log|lock|in|patch|diff|dcm|j2")
PATH = re.compile(r"(?<![\w.@/-])((?:[\w.-]+/)+[\w.-]*\w|[\w-][\w.-]*\.(?:" + EXTENSIONS + r"))(?![\w/])")
IDENT = re.compile(r"(?<!\w)([A-Za-z_][A-Za-z0-9_]*)(?!\w)")
#: names every Python program knows (a builtin such as KeyError is not learnt from an output)
GENERIC = frozenset(dir(builtins))
LINE_ADDRESS = re.compile(r"(?:sed\s+(?:-\w+\s+)*['\"]?|NR\s*[<>=!]=?\s*|\svim?\s+\+|\sless\s+\+|view_range\W+)"
                          r"(\d{3,})(?:\s*[,:]\s*\+?(\d{3,}))?")
NUMBERED_LINE = re.compile(r"^\s*(\d{3,})(?::|\t|-)", re.MULTILINE)  # grep -n, cat -n, nl
HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1[^\n]*\n.*?^\s*\2\s*$", re.DOTALL | re.MULTILINE)
QUOTED = re.compile(r"'([^'\n]{6,200})'|\"([^\"\n]{6,200})\"")
#: the share of a handoff's characters the extractive stand-in spends on facts (the rest is the prose around them)
FACT_SHARE = 0.5
SUMMARY_MARKER = "Your context is about to be compacted"  # coder/context/replay.py: the summary instruction


@dataclass(frozen=True)
class Fact:
    kind: str  # path | ident | line | quote
    text: str

    def occurs(self, haystack: str) -> bool:
        return occurs(self.text, haystack, whole=self.kind != "quote")


def occurs(needle: str, haystack: str, whole: bool = True) -> bool:
    """`needle` in `haystack`; `whole`: with no letter, digit or `_` right before or after it."""
    start = haystack.find(needle)
    if not whole:
        return start >= 0
    while start >= 0:
        end = start + len(needle)
        before = haystack[start - 1] if start else " "
        after = haystack[end] if end < len(haystack) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = haystack.find(needle, start + 1)
    return False


def _norm_path(path: str) -> str:
    path = path.removeprefix("./")
    if path.startswith("/"):  # the mount point (/testbed, /repo, ...) is not what the model learnt
        path = path.split("/", 2)[-1] if path.count("/") >= 2 else path.lstrip("/")
    return path


def is_identifier(word: str) -> bool:
    """Specific enough to be a fact: four characters or more with an underscore inside or a capital after a small
    letter, and not a builtin or a dunder name (`__init__`) that any program knows."""
    return (len(word) >= 4 and word not in GENERIC and not (word.startswith("__") and word.endswith("__"))
            and ("_" in word.strip("_") or re.search(r"[a-z][A-Z]", word) is not None or word.startswith("_")))


def candidates(action: str) -> set[Fact]:
    """Every fact-shaped token of an action's text (whether it was learnt is decided against the trajectory)."""
    out: set[Fact] = set()
    spans: list[tuple[int, int]] = []
    for match in PATH.finditer(action):
        path = _norm_path(match.group(1))
        if len(path) >= 4 and any(c.isalpha() for c in path):
            out.add(Fact("path", path))
            spans.append(match.span())
    out |= {Fact("ident", m.group(1)) for m in IDENT.finditer(action) if is_identifier(m.group(1))
            and not any(a <= m.start() < b for a, b in spans)}  # a file's name is its path's fact
    for match in LINE_ADDRESS.finditer(action):
        out |= {Fact("line", n) for n in match.groups() if n}
    for match in QUOTED.finditer(HEREDOC.sub("", action)):  # quotes of the shell line, not of a script's code
        text = (match.group(1) or match.group(2)).strip()
        if len(text) >= 6:
            out.add(Fact("quote", text))
    return out


def action_text(message: Message) -> str:
    """What an action says: the string values of its tool calls' inputs."""
    return "\n".join(s for b in message.content if isinstance(b, ToolUseBlock) for s in strings(b.input))


def message_text(message: Message) -> str:
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            parts += strings(block.input)
        elif isinstance(block, ToolResultBlock):
            parts.append(block.content)
    return "\n".join(parts)


def strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON-like value (keys left out)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


@dataclass
class Trajectory:
    """The facts of each step of one trajectory, and the outputs by their `output://` id."""

    steps: list[set[Fact]]
    outputs: dict[str, str] = field(default_factory=dict)
    #: per step, where each fact was last seen before it: the model's own call or words, or an output N turns back
    sources: list[dict[Fact, str]] = field(default_factory=list)


def learnt_facts(system: str, messages: list[Message]) -> Trajectory:
    """For each action (assistant message) in order, the facts it used that it learnt from an earlier output."""
    given = system + "\n" + "\n".join(b.text for m in messages if m.role == "user" for b in m.content
                                      if isinstance(b, TextBlock))
    texts = [message_text(m) for m in messages]
    from_output = [m.role == "user" and any(isinstance(b, ToolResultBlock) for b in m.content) for m in messages]
    first_seen: dict[Fact, int] = {}

    def first(fact: Fact) -> int:
        if fact not in first_seen:
            first_seen[fact] = next((i for i, t in enumerate(texts) if fact.occurs(t)), len(texts))
        return first_seen[fact]

    steps: list[set[Fact]] = []
    sources: list[dict[Fact, str]] = []
    turns = [i for i, m in enumerate(messages) if m.role == "assistant"]
    for index, message in enumerate(messages):
        if message.role != "assistant":
            continue
        used = {f for f in candidates(action_text(message)) if not f.occurs(given)}
        steps.append({f for f in used if (i := first(f)) < index and from_output[i]})
        sources.append({f: _source(f, messages, texts, turns, index) for f in steps[-1]})
    outputs = {digest(b.content): b.content for m in messages for b in m.content if isinstance(b, ToolResultBlock)}
    return Trajectory(steps, outputs, sources)


def _source(fact: Fact, messages: list[Message], texts: list[str], turns: list[int], before: int) -> str:
    """Where `fact` was last seen before message `before`: "own call", "own words" or "output, A-B turns back"."""
    for i in range(before - 1, -1, -1):
        if not fact.occurs(texts[i]):
            continue
        if messages[i].role == "assistant":
            return "own call" if fact.occurs(action_text(messages[i])) else "own words"
        back = sum(1 for t in turns if i < t <= before)
        return next(f"output, {label} turns back" for top, label in ((1, "1"), (3, "2-3"), (10, "4-10"),
                                                                      (30, "11-30"), (10**9, "31+")) if back <= top)
    return "nowhere"


def digest(text: str) -> str:
    """The id coder.store.outputs.save_output gives `text`."""
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]


def body_text(body: dict[str, Any]) -> str:
    """Everything a request shows the model: system prompt, messages (texts, calls' inputs, results)."""
    system = body.get("system")
    parts = list(strings(system)) if not isinstance(system, str) else [system]
    for message in body.get("messages") or []:
        for block in message.get("content") if isinstance(message.get("content"), list) else [message]:
            if not isinstance(block, dict):
                continue
            for key in ("text", "content", "input"):
                if key in block:
                    parts += strings(block[key])
    return "\n".join(parts)


def _ranked_tokens(text: str, agent_text: str) -> list[str]:
    """Fact-shaped tokens of summarised text in the order the extractive stand-in keeps them: first those the agent
    itself named (in its words or calls: what it found worth naming), then the rest; newest first within each."""
    found: dict[str, int] = {}
    for pattern in (PATH, IDENT, NUMBERED_LINE):
        for match in pattern.finditer(text):
            token = match.group(1)
            if pattern is PATH:
                token = _norm_path(token.rstrip("."))
            elif pattern is IDENT and not is_identifier(token):
                continue
            if len(token) >= 3:
                found[token] = max(found.get(token, -1), match.start())
    named = {t for t in found if occurs(t, agent_text)}
    return sorted(found, key=lambda t: (t not in named, -found[t]))


def extract(summarised: str, agent_text: str, size_tokens: int) -> str:
    """The model-free stand-in for a handoff of `size_tokens`: the fact-shaped tokens of the text it summarises
    (paths, identifiers, the numbers of numbered lines), ranked by `_ranked_tokens`, as many as fit in
    FACT_SHARE of its characters (four a token)."""
    budget = int(size_tokens * 4 * FACT_SHARE)
    kept: list[str] = []
    for token in _ranked_tokens(summarised, agent_text):
        if budget < len(token) + 2:
            break
        kept.append(token)
        budget -= len(token) + 2
    return ", ".join(kept)


def _agent_text(body: dict[str, Any]) -> str:
    parts: list[str] = []
    for message in body.get("messages") or []:
        if message.get("role") == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict):
                    parts += strings(block.get("text", "")) if "text" in block else strings(block.get("input", {}))
    return "\n".join(parts)


@dataclass
class Scores:
    """Counts over steps; `result` turns them into the shares the report prints, `merge` adds results up."""

    facts: int = 0
    steps: int = 0
    steps_with_facts: int = 0
    present: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CREDITS, 0))
    reachable: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CREDITS, 0))
    lost_steps: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CREDITS, 0))
    lost_examples: list[str] = field(default_factory=list)
    #: where the facts missing from the request (credit `nothing`) were last seen (Trajectory.sources)
    missing_from: dict[str, int] = field(default_factory=dict)

    def result(self) -> dict[str, Any]:
        def share(n: int, d: int) -> float:
            return round(n / d, 4) if d else 1.0

        return {"facts": self.facts, "steps": self.steps, "steps_with_facts": self.steps_with_facts,
                "recall": {c: share(self.present[c], self.facts) for c in CREDITS},
                "recall_read": {c: share(self.reachable[c], self.facts) for c in CREDITS},
                "lost_step_share": {c: share(self.lost_steps[c], self.steps) for c in CREDITS},
                "counts": {"present": self.present, "reachable": self.reachable, "lost_steps": self.lost_steps},
                "missing_from": dict(sorted(self.missing_from.items(), key=lambda kv: -kv[1])),
                "lost_examples": self.lost_examples}


def merge(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The recall of several replays together (facts and steps pooled, not the shares averaged)."""
    total = Scores()
    for r in results:
        total.facts += r["facts"]
        total.steps += r["steps"]
        total.steps_with_facts += r["steps_with_facts"]
        for credit in CREDITS:
            total.present[credit] += r["counts"]["present"][credit]
            total.reachable[credit] += r["counts"]["reachable"][credit]
            total.lost_steps[credit] += r["counts"]["lost_steps"][credit]
        for where, n in r["missing_from"].items():
            total.missing_from[where] = total.missing_from.get(where, 0) + n
    return {k: v for k, v in total.result().items() if k != "lost_examples"}


def score(trajectory: Trajectory, bodies: Iterable[tuple[dict[str, Any], bool, int]],
          stored: dict[str, str] | None = None) -> Scores:
    """Recall over the requests of one replay, in the order sent: (body, is a summary call, the stand-in handoff's
    tokens). Main requests map to the trajectory's actions in order (the last, after the final result, has none).
    `stored`: outputs by id beyond the trajectory's own (a session's output store)."""
    outputs = {**trajectory.outputs, **(stored or {})}
    credit_text = dict.fromkeys(CREDITS, "")
    scores = Scores()
    step = 0
    for body, summary, size in bodies:
        text = body_text(body)
        if summary:
            credit_text["everything"] = text + "\n" + credit_text["everything"]
            summarised = text + "\n" + credit_text["extractive"]
            credit_text["extractive"] = extract(summarised, _agent_text(body), size)
            continue
        if step >= len(trajectory.steps):
            continue
        facts, sources = trajectory.steps[step], trajectory.sources[step]
        step += 1
        scores.steps += 1
        scores.facts += len(facts)
        scores.steps_with_facts += bool(facts)
        for credit in CREDITS:
            seen = text + "\n" + credit_text[credit] if credit_text[credit] else text
            handles = set(HANDLE.findall(seen))
            lost = False
            for fact in facts:
                if fact.occurs(seen):
                    scores.present[credit] += 1
                    scores.reachable[credit] += 1
                    continue
                if credit == "nothing":
                    scores.missing_from[sources[fact]] = scores.missing_from.get(sources[fact], 0) + 1
                if any(fact.occurs(outputs.get(h, "")) for h in handles):
                    scores.reachable[credit] += 1
                else:
                    lost = True
                    if credit == "nothing" and len(scores.lost_examples) < 6:
                        scores.lost_examples.append(f"step {step}: {fact.kind} {fact.text[:80]!r}")
            scores.lost_steps[credit] += lost
    return scores


def is_summary(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and SUMMARY_MARKER in body_text({"messages": messages[-1:]})
