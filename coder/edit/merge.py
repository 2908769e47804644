"""What the file reads after a tolerant match: the one model of how old_str's lines map onto the file's and
where new_str's lines go (issue 17).

The mapping. A tolerant match pairs old_str's non-blank lines with file lines (`pairs`): equal after
whitespace, or (fuzzy) a line the model slightly misremembered. Every other non-blank line is *missing in
old_str* (a file line it left out) or *extra in old_str* (a line the file does not have). Blank lines are not
paired one by one: between two non-blank lines there is a *gap*, a count of blank lines (whitespace-only
lines count as blank), and gaps are compared by count.

The change is old_str -> new_str over their non-blank lines (difflib; trailing whitespace does not make a
line different). An *anchor* is a non-blank old_str line the change keeps and the mapping pairs with a file
line: it is written as the file has it. Between two anchors (and before the first, after the last) is a
*segment*; each is placed on its own:

- old_str and new_str are the same there: the file's lines stay as they are (left-out lines, whitespace,
  everything). A whitespace-only line is the same only with the same whitespace: new_str writing a blank line
  other than old_str shows it is a change (issue 30: the model, and the commit, meant those spaces).
- otherwise every old_str line there is replaced: the file lines they are paired with go, new_str's lines
  come in once, verbatim apart from the indentation shift of the match (whitespace-only lines as written;
  trailing whitespace dropped only when every line old_str copied carries trailing whitespace the file
  lacks: a habit of the copy). File lines old_str left out stay where they are when the replaced lines are
  on one side of them; new lines next to them with nothing replaced (before or after them?) are refused,
  and so are left-out lines among the replaced ones unless they are simply deleted with them (a deletion,
  not a move: lines new_str has elsewhere).
- each gap of the result is counted, never summed: with o, n, f the blank lines old_str, new_str and the file
  have there, the result has f when o = n (the model did not touch the gap; when the three counts agree, line by
  line: a blank line new_str writes with other whitespace than old_str's is written as new_str has it), n when
  o = f (old_str saw the gap right), f when n = f (new_str already has the file's blank lines, which old_str left
  out); anything else is not certain and refused. At the two ends of the match, blank lines old_str does not
  reach are the file's and stay; new_str's blank lines there stand for them, up to their number. New lines in a
  gap old_str shows short (o < f) split it in two: placed only when they sit against one side and new_str's blank
  lines, all on the other side, count n = f or o = n (that side gets the file's); blank lines on both sides or on
  neither cannot say which side has the file's, and are refused.

The rule behind all of it: a line of new_str is written as the model sent it unless one of these says otherwise,
(1) line-number prefixes are not text (coder.edit.lineprefix), (2) the indentation shift of the match applies to
new_str's non-blank lines, (3) trailing whitespace the copy adds to every line it copied is the copy's habit,
(4) where old_str and new_str show the same line, or the same blank lines, the file's stand (the model copied
them; its copy may have lost whitespace the file has).

A change that could sit one line up or down among lines that differ only in trailing whitespace is merged
twice (lines compared without and with trailing whitespace) and refused when the two files differ.

Refusals raise MatchError naming the matched lines and what is uncertain, with the file's text there, so
the model can copy old_str again and retry in one turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from coder.edit import indent as ind
from coder.edit.errors import MatchError


@dataclass
class _Parts:
    """A run of lines as its non-blank lines (`sk`, indices) and the gaps of blank lines around them."""

    lines: list[str]
    sk: list[int]

    def gap(self, t: int) -> list[str]:
        """Blank lines before non-blank line number t (t = len(sk): after the last one)."""
        start = self.sk[t - 1] + 1 if t > 0 else 0
        end = self.sk[t] if t < len(self.sk) else len(self.lines)
        return self.lines[start:end]


def _parts(lines: list[str]) -> _Parts:
    return _Parts(lines, [i for i, line in enumerate(lines) if line.strip()])


class _Unsure(Exception):
    """Placement is not certain; merge turns it into a MatchError that shows the place."""


def _gap(o: list[str], n: list[str], f: list[str]) -> list[str]:
    """The result's blank lines where old_str has `o`, new_str `n` and the file `f` (the counting rule)."""
    if len(o) == len(n) == len(f):
        # line by line: the file's where the model copied the line unchanged, new_str's where it wrote another
        return [fl if ol == nl else nl for ol, nl, fl in zip(o, n, f, strict=True)]
    if len(o) == len(n) or len(n) == len(f):
        return f
    if len(o) == len(f):
        return n
    raise _Unsure(f"old_str has {len(o)} blank line(s) where the file has {len(f)} and new_str {len(n)}, so how "
                  "many new_str means is not certain")


def _slides(ops: Sequence[tuple[str, int, int, int, int]], old: list[str], new: list[str]) -> bool:
    """A pure deletion or insertion that could move one line up or down and describe the same change."""
    for tag, i1, i2, j1, j2 in ops:
        seq, a, b = (old, i1, i2) if tag == "delete" else (new, j1, j2) if tag == "insert" else (None, 0, 0)
        if seq is not None and ((a > 0 and seq[a - 1] == seq[b - 1]) or (b < len(seq) and seq[a] == seq[b])):
            return True
    return False


def blank_run(lines: list[str], index: int, step: int) -> int:
    """How many blank lines the file has from `index` on, going by `step` (+1 down, -1 up)."""
    count = 0
    while 0 <= index < len(lines) and not lines[index].strip():
        count += 1
        index += step
    return count


def merge(old: list[str], new: list[str], file_lines: list[str], pairs: dict[int, int], imap: ind.IndentMap,
          line_offset: int = 0) -> tuple[int, int, list[str]]:
    """(first, last, lines): file lines first..last (0-based, inclusive) are to be replaced by `lines`.
    `pairs` maps old_str line indices to the file lines they stand for (non-blank pairs are used)."""
    aligned = {o: f for o, f in pairs.items() if old[o].strip() and file_lines[f].strip()}
    top = min(aligned.values())
    top -= blank_run(file_lines, top - 1, -1)
    bottom = max(aligned.values())
    # (the empty rest after a final newline is no blank line)
    bottom += blank_run(file_lines[:-1] if file_lines[-1] == "" else file_lines, bottom + 1, 1)
    region = file_lines[top: bottom + 1]
    amap = {o: f - top for o, f in aligned.items()}
    try:
        return top, bottom, _merge(old, new, region, amap, imap)
    except _Unsure as exc:
        shown = [f"{top + k + 1 + line_offset:6}\t{line}" for k, line in enumerate(region)]
        if len(shown) > 40:  # the place in full where it fits: the model copies old_str from it
            shown = shown[:20] + ["   ..."] + shown[-19:]
        raise MatchError(f"old_str matches lines {top + 1 + line_offset}-{bottom + 1 + line_offset} only "
                         f"approximately, and {exc}; nothing was changed. Copy old_str from the file as it is "
                         "there and retry:\n" + "\n".join(shown), kind="no-match") from None


def _merge(old: list[str], new: list[str], region: list[str], amap: dict[int, int],
           imap: ind.IndentMap) -> list[str]:
    out = _merge_keyed(old, new, region, amap, imap, str.rstrip)
    if any(x != x.rstrip() for x in old + new if x.strip()):
        # a change that could sit one line up or down, among lines that differ only in trailing whitespace: the
        # line kept as the file has it and the new line written as new_str has it trade places when it slides
        # (old_str's copy of a line with a slip, new_str with the same line once with and once without it).
        # Pairing old_str's lines only with byte-identical lines of new_str must give the same file
        o_keys = [x.rstrip() for x in old if x.strip()]
        n_keys = [x.rstrip() for x in new if x.strip()]
        if _slides(SequenceMatcher(None, o_keys, n_keys, autojunk=False).get_opcodes(), o_keys, n_keys):
            try:
                other = _merge_keyed(old, new, region, amap, imap, lambda x: x)
            except _Unsure:
                other = None
            if other != out:
                raise _Unsure("the change could sit one line up or down among repeated lines that differ in "
                              "trailing whitespace, and where it sits decides which of them the file gets")
    return out


def _merge_keyed(old: list[str], new: list[str], region: list[str], amap: dict[int, int],
                 imap: ind.IndentMap, key: Callable[[str], str]) -> list[str]:
    """The merge with old_str's and new_str's lines compared by `key` (trailing whitespace ignored, or not)."""
    o_sk = [i for i, x in enumerate(old) if x.strip()]
    n_sk = [j for j, x in enumerate(new) if x.strip()]
    o_keys, n_keys = [key(old[i]) for i in o_sk], [key(new[j]) for j in n_sk]
    ops = SequenceMatcher(None, o_keys, n_keys, autojunk=False).get_opcodes()
    kept = {o_sk[i1 + k]: n_sk[j1 + k] for tag, i1, i2, j1, _ in ops if tag == "equal" for k in range(i2 - i1)}
    anchors = [(o, kept[o], amap[o]) for o in o_sk if o in kept and o in amap]
    if not _describes(old, region, amap) and _slides(ops, o_keys, n_keys):
        raise _Unsure("the change could sit one line up or down (repeated lines) while old_str differs from "
                      "the file there")
    # trailing whitespace the model's copy adds to every line it copied (where the file has none) is a habit of
    # that copy: its new lines carry it too, so they lose it. A slip on some lines only says nothing about
    # new_str's own lines (a change may mean trailing whitespace): they keep every character
    bare = [(o, f) for o, f in amap.items() if region[f] == region[f].rstrip()]
    habit = bool(bare) and all(old[o] != old[o].rstrip() for o, _ in bare)

    def place(line: str) -> str:
        if not line.strip():
            return line  # whitespace-only lines as written
        line = line.rstrip() if habit else line
        lead = ind.leading(line)
        return imap.apply(lead) + line[len(lead):]

    bounds = [(-1, -1, -1), *anchors, (len(old), len(new), len(region))]
    new_keys = {x.rstrip() for x in n_keys}  # to tell a deletion from a move, in every segment
    out: list[str] = []
    for n, ((ao, an, ar), (bo, bn, br)) in enumerate(zip(bounds, bounds[1:], strict=False)):
        local = {o - ao - 1: f - ar - 1 for o, f in amap.items() if ao < o < bo}
        out += _segment(old[ao + 1: bo], new[an + 1: bn], region[ar + 1: br], local, place,
                        top=n == 0, bottom=n == len(bounds) - 2, elsewhere=new_keys)
        if n < len(bounds) - 2:
            out.append(region[br])
    return out


def _describes(old: list[str], region: list[str], amap: dict[int, int]) -> bool:
    """old_str stands for the region line for line: every non-blank line paired, the same blank lines
    between them (the blank lines at the two ends aside)."""
    o, r = _parts(old), _parts(region)
    if len(o.sk) != len(r.sk) or any(o not in amap for o in o.sk):
        return False
    return all(len(o.gap(t)) == len(r.gap(t)) for t in range(1, len(o.sk)))


def _same_key(line: str) -> str:
    """What makes two lines the same for "nothing changes here": trailing whitespace aside, but a whitespace-only
    line is itself (new_str writing other whitespace there is a change)."""
    return line.rstrip() if line.strip() else line


def _spare(o: _Parts, n: _Parts, head: bool) -> int:
    """How many of new_str's blank lines at the top (head) or bottom end of a segment may stand for the
    file's blank lines old_str does not reach there: its blank lines before its first line (after its last),
    or, when new_str has no line there (old_str's lines are deleted), those beyond the ones old_str shows."""
    if n.sk:
        return len(n.gap(0 if head else len(n.sk)))
    return max(0, len(n.lines) - len(o.gap(0)) - (len(o.gap(len(o.sk))) if o.sk else 0))


def _segment(o_lines: list[str], n_lines: list[str], r_lines: list[str], amap: dict[int, int],
             place: Callable[[str], str], top: bool, bottom: bool, elsewhere: set[str]) -> list[str]:
    """The result for one segment; `elsewhere` is new_str's non-blank lines (stripped of trailing
    whitespace), to tell a deletion from a move."""
    if [_same_key(x) for x in o_lines] == [_same_key(x) for x in n_lines]:
        return r_lines  # nothing changes here: the file's lines as they are
    head: list[str] = []
    tail: list[str] = []
    o, n, r = _parts(o_lines), _parts(n_lines), _parts(r_lines)
    # blank lines at an end of the match that old_str does not reach are the file's and stay; new_str's blank
    # lines there stand for them, up to their number
    if top and not o.gap(0) and r.gap(0):
        head = r.gap(0)
        drop = min(len(head), _spare(o, n, head=True))
        r_lines, n_lines = r_lines[len(head):], n_lines[drop:]
        amap = {k: v - len(head) for k, v in amap.items()}
    if bottom and not o.gap(len(o.sk)) and r.gap(len(r.sk)) and (r.sk or not head):
        tail = _parts(r_lines).gap(len(r.sk))
        nb = _parts(n_lines)
        drop = min(len(tail), _spare(o, nb, head=False))
        r_lines, n_lines = r_lines[: len(r_lines) - len(tail)], n_lines[: len(n_lines) - drop]
    n, r = _parts(n_lines), _parts(r_lines)
    k, m = len(o.sk), len(n.sk)
    if (top and 0 < len(o.gap(0)) < len(r.gap(0))) or (bottom and 0 < len(o.gap(k)) < len(r.gap(len(r.sk)))):
        raise _Unsure("old_str starts or ends inside a run of blank lines the file has, and new_str changes "
                      "lines there, so which of them it means is not certain")
    if any(i not in amap for i in o.sk):
        raise _Unsure("old_str has a line the file does not have there, next to lines new_str changes")
    body = [place(x) if x.strip() else x for x in n_lines[n.sk[0]: n.sk[-1] + 1]] if m else []
    if k == 0:
        if r.sk:
            raise _Unsure("new_str adds lines next to lines old_str leaves out, so whether they go before or "
                          "after them is not certain")
        o0, f0 = o.gap(0), r.gap(0)
        if m == 0:
            return head + _gap(o0, n.gap(0), f0) + tail
        if (tail and n.gap(0)) or (head and n.gap(m)):
            raise _Unsure("new_str adds lines with blank lines between them and the end of old_str, where the "
                          "file has blank lines old_str does not show, so whether those are the file's is not "
                          "certain")
        if len(o0) == len(f0):
            return head + n.gap(0) + body + n.gap(m) + tail
        up, low = n.gap(0), n.gap(m)
        if not (top or bottom) and len(o0) < len(f0) and bool(up) != bool(low) and len(up or low) in (len(o0), len(f0)):
            # new_str's lines sit against one of the two lines around the gap and its blank lines are all on the
            # other side: the gap is that side's, counted as one (f when n = f or o = n), so the file's blank
            # lines stay there, all of them, and nothing is summed
            return body + f0 if low else f0 + body
        # the model did not see the file's blank lines there as they are: whether new_str's blank lines are
        # the file's or new ones, and so on which side of them its lines go, is not known
        raise _Unsure("new_str adds lines among blank lines old_str does not show as the file has them, so "
                      "where among them they go is not certain")
    pos = {f: t for t, f in enumerate(r.sk)}
    ps = [pos[amap[i]] for i in o.sk]
    p, q = ps[0], ps[-1]
    inside = q - p + 1 != k  # file lines old_str left out among the ones it replaces
    if inside and m:
        raise _Unsure("old_str leaves out lines among the lines new_str replaces, so whether they stay, and "
                      "where, is not certain")
    pre = r_lines[: r.sk[p - 1] + 1] if p else []
    post = r_lines[r.sk[q + 1]:] if q + 1 < len(r.sk) else []
    if (pre or post) and r.sk and (p or q + 1 < len(r.sk)) and m and k != m:
        raise _Unsure("old_str leaves out lines next to the lines new_str replaces with a different number of "
                      "lines, so whether some of them go on the other side of those is not certain")
    f_up, f_low = r.gap(p), r.gap(q + 1)
    o_up, o_low = o.gap(0), o.gap(k)
    if m == 0:  # a deletion: the blank lines above and below the deleted lines become one gap
        if inside and any(o_lines[i].rstrip() in elsewhere for i in o.sk):
            # the "deleted" lines come back elsewhere in new_str: a move, and the file lines old_str left out
            # among them may belong with them there; deleting lines the model never showed is not certain
            raise _Unsure("old_str leaves out lines among lines new_str moves elsewhere, so whether those "
                          "move too, and where, is not certain")
        if (pre or post) and n.gap(0) and len(n.gap(0)) != len(o_up) + len(o_low):
            # new_str puts blank lines where it deletes, next to file lines old_str left out (which may have
            # blank lines of their own): whether they are new or stand for the file's is not certain
            raise _Unsure("new_str has blank lines where it deletes lines, next to lines old_str leaves out, so "
                          "whether those blank lines are new or the file's is not certain")
        if len(o_up) == len(f_up) and len(o_low) == len(f_low):
            return head + pre + n.gap(0) + post + tail
        if len(o_up) + len(o_low) == len(n.gap(0)) and not (f_up and f_low):
            # the model keeps the blank lines it saw (o = n, the counting rule's "untouched") and the file has
            # blank lines on one side only, so no two runs become one: the file's stay as they are
            return head + pre + f_up + f_low + post + tail
        if len(o_up) + len(o_low) < len(n.gap(0)) == len(f_up) + len(f_low) and not (f_up and f_low):
            # old_str left out blank lines around the deleted lines and new_str shows as many as the file has
            # there (n = f): they are the file's, and the file has them on one side only, so they stay as they are
            return head + pre + f_up + f_low + post + tail
        # old_str shows a gap other than the file has: whether new_str's blank lines keep the file's, or the
        # change deletes some with the lines, is not known
        raise _Unsure("old_str shows the blank lines around the lines it deletes other than the file has them, "
                      "so how many stay is not certain")
    if not inside and any(len(o.gap(t)) != len(r.gap(p + t)) for t in range(1, k)):
        if k != m:
            raise _Unsure("old_str shows the blank lines among the lines it replaces other than the file has "
                          "them, and new_str has a different number of lines there")
        body = []
        for t in range(m):
            body.append(place(n_lines[n.sk[t]]))
            if t < m - 1:
                body += _gap(o.gap(t + 1), n.gap(t + 1), r.gap(p + t + 1))
    return head + pre + _gap(o_up, n.gap(0), f_up) + body + _gap(o_low, n.gap(m), f_low) + post + tail
