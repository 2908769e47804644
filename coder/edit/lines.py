"""The shared vocabulary of matching: a file split into lines, and the Replacement a match produces.

A module of its own so the matching steps (matcher, fuzzy, merge, report) all import downwards from here
and never from each other in a circle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Replacement:
    """Replace content[start:end] with `text`. Lines are 1-based, of the content before the edit."""

    start: int
    end: int
    text: str
    strategy: str = "exact"
    notes: list[str] = field(default_factory=list)
    first_line: int = 1
    last_line: int = 1
    similarity: float = 1.0

    def apply(self, content: str) -> str:
        return content[: self.start] + self.text + content[self.end:]


@dataclass
class Lines:
    """The content split into lines, with start offsets and per-key indexes built on demand."""

    content: str
    offset: int = 0  # added to every line number reported (the caller searches part of a file)
    lines: list[str] = field(init=False)
    offsets: list[int] = field(init=False)
    _index: dict[str, dict[str, list[int]]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.lines = self.content.split("\n")
        self.offsets, pos = [], 0
        for line in self.lines:
            self.offsets.append(pos)
            pos += len(line) + 1

    def index(self, name: str, key: Callable[[str], str]) -> dict[str, list[int]]:
        if name not in self._index:
            table: dict[str, list[int]] = defaultdict(list)
            for i, line in enumerate(self.lines):
                table[key(line)].append(i)
            self._index[name] = table
        return self._index[name]

    def span(self, first: int, last: int) -> tuple[int, int]:
        """Offsets of lines first..last (inclusive), without the final line's newline."""
        return self.offsets[first], self.offsets[last] + len(self.lines[last])


def line_of(content: str, offset: int) -> int:
    return content.count("\n", 0, offset) + 1


def trimmed(lines: list[str]) -> tuple[int, int]:
    """Indices [lo, hi) of `lines` without leading and trailing blank lines."""
    lo, hi = 0, len(lines)
    while lo < hi and not lines[lo].strip():
        lo += 1
    while hi > lo and not lines[hi - 1].strip():
        hi -= 1
    return lo, hi


def multiple_message(lines: list[int], how: str) -> str:
    shown = ", ".join(str(n) for n in lines[:20]) + (" ..." if len(lines) > 20 else "")
    hint = " (or set replace_all to change every one)" if how == "exactly" else ""
    return (f"old_str matches {len(lines)} places {how} (lines {shown}); nothing was changed. Include more "
            f"surrounding lines in old_str so it matches only the place you mean{hint}.")


def whole_lines(doc: Lines, first: int, last: int, out: list[str], strategy: str, notes: list[str],
                similarity: float = 1.0) -> Replacement:
    """A Replacement of file lines first..last (0-based, inclusive) by `out`; removing every line also
    removes its line break, so a deletion leaves no blank line behind."""
    a, b = doc.span(first, last)
    text = "\n".join(out)
    if not out:
        if b < len(doc.content):
            b += 1
        elif a > 0:
            a -= 1
    return Replacement(a, b, text, strategy, notes, first + 1 + doc.offset, last + 1 + doc.offset, similarity)
