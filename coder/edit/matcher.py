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
        # (an exact match of the stripped text goes through the merge too: new_str's blank lines are counted)
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
    notes = ["matched ignoring trailing whitespace" if strategy == "trailing-whitespace"
             else f"matched with a uniform indentation shift ({imap.describe()}); new_str re-indented the same way"]
    first, last, align = with_blank_ends(doc, start, start + len(core) - 1, old_lines, align)
    out = merge(old_lines, new_lines, doc.lines[first: last + 1], align, imap,
                *blank_ends(doc, first, last, old_lines))
    return whole_lines(doc, first, last, out, strategy, notes)


def with_blank_ends(doc: _Lines, first: int, last: int, old_lines: list[str],
                    align: dict[int, int]) -> tuple[int, int, dict[int, int]]:
    """The matched file lines first..last (0-based, inclusive; old_str's text without its blank ends) grown by
    the file's blank lines that old_str's own leading and trailing blank lines stand for, and `align` (old
    index -> index in the grown region) with them: new_str's lines after old_str's trailing blank lines then
    land after the file's."""
    lo, hi = _core(old_lines)
    # only a whole run: when old_str has fewer blank lines there than the file, which ones it means is not
    # known (blank_ends then makes new lines added at that end a refusal)
    top = lo if lo == blank_run(doc.lines, first - 1, -1) else 0
    bottom = len(old_lines) - hi if len(old_lines) - hi == blank_run(doc.lines, last + 1, 1) else 0
    grown = {o: f + top for o, f in align.items()}
    grown.update({lo - top + k: k for k in range(top)})
    size = last - first + 1
    grown.update({hi + k: top + size + k for k in range(bottom)})
    return first - top, last + bottom, grown


def blank_ends(doc: _Lines, first: int, last: int, old_lines: list[str]) -> tuple[int | None, int | None]:
    """The file's blank lines right before and after the (grown) region, for merge: None where old_str has
    blank lines of its own at that end but not as many as the file (it starts or stops inside a run of blank
    lines, so where new lines it adds at that end go among them is not certain)."""
    lo, hi = _core(old_lines)
    before, after = blank_run(doc.lines, first - 1, -1), blank_run(doc.lines, last + 1, 1)
    return (None if lo and before else before), (None if hi < len(old_lines) and after else after)


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


def blank_run(lines: list[str], index: int, step: int) -> int:
    """How many blank lines the file has from `index` on, going by `step` (+1 down, -1 up)."""
    count = 0
    while 0 <= index < len(lines) and not lines[index].strip():
        count += 1
        index += step
    return count


def merge(old_lines: list[str], new_lines: list[str], region: list[str], align: dict[int, int],
          imap: ind.IndentMap, before: int | None = 0, after: int | None = 0) -> list[str]:
    """Three-way merge: the file `region` with the change old_lines -> new_lines applied. `align` maps
    indices of old_lines to indices of region lines they stand for; `before` and `after` are the blank lines
    the file has right before and after the region.

    The model of a tolerant edit: lines old_str and new_str share are kept as the file has them; lines only in
    new_str are inserted once, verbatim apart from the indentation shift (`imap`; whitespace-only lines as
    they are) and a trailing-whitespace habit of the model's copy; file lines old_str did not mention stay,
    unless the change removes both their neighbours. Blank
    lines are counted, never duplicated: where old_str left out blank lines that the file has (between two of
    its lines, or right before or after the region) and new_str has blank lines at that very place, those are
    the same blank lines, and the file's are kept."""
    align = _blank_runs_first(align, region)
    # trailing whitespace the model's copy has where the file has none is a habit of that copy: its new lines
    # carry it too, so they lose it; otherwise new_str's lines keep every character
    habit = any(old_lines[o].strip() and old_lines[o] != old_lines[o].rstrip() and region[f] == region[f].rstrip()
                for o, f in align.items())
    fate = [True] * len(old_lines)
    inserts: dict[int, list[str]] = defaultdict(list)
    opcodes = SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes()
    if len(align) < len(region) and _slides(opcodes, old_lines, new_lines):
        # the file has lines old_str left out, and the change could as well sit one line up or down (a run of
        # equal lines): on which side of the left-out lines it belongs is not certain
        raise MatchError("old_str leaves out lines the file has there, and the change it makes could sit on "
                         "either side of them (repeated lines); nothing was changed. Copy old_str from the file "
                         "as it is (view the lines first).", kind="no-match")
    anchored: set[int] = set()  # keys of lines that replace old lines: their place in the file is known
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        if tag == "replace":
            anchored.add(i1)
        for i in range(i1, i2):
            fate[i] = False
        for line in new_lines[j1:j2]:
            if habit:
                line = line.rstrip()
            if line.strip():
                lead = ind.leading(line)
                line = imap.apply(lead) + line[len(lead):]
            inserts[i1].append(line)
    # blank lines added inside a run of blank lines could be said to go anywhere in it: at its end, always, so
    # they meet the file's blank lines that old_str left out (alignment puts those at a run's end too)
    # (the blank lines that end a group of new lines too: "line, blank" before a blank line is "line" before it
    # and a blank line after it)
    for key in sorted(inserts):
        end = key
        while end < len(old_lines) and not old_lines[end].strip() and fate[end]:
            end += 1
        if end == key:
            continue
        group = inserts[key]
        keep = len(group) - _leading_blanks(group[::-1])
        moved, inserts[key] = group[keep:], group[:keep]
        inserts[end] = moved + inserts.get(end, [])
        if not inserts[key]:
            del inserts[key]
    if len(align) < len(region) and any(not fate[o] and not old_lines[o].strip() for o in align):
        # a blank line removed where the file has blank lines old_str left out: which one is not certain
        raise MatchError("old_str leaves out blank lines the file has there, and new_str removes a blank line, "
                         "so which one is not certain; nothing was changed. Copy old_str from the file as it is "
                         "(view the lines first).", kind="no-match")
    extra = [o for o in range(*_core(old_lines)) if not old_lines[o].strip() and o not in align]
    if extra and any(not line.strip() for lines in inserts.values() for line in lines):
        # old_str has blank lines the file has not, and new_str adds blank lines: which of new_str's blank
        # lines are the copy's extra ones is not certain, and a guess may put one in the wrong place
        raise MatchError("old_str has blank lines that the file does not have there, and new_str adds blank "
                         "lines, so where they belong is not certain; nothing was changed. Copy old_str from "
                         "the file as it is (view the lines first).", kind="no-match")

    region_to_old = {f: o for o, f in align.items()}
    aligned = sorted(region_to_old)
    out: list[str] = []
    keys = sorted(inserts)
    cursor = 0
    gap: list[tuple[str, str]] = []  # since the last kept line: (FILE, NEW or ANCHORED, line), in order

    def take_inserts(upto: int) -> None:
        nonlocal cursor
        while cursor < len(keys) and keys[cursor] <= upto:
            gap.extend((ANCHORED if keys[cursor] in anchored else NEW, line) for line in inserts[keys[cursor]])
            cursor += 1

    def close_gap(top: bool, bottom: bool) -> None:
        if ((top and before is None) or (bottom and after is None)) and any(f != FILE for f, _ in gap):
            raise MatchError("old_str starts or ends inside a run of blank lines the file has, and new_str adds "
                             "lines there, so where among them they go is not certain; nothing was changed. "
                             "Copy old_str from the file as it is (view the lines first).", kind="no-match")
        lines = _count_blanks(gap)
        if top and before and not any(f == FILE for f, _ in gap):  # the file's blank lines right before the region
            lines = lines[min(_leading_blanks(lines), before):]  # are new_str's leading blank lines
        if bottom and after and not any(f == FILE for f, _ in gap):  # and the ones after it its trailing ones
            lines = lines[: len(lines) - min(_leading_blanks(lines[::-1]), after)]
        out.extend(lines)
        gap.clear()

    for f, line in enumerate(region):
        o = region_to_old.get(f)
        if o is not None:
            take_inserts(o)
            if fate[o]:
                close_gap(top=not out, bottom=False)
                out.append(line)
            continue
        prev = max((x for x in aligned if x < f), default=None)
        nxt = min((x for x in aligned if x > f), default=None)
        # a file line old_str did not mention goes only when the change removes both its neighbours
        inside_removal = (prev is not None and nxt is not None and not fate[region_to_old[prev]]
                          and not fate[region_to_old[nxt]])
        if not inside_removal:
            gap.append((FILE, line))
    take_inserts(len(old_lines))
    close_gap(top=not out, bottom=True)
    return out


def _blank_runs_first(align: dict[int, int], region: list[str]) -> dict[int, int]:
    """Which blank lines of a run of them old_str's blank lines stand for is arbitrary: always the first ones,
    so the file's blank lines that old_str left out are at the run's end, where added blank lines go too."""
    out = dict(align)
    f = 0
    while f < len(region):
        if region[f].strip():
            f += 1
            continue
        end = f
        while end < len(region) and not region[end].strip():
            end += 1
        olds = sorted(o for o, g in align.items() if f <= g < end)
        out.update({o: f + k for k, o in enumerate(olds)})
        f = end
    return out


def _slides(opcodes: list[tuple[str, int, int, int, int]], old: list[str], new: list[str]) -> bool:
    """A pure deletion or insertion that could move one line up or down and describe the same change."""
    for tag, i1, i2, j1, j2 in opcodes:
        seq, a, b = (old, i1, i2) if tag == "delete" else (new, j1, j2) if tag == "insert" else (None, 0, 0)
        if seq is None:
            continue
        if (a > 0 and seq[a - 1] == seq[b - 1]) or (b < len(seq) and seq[a] == seq[b]):
            return True
    return False


def _leading_blanks(lines: list[str]) -> int:
    return next((i for i, line in enumerate(lines) if line.strip()), len(lines))


FILE, NEW, ANCHORED = "file", "new", "anchored"


def _count_blanks(gap: list[tuple[str, str]]) -> list[str]:
    """The lines of one place between kept lines: the file's lines old_str did not mention and new_str's, in
    order (lines that replace old lines sit where those were). Where the file's blank lines and new_str's meet,
    they are the same blank lines: counted, the file's text kept, never doubled. Lines new_str only adds next
    to lines old_str left out could go before or after them: not certain, so refused."""
    has_file = any(source == FILE for source, _ in gap)
    if has_file and any(source == NEW and line.strip() for source, line in gap):
        raise MatchError("old_str leaves out lines the file has where new_str adds lines, so whether they go "
                         "before or after them is not certain; nothing was changed. Copy old_str from the file "
                         "as it is (view the lines first).", kind="no-match")
    out: list[str] = []
    i = 0
    while i < len(gap):
        if gap[i][1].strip():
            out.append(gap[i][1])
            i += 1
            continue
        run = []
        while i < len(gap) and not gap[i][1].strip():
            run.append(gap[i])
            i += 1
        file_blanks = [line for source, line in run if source == FILE]
        added = [line for source, line in run if source != FILE]
        out.extend(file_blanks + added[len(file_blanks):])
    return out
