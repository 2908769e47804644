"""The syntax guard: an edit that breaks a file that parsed cleanly is refused before it is written.

SWE-agent's lesson: a linter gate that fires on pre-existing errors makes agents fight false alarms, so the
guard compares before and after: a file that was already broken is not guarded, and only new parse errors
count. Languages without a grammar wheel pass unchecked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.codeintel.languages import parser_for
from coder.edit.errors import SyntaxGuardError

MAX_REPORTED = 5


@dataclass
class ParseProblem:
    line: int  # 1-based
    end_line: int
    kind: str  # "error" or "missing <token>"


def problems(path: str | Path, text: str) -> list[ParseProblem] | None:
    """Parse errors of `text` as the language of `path`; None when we have no parser for it."""
    parser = parser_for(path)
    if parser is None:
        return None
    tree = parser.parse(text.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    if not root.has_error:
        return []
    found: list[ParseProblem] = []
    cursor_stack: list[Any] = [root]
    while cursor_stack and len(found) < 50:
        node = cursor_stack.pop()
        if node.is_missing:
            found.append(ParseProblem(node.start_point[0] + 1, node.end_point[0] + 1, f"missing {node.type!r}"))
            continue
        if node.is_error:
            found.append(ParseProblem(node.start_point[0] + 1, node.end_point[0] + 1, "error"))
            continue
        if node.has_error:
            cursor_stack.extend(reversed(node.children))
    found.sort(key=lambda p: p.line)
    return found or [ParseProblem(1, 1, "error")]


def check(path: str | Path, before: str | None, after: str, display: str) -> None:
    """Raise SyntaxGuardError when `after` has parse errors and `before` (None = new file) had none."""
    if before is None:
        return
    found_before = problems(path, before)
    if found_before is None or found_before:
        return
    found = problems(path, after)
    if not found:
        return
    lines = after.split("\n")
    parts = [f"Edit refused: it would leave {display} with syntax errors (the file parsed cleanly before; it "
             "was not changed)."]
    for problem in found[:MAX_REPORTED]:
        parts.append(f"  {problem.kind} at line {problem.line}" +
                     (f"-{problem.end_line}" if problem.end_line != problem.line else "") + ":")
        lo = max(1, problem.line - 1)
        hi = min(len(lines), max(problem.end_line, problem.line) + 1, lo + 6)
        for n in range(lo, hi + 1):
            parts.append(f"    {n:6}\t{lines[n - 1]}")
    if len(found) > MAX_REPORTED:
        parts.append(f"  ... and {len(found) - MAX_REPORTED} more")
    parts.append("If the change needs several steps that are broken in between, make them in one call "
                 "(`edits` for several replacements, or apply_patch).")
    raise SyntaxGuardError("\n".join(parts))


def snippet_problems(path: str | Path, text: str) -> str:
    """A one-line note on parse errors in a new file (creating a file is never refused for them)."""
    found = problems(path, text)
    if not found:
        return ""
    where = ", ".join(str(p.line) for p in found[:5])
    return f"note: the file has syntax errors (line {where})"
