"""What a permission prompt shows and offers, shared by the app, the plain REPL and the ACP agent (no Textual
import here).

An approval a person can judge (issue 24): a change is shown as a unified diff of every file it touches, not as
the tool's JSON input; a call that touches several files names every one of them; and the "always" answer of a
write offers one rule per file, so approving a three-file patch "always" does not leave two of its files to ask
again. What the call touches comes from its tool (`coder.tools.registry.describe`): the prompt never matches tool
names; it only recognises the *shape* of a change in the input (a patch text, old/new text, a whole file).
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.fs.beneath import read_beneath
from coder.tools.registry import describe

MAX_DIFF_LINES = 400  # a longer change is cut for the prompt (the whole one is in the input the model sent)
_EDIT_RULE = re.compile(r"^edit\((.+)\)$")
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@", re.M)
MAX_READ = 8 * 1024 * 1024  # a file read to place a change in it (larger: the change is shown without its lines)


@dataclass
class Approval:
    title: str  # `edit notes.txt (create)`, `patch a.py, b.py`
    detail: str  # the command or the input, when there is no diff to show
    diff: str = ""  # a unified diff of the change, when the input is one
    files: list[str] = field(default_factory=list)  # every file the call writes
    rules: list[str] = field(default_factory=list)  # what "always" remembers (one rule per file for a write)

    def rules_label(self) -> str:
        return ", ".join(self.rules)


def approval(tool: str, args: dict[str, Any], suggested_rule: str | None,
             where: tuple[Path, Path] | None = None) -> Approval:
    """`where`: (workspace, working directory) of the session, to place a replacement in its file (issue 47: the
    diff's line numbers were the snippet's own, `@@ -1,2 +1,4 @@` for a change at line 9)."""
    files = list(_paths(tool, args))
    diff = change_diff(args, where)
    rules = [suggested_rule] if suggested_rule else []
    if suggested_rule and _EDIT_RULE.match(suggested_rule) and len(files) > 1:
        rules = [f"edit({p})" for p in files]  # every file of the patch, not only the first one
    facts = describe(tool, args)
    return Approval(facts.title, "" if diff else facts.detail, diff, files, rules)


def _paths(tool: str, args: dict[str, Any]) -> tuple[str, ...]:
    try:
        facts = describe(tool, args)
    except Exception:  # noqa: BLE001 - a prompt must show even when a tool cannot describe a broken input
        return ()
    return tuple(facts.paths) if getattr(facts, "writes", False) else ()


def change_diff(args: dict[str, Any], where: tuple[Path, Path] | None = None) -> str:
    """A unified diff of the change an input describes, or "" when it is not a change: a patch text is shown as
    it is (its hunks are already +/- lines), old and new text become a diff placed at the lines where the old text
    is in its file (`where` to read it; the numbers are left out when it cannot be placed: no file, or the text is
    not there exactly once), a whole file all `+` lines."""
    patch = args.get("patch") if isinstance(args.get("patch"), str) else args.get("input")
    if isinstance(patch, str) and ("*** Begin Patch" in patch or patch.startswith(("--- ", "diff "))):
        return _cut(patch.strip("\n") + "\n")
    path = str(args.get("path") or "file")
    old, new = args.get("old_str"), args.get("new_str")
    if isinstance(old, str) and isinstance(new, str):
        lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}", n=2)
        return _cut(_placed(_ended("".join(lines)), _line_of(old, path, where)))
    text = args.get("file_text") if isinstance(args.get("file_text"), str) else None
    what = "new file"
    if text is None and isinstance(args.get("insert_text"), str):
        text, what = args["insert_text"], f"insert after line {args.get('insert_line', '?')}"
    if text is not None:
        body = "".join("+" + line for line in text.splitlines(True))
        return _cut(_ended(f"--- {path}\n+++ {path} ({what})\n{body}"))
    return ""


def _line_of(old: str, path: str, where: tuple[Path, Path] | None) -> int | None:
    """The 0-based line of the file `path` where `old` starts, when it is there exactly once; else None. Read
    beneath the workspace, never through a link out of it."""
    if where is None or not old:
        return None
    workspace, cwd = where
    full = os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
    rel = os.path.relpath(full, workspace)
    if rel.startswith(".."):
        return None
    data = read_beneath(workspace, rel, MAX_READ)
    text = data.decode("utf-8", "replace") if data is not None else ""
    if text.count(old) != 1:
        return None
    return text[:text.index(old)].count("\n")


def _placed(diff: str, line: int | None) -> str:
    """The hunk headers moved to where the snippet sits in its file, or without numbers when that is not known."""
    if line is None:
        return _HUNK.sub("@@ @@", diff)
    return _HUNK.sub(lambda m: f"@@ -{int(m.group(1)) + line}{m.group(2) or ''} +{int(m.group(3)) + line}"
                     f"{m.group(4) or ''} @@", diff)


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _cut(text: str) -> str:
    lines = text.splitlines(True)
    if len(lines) <= MAX_DIFF_LINES:
        return text
    return "".join(lines[:MAX_DIFF_LINES]) + f"… {len(lines) - MAX_DIFF_LINES} more lines of the change\n"
