"""Indentation arithmetic for tolerant matching.

When a model's `old_str` matches the file except for a uniform indentation shift (a snippet pasted at column
0, four spaces where the file has a tab), its `new_str` is written in the same shifted frame. `IndentMap`
maps indentation strings of the model's frame onto the file's, so new lines land at the right depth with the
file's own indent characters. A map only exists when the shift is uniform: relative indentation that differs
(a different block structure in Python) is not a shift, and matching refuses it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


def leading(line: str) -> str:
    """The leading whitespace (spaces and tabs) of `line`."""
    return line[: len(line) - len(line.lstrip(" \t"))]


def space_unit(lines: Iterable[str], default: int = 4) -> int:
    """The indentation unit in spaces. First the step that opens a block (the indentation gained after a line
    ending in `:` or `{`): docstrings, tables and continuation lines aligned at odd columns say nothing
    about it. With one indentation width only, `default` when it divides it (a single level says nothing of
    the unit). Else the largest of 8, 4, 3, 2 that divides nine in ten of the indentation widths, else the
    most common positive step between consecutive lines, else `default`."""
    widths: list[int] = []
    steps: Counter[int] = Counter()
    blocks: Counter[int] = Counter()
    previous: int | None = None
    opens = False
    for line in lines:
        if not line.strip():
            continue
        width = len(leading(line).expandtabs(8))
        if width:
            widths.append(width)
        if previous is not None and width > previous:
            steps[width - previous] += 1
            if opens:
                blocks[width - previous] += 1
        previous = width
        opens = line.rstrip().endswith((":", "{"))
    for step, _ in blocks.most_common(1):
        if step in (2, 3, 4, 8):
            return step
    if len(set(widths)) == 1 and widths[0] % default == 0:
        return default  # one indentation level only: 8 columns are two 4-column levels as much as one of 8
    for unit in (8, 4, 3, 2):
        if widths and sum(w % unit == 0 for w in widths) * 10 >= len(widths) * 9 and (unit != 8 or 4 not in steps):
            return unit
    for step, _ in steps.most_common():
        if step in (2, 3, 4, 8):
            return step
    return default


def _uses_tabs(indents: Iterable[str]) -> bool:
    return any("\t" in ind for ind in indents)


@dataclass
class IndentMap:
    """Maps indentation of the model's frame to the file's. kind: "identity", "prefix" (replace a base
    prefix) or "levels" (convert whole indent units, e.g. 4 spaces -> 1 tab, then shift by `offset`)."""

    kind: str = "identity"
    old_base: str = ""
    file_base: str = ""
    old_unit: str = "    "
    file_unit: str = "    "
    offset: int = 0

    def apply(self, indent: str) -> str:
        if self.kind == "identity":
            return indent
        if self.kind == "prefix":
            if indent.startswith(self.old_base):
                return self.file_base + indent[len(self.old_base):]
            if self.old_base.startswith(indent):
                removed = self.old_base[len(indent):]
                if self.file_base.endswith(removed):
                    return self.file_base[: len(self.file_base) - len(removed)]
            width = len(indent.expandtabs(8)) - len(self.old_base.expandtabs(8)) + len(self.file_base.expandtabs(8))
            return " " * max(0, width)
        levels, rest = 0, indent
        while self.old_unit and rest.startswith(self.old_unit):
            levels += 1
            rest = rest[len(self.old_unit):]
        return self.file_unit * max(0, levels + self.offset) + rest

    def describe(self) -> str:
        if self.kind == "identity":
            return "same indentation"
        if self.kind == "prefix":
            return f"indentation {_show(self.old_base)} in old_str is {_show(self.file_base)} in the file"
        shift = f", shifted by {self.offset:+d} level(s)" if self.offset else ""
        return f"indent unit {_show(self.old_unit)} in old_str is {_show(self.file_unit)} in the file{shift}"


def _show(indent: str) -> str:
    if not indent:
        return "none"
    tabs, spaces = indent.count("\t"), indent.count(" ")
    parts = [f"{tabs} tab{'s' * (tabs != 1)}"] if tabs else []
    parts += [f"{spaces} space{'s' * (spaces != 1)}"] if spaces else []
    return "+".join(parts)


def infer(pairs: list[tuple[str, str]], model_lines: list[str], file_lines: list[str]) -> IndentMap | None:
    """The map taking each model indent of `pairs` to its file indent, or None when no uniform map does.
    `model_lines` (old and new lines) and `file_lines` (a sample of the file) give the indent units."""
    pairs = [(o, f) for o, f in pairs]
    if all(o == f for o, f in pairs):
        return IndentMap()
    old_tabs = _uses_tabs(o for o, _ in pairs)
    file_tabs = _uses_tabs(f for _, f in pairs)
    if old_tabs == file_tabs:
        base_o, base_f = min(pairs, key=lambda p: len(p[0]))
        if all(o.startswith(base_o) and f.startswith(base_f) and o[len(base_o):] == f[len(base_f):]
               for o, f in pairs):
            return IndentMap("prefix", old_base=base_o, file_base=base_f)
    old_detected = "\t" if _uses_tabs(leading(x) for x in model_lines) else " " * space_unit(model_lines)
    file_detected = "\t" if file_tabs else " " * space_unit(file_lines)
    # the detected units first; then other common units, because one tab may stand for 2, 4 or 8 spaces
    for file_unit in _units(file_detected):
        for old_unit in _units(old_detected):
            offsets = set()
            for o, f in pairs:
                lo, ro = _levels(o, old_unit)
                lf, rf = _levels(f, file_unit)
                if ro or rf:
                    break
                offsets.add(lf - lo)
            else:
                if len(offsets) == 1:
                    return IndentMap("levels", old_unit=old_unit, file_unit=file_unit, offset=offsets.pop())
    return None


def _units(detected: str) -> list[str]:
    if detected == "\t":
        return ["\t"]
    return [detected] + [" " * n for n in (4, 2, 8) if " " * n != detected]


def _levels(indent: str, unit: str) -> tuple[int, str]:
    levels = 0
    while unit and indent.startswith(unit):
        levels += 1
        indent = indent[len(unit):]
    return levels, indent
