"""The last matching step: a fuzzy match, accepted only when it is both very close and alone.

Blank lines are ignored (a missing or extra blank line is the commonest slip after whitespace), a line may
be missing or extra, and one line may be slightly wrong. Candidate windows come from votes of lines that
match exactly (ignoring surrounding whitespace), so the cost stays linear in the file for the usual case.
A window is accepted when its similarity is at least FUZZY_THRESHOLD and no other, non-overlapping window
comes within FUZZY_MARGIN of the threshold; otherwise the edit is refused, because a wrong application is
worse than a refusal the model can fix in one turn."""

from __future__ import annotations

from difflib import SequenceMatcher

from coder.edit import indent as ind
from coder.edit.errors import MatchError
from coder.edit.lines import Lines, Replacement, multiple_message, trimmed, whole_lines
from coder.edit.merge import merge
from coder.edit.report import differences
from coder.edit.similar import Window, align, fewest_slips, rank_windows, slips

FUZZY_THRESHOLD = 0.90
#: a second place scoring within this margin of the threshold makes a fuzzy match ambiguous
FUZZY_MARGIN = 0.10

def fuzzy_match(doc: Lines, old_lines: list[str], new_lines: list[str]) -> Replacement | None:
    """The fuzzy Replacement, None when nothing is close enough, MatchError when it is ambiguous."""
    lo, hi = trimmed(old_lines)
    core = old_lines[lo:hi]
    if sum(1 for line in core if line.strip()) < 2:
        return None  # one line is too little evidence to guess from
    clusters = rank_windows(doc.lines, core)
    if not clusters or clusters[0].score < FUZZY_THRESHOLD:
        return None
    best = clusters[0]
    if best.score >= 1.0:
        # every non-blank line equal up to surrounding whitespace: as strong as the indentation step, so
        # only another such place makes it ambiguous
        rivals = [c for c in clusters[1:] if c.score >= 1.0]
    else:
        rivals = [c for c in clusters[1:] if c.score >= FUZZY_THRESHOLD - FUZZY_MARGIN]
        if rivals and slips(core, doc.lines, best.first, best.last) == 1:
            # one slip of memory places old_str here; a place that needs more slips than the fuzzy step would take
            # on its own (one line in five) is no rival
            allowed = max(1, sum(1 for line in core if line.strip()) // 5)
            rivals = [c for c in rivals if fewest_slips(core, doc.lines, c) <= allowed]
    if rivals:
        lines = sorted([best.first + 1 + doc.offset] + [c.first + 1 + doc.offset for c in rivals])
        parts = [multiple_message(lines, "approximately (no exact match)")]
        for win in [best] + rivals[:2]:
            parts.append(f"Lines {win.first + 1 + doc.offset}-{win.last + 1 + doc.offset} ({win.score:.0%} similar):")
            parts.extend(differences(core, doc.lines[win.first: win.last + 1], win.first + doc.offset))
        raise MatchError("\n".join(parts), kind="multiple", lines=lines)
    region = doc.lines[best.first: best.last + 1]
    mapping, changed = align(core, region)
    equal_pairs = [(o, f) for o, f in mapping.items() if (o, f) not in changed and core[o].strip()]
    code_lines = sum(1 for line in core if line.strip())
    # "slightly wrong" means one line in five at most: more than that and the model's memory of the place is
    # too far off to trust, however similar the lines look (think of a list of near-identical exports)
    if code_lines - len(equal_pairs) > max(1, code_lines // 5):
        return None
    imap = ind.infer([(ind.leading(core[o]), ind.leading(region[f])) for o, f in equal_pairs],
                     old_lines + new_lines, doc.lines[max(0, best.first - 50): best.last + 50])
    if imap is None:
        return None
    pairs = {lo + o: best.first + f for o, f in mapping.items()}
    first, last, out = merge(old_lines, new_lines, doc.lines, pairs, imap, doc.offset)
    doubts = _edge_in_doubt(doc.lines, core, best, changed)
    if doubts:
        # a misremembered line at an edge may as well be the file line beyond it (and the line at the edge one
        # old_str left out): where both readings give the same file, the doubt does not matter; otherwise refuse
        result = doc.lines[:first] + out + doc.lines[last + 1:]
        for other in _readings(pairs, [(lo + o, k) for o, k in doubts]):
            try:
                a, b, alt = merge(old_lines, new_lines, doc.lines, other, imap, doc.offset)
            except MatchError:
                return None
            if doc.lines[:a] + alt + doc.lines[b + 1:] != result:
                return None
    span = f"{best.first + 1 + doc.offset}-{best.last + 1 + doc.offset}"
    notes = [f"fuzzy match at lines {span} ({best.score:.0%} similar, the only close "
             "place); lines that old_str and new_str share were kept as the file has them"]
    for o, f in changed[:3]:
        notes.append(f"line {best.first + f + 1 + doc.offset} is {region[f].strip()!r} in the file; old_str had "
                     f"{core[o].strip()!r}")
    blank_diff = sum(1 for x in core if not x.strip()) - sum(1 for x in region if not x.strip())
    if blank_diff:
        notes.append(f"old_str has {abs(blank_diff)} {'more' if blank_diff > 0 else 'fewer'} blank line(s) "
                     "than the file there")
    if imap.kind != "identity":
        notes.append(f"{imap.describe()}; new_str re-indented the same way")
    return whole_lines(doc, first, last, out, "fuzzy", notes, best.score)


def _edge_in_doubt(lines: list[str], core: list[str], win: Window,
                   changed: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """A misremembered line at an end of the window may as well be the file line just outside it (old_str
    then leaves out a line instead): the (core line, file line beyond) pairs where the file line beyond that
    end is as similar, so the place of the window, and so of new lines next to it, is not certain."""
    doubts = []
    for o, f in changed:
        for at_edge, step, start in ((f == 0, -1, win.first - 1), (win.first + f == win.last, 1, win.last + 1)):
            if not at_edge:
                continue
            k = start
            while 0 <= k < len(lines) and not lines[k].strip():
                k += step
            if 0 <= k < len(lines) and SequenceMatcher(None, core[o].strip(), lines[k].strip(),
                                                       autojunk=False).ratio() >= 0.5:
                doubts.append((o, k))
    return doubts


def _readings(pairs: dict[int, int], doubts: list[tuple[int, int]]) -> list[dict[int, int]]:
    """The other mappings the doubts allow: each doubtful old_str line paired with the file line beyond the
    edge instead (one at a time and all together)."""
    choices = [[(o, k)] for o, k in doubts] + ([doubts] if len(doubts) > 1 else [])
    return [{**pairs, **dict(choice)} for choice in choices]
