"""Which places of a file look like old_str: candidate windows ranked by similarity, and the pairing of
old_str's lines with a window's. Pure functions over lists of lines, used by the fuzzy step (to pick a
place) and by the error report (to show the closest places); they import nothing else of the editor."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from difflib import SequenceMatcher

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


def slips(core: list[str], file_lines: list[str], first: int, last: int) -> int:
    """How many slips of memory old_str (`core`) needs to stand for file lines first..last: its non-blank lines
    that are not equal to a line there (misremembered or not in the file) plus the non-blank lines there it
    leaves out. Blank lines are no evidence either way."""
    region = file_lines[first: last + 1]
    mapping, changed = align(core, region)
    misremembered = {o for o, _ in changed}
    paired = set(mapping.values())
    return (sum(1 for o, x in enumerate(core) if x.strip() and (o not in mapping or o in misremembered))
            + sum(1 for f, x in enumerate(region) if x.strip() and f not in paired))


def fewest_slips(core: list[str], file_lines: list[str], win: Window) -> int:
    """The fewest slips old_str needs for the place of `win`: the window and its neighbours one non-blank line
    up or down, one line longer or shorter (the ranking keeps one window per place, the best scoring)."""
    nb = [i for i, line in enumerate(file_lines) if line.strip()]
    s = nb.index(win.first)
    best = slips(core, file_lines, win.first, win.last)
    for start in (s - 1, s, s + 1):
        for size in (win.size - 1, win.size, win.size + 1):
            if 0 <= start and size >= 1 and start + size <= len(nb):
                best = min(best, slips(core, file_lines, nb[start], nb[start + size - 1]))
    return best
