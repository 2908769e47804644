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
import re
from dataclasses import dataclass, field
from typing import Any

from coder.tools.registry import describe

MAX_DIFF_LINES = 400  # a longer change is cut for the prompt (the whole one is in the input the model sent)
_EDIT_RULE = re.compile(r"^edit\((.+)\)$")


@dataclass
class Approval:
    title: str  # `edit notes.txt (create)`, `patch a.py, b.py`
    detail: str  # the command or the input, when there is no diff to show
    diff: str = ""  # a unified diff of the change, when the input is one
    files: list[str] = field(default_factory=list)  # every file the call writes
    rules: list[str] = field(default_factory=list)  # what "always" remembers (one rule per file for a write)

    def rules_label(self) -> str:
        return ", ".join(self.rules)


def approval(tool: str, args: dict[str, Any], suggested_rule: str | None) -> Approval:
    files = list(_paths(tool, args))
    diff = change_diff(args)
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


def change_diff(args: dict[str, Any]) -> str:
    """A unified diff of the change an input describes, or "" when it is not a change: a patch text is shown as
    it is (its hunks are already +/- lines), old and new text become a diff, a whole file all `+` lines."""
    patch = args.get("patch") if isinstance(args.get("patch"), str) else args.get("input")
    if isinstance(patch, str) and ("*** Begin Patch" in patch or patch.startswith(("--- ", "diff "))):
        return _cut(patch.strip("\n") + "\n")
    path = str(args.get("path") or "file")
    old, new = args.get("old_str"), args.get("new_str")
    if isinstance(old, str) and isinstance(new, str):
        lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}", n=2)
        return _cut(_ended("".join(lines)))
    text = args.get("file_text") if isinstance(args.get("file_text"), str) else None
    where = "new file"
    if text is None and isinstance(args.get("insert_text"), str):
        text, where = args["insert_text"], f"insert after line {args.get('insert_line', '?')}"
    if text is not None:
        body = "".join("+" + line for line in text.splitlines(True))
        return _cut(_ended(f"--- {path}\n+++ {path} ({where})\n{body}"))
    return ""


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _cut(text: str) -> str:
    lines = text.splitlines(True)
    if len(lines) <= MAX_DIFF_LINES:
        return text
    return "".join(lines[:MAX_DIFF_LINES]) + f"… {len(lines) - MAX_DIFF_LINES} more lines of the change\n"
