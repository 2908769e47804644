"""Error text for an old_str that matched nowhere: the closest places, with line numbers, and how they differ.

The model fixes a failed edit in one turn when it is told which line differs and in what way (indentation,
trailing spaces, tabs, a changed word); "no match" alone costs it a `view` and often another miss."""

from __future__ import annotations

from difflib import SequenceMatcher

from coder.edit import indent as ind
from coder.edit.similar import align, rank_windows

MAX_DETAILS = 6


def _q(line: str, width: int = 100) -> str:
    text = repr(line)
    return text if len(text) <= width else text[: width - 4] + "...'"


def _how(file_line: str, old_line: str) -> str:
    if file_line.rstrip() == old_line.rstrip():
        return "only trailing whitespace differs"
    if file_line.strip() == old_line.strip():
        fi, oi = ind.leading(file_line), ind.leading(old_line)
        if ("\t" in fi) != ("\t" in oi):
            return f"tabs vs spaces in the indentation (file {ind._show(fi)}, old_str {ind._show(oi)})"
        return f"only indentation differs (file {ind._show(fi)}, old_str {ind._show(oi)})"
    if " ".join(file_line.split()) == " ".join(old_line.split()):
        return "only spacing inside the line differs"
    return "text differs"


def describe_closest(file_lines: list[str], old_lines: list[str], prefixed: bool = False, offset: int = 0) -> str:
    """The no-match message for `old_lines` against the file."""
    lo, hi = 0, len(old_lines)
    while lo < hi and not old_lines[lo].strip():
        lo += 1
    while hi > lo and not old_lines[hi - 1].strip():
        hi -= 1
    core = old_lines[lo:hi]
    head = "No match for old_str (the file was not changed)."
    if prefixed:
        head += " old_str lines start with line numbers copied from `view`; they were stripped, still no match."
    windows = [w for w in rank_windows(file_lines, core, min_votes=1)[:2] if w.score >= 0.5]
    if not windows:
        best = _best_lines(file_lines, core)
        if not best:
            return (head + " No line of old_str occurs in the file, even ignoring whitespace: check the path, "
                    "or `view` the file to copy the exact text.")
        parts = [head, "No block of old_str matches; the most similar single lines are:"]
        for score, i, k in best:
            parts.append(f"  line {i + 1 + offset} ({score:.0%}): {_q(file_lines[i])}  vs old_str line {k + 1}: "
                         f"{_q(core[k])} ({_how(file_lines[i], core[k])})")
        parts.append("Copy the text exactly from the file (use `view` with a view_range).")
        return "\n".join(parts)
    parts = [head]
    for n, win in enumerate(windows):
        label = "Closest place" if n == 0 else "Next closest"
        parts.append(f"{label}: lines {win.first + 1 + offset}-{win.last + 1 + offset} ({win.score:.0%} similar):")
        region = file_lines[win.first: win.last + 1]
        parts.extend(differences(core, region, win.first + offset))
    parts.append("Fix old_str to match the file exactly (or `view` those lines again), then retry.")
    return "\n".join(parts)


def differences(core: list[str], region: list[str], offset: int) -> list[str]:
    mapping, _ = align(core, region)
    out: list[str] = []
    mapped_region = set(mapping.values())
    for o, line in enumerate(core):
        f = mapping.get(o)
        if f is None:
            if line.strip():
                out.append(f"  old_str line {o + 1} {_q(line)} is not in the file here")
            continue
        if region[f] != line:
            out.append(f"  line {offset + f + 1}: {_how(region[f], line)}\n"
                       f"      file:    {_q(region[f])}\n      old_str: {_q(line)}")
    for f, line in enumerate(region):
        if f not in mapped_region and line.strip():
            out.append(f"  line {offset + f + 1} {_q(line)} is in the file but not in old_str")
    if len(out) > MAX_DETAILS:
        out = out[:MAX_DETAILS] + [f"  ... and {len(out) - MAX_DETAILS} more differences"]
    return out or ["  (differs only in blank lines)"]


def _best_lines(file_lines: list[str], core: list[str], limit: int = 3) -> list[tuple[float, int, int]]:
    found: list[tuple[float, int, int]] = []
    targets = [(k, line.strip()) for k, line in enumerate(core) if line.strip()][:5]
    for i, line in enumerate(file_lines[:50000]):
        text = line.strip()
        if not text:
            continue
        for k, target in targets:
            matcher = SequenceMatcher(None, target, text, autojunk=False)
            if matcher.real_quick_ratio() < 0.6 or matcher.quick_ratio() < 0.6:
                continue
            score = matcher.ratio()
            if score >= 0.6:
                found.append((score, i, k))
    found.sort(reverse=True)
    return found[:limit]
