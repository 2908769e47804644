"""The mistakes models make in `old_str` / `new_str`, as functions: shared by the property test
(tests/edit/test_edit_property_mistakes.py, choices drawn by hypothesis) and the benchmark on real commits
(benchmarks/edits_commits.py, choices from a seeded `random.Random`), so both check the same promise.

An edit is a unique block of a file (`Edit.first`..`Edit.end`) and the lines the model means to put there
(`Edit.meant`). A mistake changes what the model *sends* (old_str, new_str) and never what it means: the
intended file is always the block replaced by `meant`, unless the damaged old_str happens to occur exactly
once in the file, in which case the editor takes it literally (new_str replaces it as written), which is
the contract of str_replace. File-level mistakes (CRLF, a BOM, a final newline or not) are the file's, so
they are chosen where the file is written, not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Protocol, TypeVar

T = TypeVar("T")

#: every kind the matcher tolerates; a combination applies several in this order (prefixes last: they are
#: copied from a `view` of the text, after the other slips)
KINDS = ["trailing_ws", "shift", "tabs", "missing_blank", "missing_blank_old", "extra_blank",
         "trailing_blanks_new", "wrong_line", "missing_line", "numbers", "numbers_both"]


class Chooser(Protocol):
    """Where the random choices come from (hypothesis' `draw` or a seeded `random.Random`)."""

    def choice(self, items: Sequence[T]) -> T: ...


@dataclass
class Edit:
    lines: list[str]  # the file's lines (LF), as text.split("\n")
    first: int  # 0-based first line of the block
    end: int  # exclusive
    meant: list[str]  # what the model means to put there

    @property
    def block(self) -> list[str]:
        return self.lines[self.first: self.end]

    def intended(self) -> str:
        return "\n".join(self.lines[: self.first] + self.meant + self.lines[self.end:])


def _mapped(old: list[str], new: list[str], i: int) -> int | None:
    """The index in `new` of old line `i` when the change leaves it as it is, else None."""
    for tag, i1, i2, j1, _j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal" and i1 <= i < i2:
            return j1 + (i - i1)
    return None


def _kept_with_neighbours(old: list[str], new: list[str], i: int) -> bool:
    j = _mapped(old, new, i)
    return j is not None and _mapped(old, new, i - 1) == j - 1 and _mapped(old, new, i + 1) == j + 1


def _blank_run(lines: list[str], i: int) -> int:
    """The number of blank lines in the run that holds line i."""
    a, b = i, i
    while a > 0 and not lines[a - 1].strip():
        a -= 1
    while b + 1 < len(lines) and not lines[b + 1].strip():
        b += 1
    return b - a + 1


def _unit(lines: list[str]) -> str:
    return "\t" if any(x.startswith("\t") for x in lines) else "    "


def _shift(lines: list[str], delta: str, unit: str) -> list[str] | None:
    out = []
    for line in lines:
        if not line.strip():
            out.append(line)
        elif delta == "+":
            out.append(unit + line)
        elif line.startswith(unit):
            out.append(line[len(unit):])
        else:
            return None
    return out


def _retab(lines: list[str], to_tabs: bool) -> list[str]:
    out = []
    for line in lines:
        lead = line[: len(line) - len(line.lstrip(" \t"))]
        if not line.strip():
            out.append(line)
        elif to_tabs:
            out.append("\t" * (len(lead.expandtabs(4)) // 4) + " " * (len(lead.expandtabs(4)) % 4) + line.lstrip())
        else:
            out.append(lead.expandtabs(4) + line.lstrip())
    return out


def _shared(old: list[str], new: list[str]) -> list[int]:
    """Indices of old's non-blank lines that the change keeps (so a slip in them is in both copies)."""
    return [i for i in range(len(old)) if old[i].strip() and _mapped(old, new, i) is not None]


def mistake(kind: str, edit: Edit, old: list[str], new: list[str],
            pick: Chooser) -> tuple[list[str], list[str]] | None:
    """(old, new) with one mistake of `kind` made the way a model makes it; None when it does not apply."""
    shared = _shared(old, new)
    if kind == "trailing_ws" and shared:
        i = pick.choice(shared)
        j = _mapped(old, new, i)
        pad = pick.choice([" ", "  ", "\t"])
        o, n = list(old), list(new)
        o[i] += pad
        if j is not None and pick.choice([True, False]):  # the copy in new_str may carry it too, or not
            n[j] += pad
        return o, n
    if kind == "shift":
        delta = pick.choice(["+", "-"])
        unit = _unit(old)
        o, n = _shift(old, delta, unit), _shift(new, delta, unit)
        return (o, n) if o is not None and n is not None and o != old else None
    if kind == "tabs":
        to_tabs = _unit(old) != "\t"
        o, n = _retab(old, to_tabs), _retab(new, to_tabs)
        return (o, n) if o != old else None
    if kind in ("missing_blank", "missing_blank_old"):
        # a blank line between two lines of the block: one at its edge left out is a shorter old_str, not a
        # slip (and trailing_blanks_new covers new_str ending with the blank lines old_str stops before)
        # (and one the change leaves alone with the lines around it: otherwise which blank line new_str keeps
        # is the change's business, and leaving it out would change what the model says it does)
        text = [i for i, x in enumerate(old) if x.strip()]
        inner = [i for i, x in enumerate(old) if not x.strip() and text and text[0] < i < text[-1]
                 and _kept_with_neighbours(old, new, i)]
        if not inner:
            return None
        i = pick.choice(inner)
        j = _mapped(old, new, i)
        if j is None or _blank_run(old, i) != _blank_run(new, j):
            # the change is about that blank line itself, or resizes its run of blank lines: a blank line
            # left out of both copies there reads exactly as missing_blank_old (old_str alone short of the
            # file's count), and the editor takes that reading (the case), so it is no draw of this kind
            return None
        o = old[:i] + old[i + 1:]
        return (o, new) if kind == "missing_blank_old" else (o, new[:j] + new[j + 1:])
    if kind == "extra_blank":
        # a place between two lines the change keeps next to each other: the same place in both copies (a
        # blank line added between lines the change moves apart would be new_str's own, not a slip)
        inner = [i for i in range(1, len(old)) if old[i].strip() and old[i - 1].strip()
                 and _mapped(old, new, i) is not None and _mapped(old, new, i - 1) == _mapped(old, new, i) - 1]
        if not inner:
            return None
        i = pick.choice(inner)
        j = _mapped(old, new, i)
        assert j is not None
        return old[:i] + [""] + old[i:], new[:j] + [""] + new[j:]
    if kind == "trailing_blanks_new":
        after = 0
        while edit.end + after < len(edit.lines) - 1 and not edit.lines[edit.end + after].strip():
            after += 1
        if not after or (old and not old[-1].strip()):
            return None
        return old, new + edit.lines[edit.end: edit.end + after]  # new_str copied with the blank lines below
    if kind == "wrong_line" and len(shared) >= 3:
        i = pick.choice(shared)
        j = _mapped(old, new, i)
        line = old[i]
        bad = line.replace("=", "==", 1) if "=" in line else line.replace("(", "( ", 1) if "(" in line \
            else line + " # x"
        o, n = list(old), list(new)
        o[i] = bad
        if j is not None:
            n[j] = bad
        return o, n
    if kind == "missing_line" and len(shared) >= 4:
        # a line the change keeps in place among its neighbours: one the change moves (kept by the diff, with
        # changed lines on a side) cannot be left out of both copies without hiding where it goes
        # and with a non-blank line of old_str on both sides: one left out at its edge (only blank lines
        # beyond it) is a shorter old_str, not a slip
        text = [k for k, x in enumerate(old) if x.strip()]
        inner = [i for i in shared if text[0] < i < text[-1] and _kept_with_neighbours(old, new, i)]
        if not inner:
            return None
        i = pick.choice(inner)
        j = _mapped(old, new, i)
        assert j is not None
        return old[:i] + old[i + 1:], new[:j] + new[j + 1:]
    if kind in ("numbers", "numbers_both"):
        o = [f"{edit.first + k + 1:6}\t{x}" for k, x in enumerate(old)]
        n = [f"{edit.first + k + 1:6}\t{x}" for k, x in enumerate(new)] if kind == "numbers_both" else new
        return o, n
    return None


def damage(edit: Edit, kinds: list[str], pick: Chooser) -> tuple[str, str, list[str]]:
    """old_str and new_str as the model sends them with the mistakes of `kinds` (those that apply), and
    the kinds applied."""
    old, new = edit.block, list(edit.meant)
    done = []
    if "extra_blank" in kinds and any(k.startswith("missing_blank") for k in kinds):
        # at one place they cancel out in old_str and leave new_str adding a blank line: a real change, not
        # a mistake
        kinds = [k for k in kinds if k != "extra_blank"]
    for kind in sorted(kinds, key=KINDS.index):
        out = mistake(kind, edit, old, new, pick)
        if out is not None:
            old, new = out
            done.append(kind)
    return "\n".join(old), "\n".join(new), done


def expected(text: str, edit: Edit, old: str, new: str) -> str:
    """What the file must read after the edit: the model's meaning, or the literal replacement when the
    damaged old_str occurs exactly once (str_replace's contract)."""
    if text.count(old) == 1:
        return text.replace(old, new, 1)
    return edit.intended()


def encode(text: str, crlf: bool, bom: bool) -> bytes:
    return (b"\xef\xbb\xbf" if bom else b"") + (text.replace("\n", "\r\n") if crlf else text).encode("utf-8")
