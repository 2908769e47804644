"""The last matching step: a fuzzy match, accepted only when it is both very close and alone.

Blank lines are ignored (a missing or extra blank line is the commonest slip after whitespace), a line may
be missing or extra, and one line may be slightly wrong. Candidate windows come from votes of lines that
match exactly (ignoring surrounding whitespace), so the cost stays linear in the file for the usual case.
A window is accepted when its similarity is at least FUZZY_THRESHOLD and no other, non-overlapping window
comes within FUZZY_MARGIN of the threshold; otherwise the edit is refused, because a wrong application is
worse than a refusal the model can fix in one turn."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from difflib import SequenceMatcher

from coder.edit import indent as ind
from coder.edit.errors import MatchError
from coder.edit.matcher import (
    FUZZY_MARGIN,
    FUZZY_THRESHOLD,
    Replacement,
    _core,
    _Lines,
    _multiple_message,
    blank_ends,
    merge,
    whole_lines,
    with_blank_ends,
)

MAX_CANDIDATES = 60


@dataclass
class Window:
    score: float
    first: int  # 0-based file line of the first non-blank line of the window
    last: int  # 0-based, inclusive
    size: int


def rank_windows(file_lines: list[str], core: list[str], min_votes: int | None = None) -> list[Window]:
    """Windows of the file similar to `core` (old_str lines), best first, one per overlapping cluster."""
    nb_file = [i for i, line in enumerate(file_lines) if line.strip()]
    keys_file = [file_lines[i].strip() for i in nb_file]
    keys_old = [line.strip() for line in core if line.strip()]
    m = len(keys_old)
    if not m or not nb_file:
        return []
    positions: dict[str, list[int]] = defaultdict(list)
    for p, key in enumerate(keys_file):
        positions[key].append(p)
    votes: Counter[int] = Counter()
    for k, key in enumerate(keys_old):
        hits = positions.get(key, ())
        if len(hits) > 200:  # a line like "}" or "return" votes for everything; it says nothing
            continue
        for p in hits:
            votes[p - k] += 1
    need = max(1, (m + 1) // 2) if min_votes is None else min_votes
    near = Counter({s: votes[s - 1] + votes[s] + votes[s + 1] for s in votes})
    starts = [s for s, v in near.most_common(MAX_CANDIDATES) if v >= need]
    seen: set[tuple[int, int]] = set()
    windows: list[Window] = []
    anchors: list[int] = []  # starts already scored (in non-blank line indices)
    for rank, s0 in enumerate(starts):
        # a start mostly overlapping one already scored is the same place (its variants covered it);
        # every other place is scored with neighbouring offsets and sizes (a line missing or extra)
        if any(abs(s0 - a) * 2 < m for a in anchors):
            continue
        anchors.append(s0)
        variants = [(s, w) for s in (s0 - 1, s0, s0 + 1) for w in (m, m - 1, m + 1)] if rank < 12 else [(s0, m)]
        for s, w in variants:
            if w < 1 or s < 0 or s + w > len(nb_file) or (s, w) in seen:
                continue
            seen.add((s, w))
            score = similarity(keys_old, keys_file[s: s + w])
            if score >= 0.5:
                windows.append(Window(score, nb_file[s], nb_file[s + w - 1], w))
    windows.sort(key=lambda win: (-win.score, abs(win.size - m), win.last - win.first))
    clusters: list[Window] = []
    for win in windows:
        if all(win.last < c.first or win.first > c.last for c in clusters):
            clusters.append(win)
    return clusters


def similarity(a: list[str], b: list[str]) -> float:
    """difflib's ratio (2*matches/total characters) computed line by line: equal lines count whole, lines
    paired inside a changed block by their character similarity. Close to the character ratio of the
    joined texts, but linear in practice for long blocks, where the character ratio is quadratic."""
    total = sum(len(x) + 1 for x in a) + sum(len(x) + 1 for x in b)
    if not total:
        return 1.0
    matched = 0.0
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            matched += 2 * sum(len(a[i]) + 1 for i in range(i1, i2))
        elif tag == "replace":
            for k in range(min(i2 - i1, j2 - j1)):
                x, y = a[i1 + k], b[j1 + k]
                matched += SequenceMatcher(None, x, y, autojunk=False).ratio() * (len(x) + len(y)) + 2
    return matched / total


def align(core: list[str], region: list[str]) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """Map core line -> region line: equal lines (ignoring surrounding whitespace), then lines paired inside
    replaced blocks when they are similar. Returns (alignment, the similar-but-different pairs)."""
    a = [x.strip() for x in core]
    b = [x.strip() for x in region]
    mapping: dict[int, int] = {}
    changed: list[tuple[int, int]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            mapping.update({i1 + k: j1 + k for k in range(i2 - i1)})
        elif tag == "replace":
            for k in range(min(i2 - i1, j2 - j1)):
                if SequenceMatcher(None, a[i1 + k], b[j1 + k], autojunk=False).ratio() >= 0.5:
                    mapping[i1 + k] = j1 + k
                    changed.append((i1 + k, j1 + k))
    return mapping, changed


def fuzzy_match(doc: _Lines, old_lines: list[str], new_lines: list[str]) -> Replacement | None:
    """The fuzzy Replacement, None when nothing is close enough, MatchError when it is ambiguous."""
    lo, hi = _core(old_lines)
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
    if rivals:
        from coder.edit.report import _differences

        lines = sorted([best.first + 1 + doc.offset] + [c.first + 1 + doc.offset for c in rivals])
        parts = [_multiple_message(lines, "approximately (no exact match)")]
        for win in [best] + rivals[:2]:
            parts.append(f"Lines {win.first + 1 + doc.offset}-{win.last + 1 + doc.offset} ({win.score:.0%} similar):")
            parts.extend(_differences(core, doc.lines[win.first: win.last + 1], win.first + doc.offset))
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
    first, last, grown = with_blank_ends(doc, best.first, best.last, old_lines,
                                         {lo + o: f for o, f in mapping.items()})
    out = merge(old_lines, new_lines, doc.lines[first: last + 1], grown, imap,
                *blank_ends(doc, first, last, old_lines))
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
