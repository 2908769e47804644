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

from collections.abc import Callable

from coder.edit import indent as ind
from coder.edit.errors import MatchError
from coder.edit.fuzzy import fuzzy_match
from coder.edit.lineprefix import strip_prefixes
from coder.edit.lines import Lines, Replacement, line_of, multiple_message, trimmed, whole_lines
from coder.edit.merge import merge
from coder.edit.report import describe_closest

__all__ = ["Replacement", "find_replacement", "line_of"]


def _split_pair(old: str, new: str) -> tuple[list[str], list[str]]:
    """Lines of old_str and new_str for line-based matching. A final newline on both is a line terminator;
    on only one of them it is kept as a line, because exact replacement would add or remove a line there."""
    old_lines = old.split("\n")
    new_lines = new.split("\n") if new else []
    if old.endswith("\n") and new.endswith("\n"):
        old_lines.pop()
        new_lines.pop()
    return old_lines, new_lines


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
        raise MatchError(multiple_message(lines, "exactly"), kind="multiple", lines=lines)
    fragment = _trailing_fragment(content, old, new, line_offset)
    if fragment is not None:
        return fragment
    doc = Lines(content, line_offset)
    old_lines, new_lines = _split_pair(old, new)
    lo, hi = trimmed(old_lines)
    if lo == hi:
        raise MatchError("old_str is only whitespace and does not occur in the file", kind="no-match")
    for strategy in ("trailing-whitespace", "indentation"):
        result = _line_strategy(doc, old_lines, new_lines, strategy)
        if result is not None:
            return result
    stripped = strip_prefixes(old_lines)
    if stripped is not None and not any(line.strip() for line in stripped[0]):
        stripped = None  # nothing but numbers: not a pasted view
    old_clean, new_use, note = old_lines, new_lines, ""
    if stripped is not None:
        old_clean, numbers, style = stripped
        new_clean = strip_prefixes(new_lines, style=style, consecutive=False)
        new_use = new_clean[0] if new_clean is not None else new_lines
        note = f"line-number prefixes ({style!r} style, as copied from `view`) removed from old_str" + (
            " and new_str" if new_clean is not None else "")
        # (an exact match of the stripped text goes through the merge too: new_str's blank lines are counted)
        # the numbers say where the model looked: a place there wins over one elsewhere that a looser or a
        # stricter strategy finds (an indentation slip can make old_str match another line exactly)
        numbered = numbers[0] + trimmed(old_clean)[0]
        for strategy, only in (("trailing-whitespace", True), ("indentation", True), ("trailing-whitespace", False),
                               ("indentation", False)):
            result = _line_strategy(doc, old_clean, new_use, strategy, prefer_line=numbered, only_preferred=only)
            if result is not None:
                result.notes.insert(0, note)
                result.strategy = "line-numbers"
                return result
    if fuzzy:
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


KEYS: dict[str, Callable[[str], str]] = {"trailing-whitespace": str.rstrip, "indentation": str.strip}


def _candidates(doc: Lines, core: list[str], strategy: str) -> list[int]:
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


def _line_strategy(doc: Lines, old_lines: list[str], new_lines: list[str], strategy: str,
                   prefer_line: int | None = None, only_preferred: bool = False) -> Replacement | None:
    lo, hi = trimmed(old_lines)
    core_lines = old_lines[lo:hi]
    if not core_lines:
        return None
    starts = _candidates(doc, core_lines, strategy)
    maps: dict[int, ind.IndentMap] = {}
    if strategy == "indentation":
        kept = []
        for start in starts:
            region = doc.lines[start: start + len(core_lines)]
            pairs = [(ind.leading(o), ind.leading(f)) for o, f in zip(core_lines, region, strict=True)
                     if o.strip()]
            imap = ind.infer(pairs, old_lines + new_lines, doc.lines[max(0, start - 50): start + 50])
            if imap is not None:
                maps[start] = imap
                kept.append(start)
        starts = kept
    if not starts:
        return None
    if prefer_line is not None and (prefer_line - 1 - doc.offset) in starts:
        starts = [prefer_line - 1 - doc.offset]
    elif only_preferred:
        return None
    if len(starts) > 1:
        lines = [s + 1 + doc.offset for s in starts]
        how = "ignoring trailing whitespace" if strategy == "trailing-whitespace" else "ignoring indentation"
        raise MatchError(multiple_message(lines, how), kind="multiple", lines=lines)
    start = starts[0]
    imap = maps.get(start, ind.IndentMap())
    notes = ["matched ignoring trailing whitespace" if strategy == "trailing-whitespace"
             else f"matched with a uniform indentation shift ({imap.describe()}); new_str re-indented the same way"]
    first, last, out = merge(old_lines, new_lines, doc.lines, {lo + k: start + k for k in range(len(core_lines))},
                             imap, doc.offset)
    return whole_lines(doc, first, last, out, strategy, notes)
