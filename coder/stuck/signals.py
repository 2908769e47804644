"""What one tool call means to the stuck detector: its identity, its result, whether it failed and how, what it
wrote. Computed from a `ToolCallFinished` event and the call's facts (its tool says what it is: `CallFacts`), so a
live session and a replayed trajectory (coder.stuck.replay turns other agents' steps into the same events) are
judged by the same code.

A shell line is read with `shlex` and a few regular expressions: good enough to tell `cat a.py` from `sed -i ...
a.py` (writes it) and `sleep 5; curl ...` (waits). Reads need no rule: a call asked or answered something new, or
it did not (coder/stuck/detector.py), whatever tool read what.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from coder.tools.base import CallFacts

_NUMBERS = re.compile(r"\b0x[0-9a-fA-F]+\b|\d+(\.\d+)?")
_SPACES = re.compile(r"\s+")
_ERROR_LINE = re.compile(r"(error|exception|traceback|failed|not found|no such file|cannot|invalid|denied|"
                         r"refused|did not appear|no replacement|not unique|syntax)", re.IGNORECASE)
_WRITE_SHELL = re.compile(r"(^|[;&|]\s*)(sed\s+-i|perl\s+-[a-z]*i|patch\b|git\s+(apply|checkout|restore|stash|am)\b|"
                          r"mv\s|cp\s|rm\s|touch\s|mkdir\s|tee\s|truncate\s)|[^>0-9&]>{1,2}(?!\s*/(dev/null|tmp/))\s*[\w./~-]|"
                          r"<<\s*['\"]?\w+['\"]?\s*>|\.write_text\(|\.write\(|open\([^)]*['\"][wa]['\"]",
                          re.MULTILINE)
_WAIT = re.compile(r"\b(sleep|wait|timeout|retry|until|watch)\b")
_PATHLIKE = re.compile(r"^[\w./~-]*[\w-]+\.(py|pyi|txt|md|rst|toml|cfg|ini|json|yaml|yml|js|ts|c|h|cpp|rs|go|java|"
                       r"sh|html|css|xml|csv|sql|lock|in)$|^[\w.~-]*/[\w./-]+$")
_SED_EXPR = re.compile(r"^[sy]([/|#,:]).*\1")  # `s/old/new/`: an expression, not a path
_HEREDOC_BODY = re.compile(r"<<\s*['\"]?(\w+)['\"]?.*?\n(.*?)\n\1\b", re.DOTALL)


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()[:16]


def normalize_output(text: str) -> str:
    """Output with the parts that change on every run (durations, addresses, counts) masked: two runs of the
    same failing test are "the same result" even though pytest prints a new duration."""
    return _SPACES.sub(" ", _NUMBERS.sub("N", text)).strip()


def error_signature(output: str) -> str:
    """The line that says what went wrong (the last one naming an error), numbers masked; the last non-empty
    line when none does. Two failures with the same signature failed "the same way"."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for line in reversed(lines[-40:]):
        if _ERROR_LINE.search(line):
            return normalize_output(line)[:200]
    return normalize_output(lines[-1])[:200] if lines else ""


@dataclass
class Call:
    """One finished tool call, reduced to what the patterns compare."""

    title: str  # the call as its tool names it, for people and the model
    action: str  # the call's identity: digest of the tool name + canonical input
    result: str  # digest of the normalized output
    failed: bool
    error: str  # error signature when failed, else ""
    waits: bool  # a polling command (sleep, retry, until ...): repeats are expected
    writes: set[str] = field(default_factory=set)
    wrote: bool = False  # changed the workspace (also when the paths are unknown)
    transitions: list[tuple[str, str, str]] = field(default_factory=list)  # (path, before, after) digests
    kind: str = ""  # what kind of call failed the same way: the tool's name


def call_from_event(tool: str, args: dict[str, Any], output: str, is_error: bool, files_changed: list[str],
                    data: dict[str, Any], facts: CallFacts) -> Call:
    exit_code = data.get("exit_code")
    failed = bool(is_error) or exit_code not in (None, 0)
    action = tool + " " + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    call = Call(facts.title, digest(action), digest(normalize_output(output)), failed,
                error_signature(output) if failed else "", bool(facts.shell and _WAIT.search(facts.shell)),
                kind=tool)
    if facts.shell is not None:
        _shell(call, facts.shell)
    elif facts.writes and not failed:
        _edit(call, args, facts)
    if files_changed and not failed:
        call.writes.update(files_changed)
        call.wrote = True
        if not call.transitions:  # a write the rules above did not read: its input is the file's new state
            call.transitions += [(path, "", digest(action)) for path in sorted(files_changed)[:3]]
    return call


def _edit(call: Call, args: dict[str, Any], facts: CallFacts) -> None:
    """A write by a tool that says so (its facts); the change, when the input has the shape of one (old and new
    text, a whole file), is what ping-pong compares."""
    call.wrote = True
    call.writes.update(facts.paths)
    path = facts.paths[0] if facts.paths else "?"
    if isinstance(args.get("old_str"), str):
        call.transitions.append((path, digest(args["old_str"]), digest(str(args.get("new_str") or ""))))
    elif isinstance(args.get("file_text"), str):
        call.transitions.append((path, "", digest(args["file_text"])))
    for edit in args.get("edits") or []:
        if isinstance(edit, dict) and isinstance(edit.get("old_str"), str):
            call.transitions.append((path, digest(edit["old_str"]), digest(str(edit.get("new_str") or ""))))


def _shell(call: Call, command: str) -> None:
    if not _WRITE_SHELL.search(command):
        return
    paths = command_paths(command)
    call.wrote = True  # `cat > t.py <<EOF ... && python t.py` wrote even when the run failed
    call.writes.update(paths)
    body = _HEREDOC_BODY.search(command)
    state = digest(body.group(2)) if body else digest(command)
    for path in sorted(paths)[:3] or ["?"]:
        call.transitions.append((path, "", state))


def command_paths(command: str) -> set[str]:
    """Words of a shell command that look like file paths (`a/b.py`, `setup.cfg`, `src/pkg/`)."""
    first = command.split("<<", 1)[0]
    try:
        words = shlex.split(first, comments=False)
    except ValueError:
        words = first.split()
    out: set[str] = set()
    for before, word in zip(["", *words], words, strict=False):
        if before == "cd":  # the directory it runs in, not a file it reads
            continue
        word = word.strip("'\",;()")
        if word.startswith("-") or "=" in word or "*" in word or len(word) > 200 or _SED_EXPR.match(word):
            continue
        if _PATHLIKE.match(word) and not word.startswith(("/dev/", "/tmp/")) and word not in (".", "..", "/"):
            out.add(word.rstrip("/"))
    return out
