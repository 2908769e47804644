"""Line-number prefixes that models copy from `view` output into `old_str` (and often `new_str`).

OpenHands and SWE-agent trajectories are full of `old_str` values like "    12\tdef f():". A prefix is only
recognised when every non-blank line carries one in the same style and (for old_str) the numbers count up by
one, so text that merely starts with digits is left alone."""

from __future__ import annotations

import re

STYLES: dict[str, re.Pattern[str]] = {
    "tab": re.compile(r"^\s*(\d+)\t(.*)$", re.S),
    "arrow": re.compile(r"^\s*(\d+)\s?→(.*)$", re.S),
    "pipe": re.compile(r"^\s*(\d+) ?\| ?(.*)$", re.S),
    "colon": re.compile(r"^\s*L?(\d+): ?(.*)$", re.S),
    "space": re.compile(r"^\s*(\d+) (.*)$", re.S),
}
BARE = re.compile(r"^\s*(\d+)\s*$")


def strip_prefixes(lines: list[str], style: str | None = None,
                   consecutive: bool = True) -> tuple[list[str], list[int], str] | None:
    """(lines without prefixes, their numbers, style) when every non-blank line has a prefix of one style,
    else None. With `consecutive`, the numbers must increase by exactly one per line."""
    styles = [style] if style else list(STYLES)
    for name in styles:
        pattern = STYLES[name]
        out: list[str] = []
        numbers: list[int] = []
        expected: int | None = None
        ok = True
        for line in lines:
            match = pattern.match(line) or BARE.match(line)
            if match:
                number = int(match.group(1))
                if consecutive and expected is not None and number != expected:
                    ok = False
                    break
                numbers.append(number)
                out.append(match.group(2) if match.re is pattern else "")
                expected = number + 1
            elif not line.strip():
                out.append(line)
                expected = expected + 1 if expected is not None else None
            else:
                ok = False
                break
        if not ok or not numbers or (name == "space" and len(numbers) < 2):
            continue
        return out, numbers, name
    return None
