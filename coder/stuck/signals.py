"""What one tool call means to the stuck detector: its identity, its result, whether it failed and how, which
files it read or wrote. Computed from a `ToolCallFinished` event alone, so a live session and a replayed
trajectory (coder.stuck.replay turns other agents' shell steps into the same events) are judged by the same code.

Shell commands are read with `shlex` and a few regular expressions: good enough to tell `cat a.py` (reads a.py)
from `sed -i ... a.py` (writes it) and `sleep 5; curl ...` (waits). A command the rules do not understand reads
nothing and writes nothing, which can only make "no progress" fire later, never earlier on a real change.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

#: tools whose successful call changes the task list (issue 19's plan/todo tools, whatever they are called)
TASK_LIST_HINTS = ("todo", "plan", "task_list")
#: tools that change files (their `files_changed` says which); `view` through the editor tool only reads
EDIT_TOOLS = ("str_replace_based_edit_tool", "str_replace_editor", "apply_patch", "edit", "write", "create")

_NUMBERS = re.compile(r"\b0x[0-9a-fA-F]+\b|\d+(\.\d+)?")
_SPACES = re.compile(r"\s+")
_ERROR_LINE = re.compile(r"(error|exception|traceback|failed|not found|no such file|cannot|invalid|denied|"
                         r"refused|did not appear|no replacement|not unique|syntax)", re.IGNORECASE)
_WRITE_SHELL = re.compile(r"(^|[;&|]\s*)(sed\s+-i|perl\s+-[a-z]*i|patch\b|git\s+(apply|checkout|restore|stash|am)\b|"
                          r"mv\s|cp\s|rm\s|touch\s|mkdir\s|tee\s|truncate\s)|[^>0-9&]>{1,2}(?!\s*/(dev/null|tmp/))\s*[\w./~-]|"
                          r"<<\s*['\"]?\w+['\"]?\s*>|\.write_text\(|\.write\(|open\([^)]*['\"][wa]['\"]",
                          re.MULTILINE)
#: SWE-agent's own file commands (its tool bundles): `edit`, `create`, `str_replace_editor create|str_replace|...`
_SWE_AGENT_WRITE = re.compile(r"^\s*(edit\s+\d+:\d+|create\s+\S|str_replace_editor\s+(create|str_replace|insert|"
                              r"undo_edit)\b|insert\s+\d+)", re.MULTILINE)
_SWE_AGENT_READ = re.compile(r"^\s*(open|str_replace_editor\s+view|cat|head|tail|less|nl|sed\s+-n)\s+\"?([\w./-]+)",
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

    tool: str
    action: str  # the call's identity: tool name + canonical input
    result: str  # digest of the normalized output
    failed: bool
    error: str  # error signature when failed, else ""
    waits: bool  # a polling command (sleep, retry, until ...): repeats are expected
    reads: set[str] = field(default_factory=set)
    writes: set[str] = field(default_factory=set)
    wrote: bool = False  # changed the workspace (also when the paths are unknown)
    task_list: bool = False  # changed the task list
    transitions: list[tuple[str, str, str]] = field(default_factory=list)  # (path, before, after) digests


def call_from_event(tool: str, args: dict[str, Any], output: str, is_error: bool, files_changed: list[str],
                    data: dict[str, Any]) -> Call:
    exit_code = data.get("exit_code")
    failed = bool(is_error) or exit_code not in (None, 0)
    command = args.get("command") if isinstance(args.get("command"), str) else None
    action = tool + " " + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    call = Call(tool, digest(action), digest(normalize_output(output)), failed,
                error_signature(output) if failed else "", bool(command and _WAIT.search(command)))
    lowered = tool.lower()
    if not failed and any(h in lowered for h in TASK_LIST_HINTS) and lowered != "task":
        call.task_list = True
    if tool == "bash" and command is not None:
        _shell(call, command, failed)
    elif lowered in EDIT_TOOLS or lowered.startswith("str_replace"):
        _editor(call, args, failed)
    else:
        for key in ("path", "file", "file_path"):
            if isinstance(args.get(key), str) and not failed:
                call.reads.add(args[key])
    if files_changed and not failed:
        call.writes.update(files_changed)
        call.wrote = True
    return call


def _editor(call: Call, args: dict[str, Any], failed: bool) -> None:
    path = str(args.get("path") or "")
    sub = str(args.get("command") or "")
    if sub == "view" or (not sub and not args.get("patch")):
        if not failed and path:
            call.reads.add(path)
        return
    if failed:
        return
    call.wrote = True
    if path:
        call.writes.add(path)
    if sub == "str_replace" and isinstance(args.get("old_str"), str):
        call.transitions.append((path, digest(args["old_str"]), digest(str(args.get("new_str") or ""))))
    elif sub == "create" and isinstance(args.get("file_text"), str):
        call.transitions.append((path, "", digest(args["file_text"])))
    for edit in args.get("edits") or []:
        if isinstance(edit, dict) and isinstance(edit.get("old_str"), str):
            call.transitions.append((path, digest(edit["old_str"]), digest(str(edit.get("new_str") or ""))))


def _shell(call: Call, command: str, failed: bool) -> None:
    writes = bool(_WRITE_SHELL.search(command) or _SWE_AGENT_WRITE.search(command))
    paths = command_paths(command)
    if writes:
        call.wrote = True  # `cat > t.py <<EOF ... && python t.py` wrote even when the run failed
        call.writes.update(paths)
        body = _HEREDOC_BODY.search(command)
        state = digest(body.group(2)) if body else digest(command)
        for path in sorted(paths)[:3] or ["?"]:
            call.transitions.append((path, "", state))
    elif not failed:
        call.reads.update(paths)
    for match in _SWE_AGENT_READ.finditer(command):
        if not failed:
            call.reads.add(match.group(2))


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
