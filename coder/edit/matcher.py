"""Finding where `old_str` belongs and what the file should read afterwards.

Matching runs in a fixed order and stops at the first strategy with any candidate:
exact -> trailing whitespace ignored -> uniform indentation shift -> line-number prefixes (copied from `view`)
stripped -> fuzzy (high similarity, blank lines ignored, only when there is a single candidate).
One candidate is applied; several are an error listing their lines; none is an error showing the closest
places and how they differ.

For every strategy but exact, the replacement is a three-way merge rather than a paste of `new_str`: the
lines `old_str` and `new_str` share are taken from the file (so a trailing space, a tab or a slightly
misremembered line in the model's copy never leaks into the file), and only the lines the model changed
come from `new_str`, re-indented into the file's frame. That is what makes a tolerant match land exactly as
intended instead of nearly so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from difflib import SequenceMatcher

from coder.edit import indent as ind
from coder.edit.errors import MatchError
from coder.edit.lineprefix import strip_prefixes
from coder.edit.report import describe_closest

FUZZY_THRESHOLD = 0.90
#: a second place scoring within this margin of the threshold makes a fuzzy match ambiguous
FUZZY_MARGIN = 0.10


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
class _Lines:
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


def _split_pair(old: str, new: str) -> tuple[list[str], list[str]]:
    """Lines of old_str and new_str for line-based matching. A final newline on both is a line terminator;
    on only one of them it is kept as a line, because exact replacement would add or remove a line there."""
    old_lines = old.split("\n")
    new_lines = new.split("\n") if new else []
    if old.endswith("\n") and new.endswith("\n"):
        old_lines.pop()
        new_lines.pop()
    return old_lines, new_lines


def _core(lines: list[str]) -> tuple[int, int]:
    """Indices [lo, hi) of `lines` without leading and trailing blank lines."""
    lo, hi = 0, len(lines)
    while lo < hi and not lines[lo].strip():
        lo += 1
    while hi > lo and not lines[hi - 1].strip():
        hi -= 1
    return lo, hi


def find_replacement(content: str, old: str, new: str, *, fuzzy: bool = True, line_offset: int = 0) -> Replacement:
    """Locate `old` in `content` (both LF-only) and return the replacement; raise MatchError otherwise.
    `line_offset` is added to the line numbers in results and messages."""
    if old == new:
        raise MatchError("old_str and new_str are identical, so the edit would change nothing; "
                         "give the text to change in old_str and the new text in new_str", kind="identical")
    if not old:
        raise MatchError("old_str is empty; use `insert` to add text at a line, or `create` for a new file",
                         kind="empty")
    hits = _exact_positions(content, old)
    lead = len(old) - len(old.lstrip("\n"))  # report the line where old_str's text starts
    if len(hits) == 1:
        start = hits[0]
        first = line_of(content, start + lead) + line_offset
        return Replacement(start, start + len(old), new, "exact", [], first,
                           first + old.strip("\n").count("\n"))
    if len(hits) > 1:
        lines = [line_of(content, h + lead) + line_offset for h in hits]
        raise MatchError(_multiple_message(lines, "exactly"), kind="multiple", lines=lines)
    fragment = _trailing_fragment(content, old, new, line_offset)
    if fragment is not None:
        return fragment
    doc = _Lines(content, line_offset)
    old_lines, new_lines = _split_pair(old, new)
    lo, hi = _core(old_lines)
    if lo == hi:
        raise MatchError("old_str is only whitespace and does not occur in the file", kind="no-match")
    for strategy in ("trailing-whitespace", "indentation"):
        result = _line_strategy(doc, old_lines, new_lines, strategy)
        if result is not None:
            return result
    stripped = strip_prefixes(old_lines)
    if stripped is not None and not any(line.strip() for line in stripped[0]):
        stripped = None  # nothing but numbers: not a pasted view
    if stripped is not None:
        old_clean, numbers, style = stripped
        new_clean = strip_prefixes(new_lines, style=style, consecutive=False)
        new_use = new_clean[0] if new_clean is not None else new_lines
        note = f"line-number prefixes ({style!r} style, as copied from `view`) removed from old_str" + (
            " and new_str" if new_clean is not None else "")
        joined = "\n".join(old_clean)
        exact = _exact_positions(content, joined)
        if len(exact) == 1 and new_clean is not None:
            first = line_of(content, exact[0]) + line_offset
            return Replacement(exact[0], exact[0] + len(joined), "\n".join(new_use), "line-numbers", [note],
                               first, first + joined.count("\n"))
        for strategy in ("trailing-whitespace", "indentation"):
            result = _line_strategy(doc, old_clean, new_use, strategy, prefer_line=numbers[0])
            if result is not None:
                result.notes.insert(0, note)
                result.strategy = "line-numbers"
                return result
    if fuzzy:
        from coder.edit.fuzzy import fuzzy_match

        result = fuzzy_match(doc, old_lines, new_lines)
        if result is None and stripped is not None:
            result = fuzzy_match(doc, old_clean, new_use)
            if result is not None:
                result.notes.insert(0, note)
        if result is not None:
            return result
    if stripped is not None and stripped[2] in ("tab", "arrow"):  # unmistakably pasted from a view
        raise MatchError(describe_closest(doc.lines, old_clean, prefixed=True, offset=line_offset), kind="no-match")
    raise MatchError(describe_closest(doc.lines, old_lines, offset=line_offset), kind="no-match")


def _trailing_fragment(content: str, old: str, new: str, line_offset: int) -> Replacement | None:
    """A one-line old_str (often part of a line) that only fails because of whitespace after it."""
    core = old.rstrip(" \t")
    tail = old[len(core):]
    if not tail or not core.strip() or "\n" in core:
        return None
    hits = _exact_positions(content, core, limit=2)
    if len(hits) != 1:
        return None
    text = new[: len(new) - len(tail)] if new.endswith(tail) else new
    first = line_of(content, hits[0]) + line_offset
    return Replacement(hits[0], hits[0] + len(core), text, "trailing-whitespace",
                       ["matched without the trailing whitespace of old_str"], first, first)


def _exact_positions(content: str, old: str, limit: int = 50) -> list[int]:
    hits, pos = [], content.find(old)
    while pos != -1 and len(hits) < limit:
        hits.append(pos)
        pos = content.find(old, pos + 1)
    return hits


def _multiple_message(lines: list[int], how: str) -> str:
    shown = ", ".join(str(n) for n in lines[:20]) + (" ..." if len(lines) > 20 else "")
    hint = " (or set replace_all to change every one)" if how == "exactly" else ""
    return (f"old_str matches {len(lines)} places {how} (lines {shown}); nothing was changed. Include more "
            f"surrounding lines in old_str so it matches only the place you mean{hint}.")


KEYS: dict[str, Callable[[str], str]] = {"trailing-whitespace": str.rstrip, "indentation": str.strip}


def _candidates(doc: _Lines, core: list[str], strategy: str) -> list[int]:
    key = KEYS[strategy]
    index = doc.index(strategy, key)
    found = []
    n = len(core)
    keys = [key(x) for x in core]
    for start in index.get(keys[0], []):
        if start + n > len(doc.lines):
            break
        if all(key(doc.lines[start + k]) == keys[k] for k in range(1, n)):
            found.append(start)
    return found


def _line_strategy(doc: _Lines, old_lines: list[str], new_lines: list[str], strategy: str,
                   prefer_line: int | None = None) -> Replacement | None:
    lo, hi = _core(old_lines)
    core = old_lines[lo:hi]
    if not core:
        return None
    starts = _candidates(doc, core, strategy)
    maps: dict[int, ind.IndentMap] = {}
    if strategy == "indentation":
        kept = []
        for start in starts:
            region = doc.lines[start: start + len(core)]
            pairs = [(ind.leading(o), ind.leading(f)) for o, f in zip(core, region, strict=True) if o.strip()]
            imap = ind.infer(pairs, old_lines + new_lines, doc.lines[max(0, start - 50): start + 50])
            if imap is not None:
                maps[start] = imap
                kept.append(start)
        starts = kept
    if not starts:
        return None
    if len(starts) > 1 and prefer_line is not None and (prefer_line - 1) in starts:
        starts = [prefer_line - 1]
    if len(starts) > 1:
        lines = [s + 1 + doc.offset for s in starts]
        how = "ignoring trailing whitespace" if strategy == "trailing-whitespace" else "ignoring indentation"
        raise MatchError(_multiple_message(lines, how), kind="multiple", lines=lines)
    start = starts[0]
    imap = maps.get(start, ind.IndentMap())
    align = {lo + k: k for k in range(len(core))}
    region = doc.lines[start: start + len(core)]
    notes = ["matched ignoring trailing whitespace" if strategy == "trailing-whitespace"
             else f"matched with a uniform indentation shift ({imap.describe()}); new_str re-indented the same way"]
    return whole_lines(doc, start, start + len(core) - 1, merge(old_lines, new_lines, region, align, imap),
                       strategy, notes)


def whole_lines(doc: _Lines, first: int, last: int, out: list[str], strategy: str, notes: list[str],
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


def merge(old_lines: list[str], new_lines: list[str], region: list[str], align: dict[int, int],
          imap: ind.IndentMap) -> list[str]:
    """Three-way merge: the file `region` with the change old_lines -> new_lines applied. `align` maps
    indices of old_lines to indices of region lines they stand for."""
    strip_trailing = not any(line != line.rstrip() for line in region)
    fate = [True] * len(old_lines)
    inserts: dict[int, list[str]] = defaultdict(list)
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        for i in range(i1, i2):
            fate[i] = False
        for line in new_lines[j1:j2]:
            if strip_trailing:
                line = line.rstrip()
            if line.strip():
                lead = ind.leading(line)
                line = imap.apply(lead) + line[len(lead):]
            else:
                line = ""
            inserts[i1].append(line)
    region_to_old = {f: o for o, f in align.items()}
    aligned = sorted(region_to_old)
    out: list[str] = []
    pending = sorted(inserts)
    cursor = 0

    def flush(upto: int) -> None:
        nonlocal cursor
        while cursor < len(pending) and pending[cursor] <= upto:
            out.extend(inserts[pending[cursor]])
            cursor += 1

    for f, line in enumerate(region):
        o = region_to_old.get(f)
        if o is not None:
            flush(o)
            if fate[o]:
                out.append(line)
            continue
        prev = max((x for x in aligned if x < f), default=None)
        nxt = min((x for x in aligned if x > f), default=None)
        # a file line old_str did not mention goes only when the change removes both its neighbours
        inside_removal = (prev is not None and nxt is not None and not fate[region_to_old[prev]]
                          and not fate[region_to_old[nxt]])
        if not inside_removal:
            out.append(line)
    flush(len(old_lines))
    return out
