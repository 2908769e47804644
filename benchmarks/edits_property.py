"""Issue 17's promise, as a property: an edit whose old_str carries the mistakes models make (and that the
matcher tolerates) is applied exactly as meant, byte for byte, or refused; never anything else.

Files are drawn in the shape of real code (functions, nested blocks, blank lines between them, comments,
whitespace-only lines, tabs or spaces, CRLF, a BOM, with or without a final newline). An edit is a unique block
of the file and the model's intended new block (a line changed, added or removed); the intended file is that
exact replacement. Then mistakes are applied to what the model sends, alone and combined: trailing
whitespace, an indentation shift, tabs for spaces, `view` line-number prefixes (in old_str, and maybe in
new_str), a blank line missing or extra (in both, or only in old_str), trailing blank lines of new_str that
old_str left out, one misremembered shared line. The editor runs on a real file through `Editor.str_replace`.

A benchmark, not a test: it counts, per run of random draws, edits applied exactly, refused and applied
wrongly (the goal is zero), and prints the first wrong ones. `python benchmarks/edits_property.py --examples
2000 --runs 3`. The classes it found and the matcher now handles are regression tests in tests/edit.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from edits_corpus import _map_equal  # noqa: E402

from coder.edit.errors import EditError  # noqa: E402
from coder.edit.ops import Editor  # noqa: E402

NAMES = ["total", "count", "items", "value", "result", "config", "path", "name", "data", "index", "size"]
CALLS = ["append", "update", "get", "write", "close", "join", "split", "strip", "format", "lower"]


@st.composite
def statement(draw: st.DrawFn) -> str:
    a, b = draw(st.sampled_from(NAMES)), draw(st.sampled_from(NAMES))
    form = draw(st.integers(0, 6))
    return [f"{a} = {b} + {draw(st.integers(0, 99))}", f"{a}.{draw(st.sampled_from(CALLS))}({b})",
            f"return {a}", f"# {a} then {b}", f"if {a} > {draw(st.integers(0, 9))}:", f"{a} += 1",
            f"log('{a}', {b})"][form]


@st.composite
def source(draw: st.DrawFn) -> list[str]:
    """Lines of a Python-shaped file: functions with bodies, blank lines between them, nested blocks."""
    lines: list[str] = []
    for f in range(draw(st.integers(2, 5))):
        lines.append(f"def {draw(st.sampled_from(NAMES))}_{f}({draw(st.sampled_from(NAMES))}):")
        depth = 1
        for _ in range(draw(st.integers(2, 8))):
            stmt = draw(statement())
            lines.append("    " * depth + stmt)
            if stmt.endswith(":"):
                depth += 1
                lines.append("    " * depth + draw(statement()).rstrip(":") + "  # body")
            elif depth > 1 and draw(st.booleans()):
                depth -= 1
            if draw(st.integers(0, 5)) == 0:
                lines.append(draw(st.sampled_from(["", "    " * depth])))  # blank or whitespace-only
        lines += [""] * draw(st.integers(1, 2))
    return lines


def _shift(lines: list[str], delta: str, unit: str) -> list[str] | None:
    """Indentation shifted by one `unit` less (delta "-") or more ("+") on every non-blank line."""
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


MISTAKES = ["trailing_ws", "shift", "tabs", "numbers", "numbers_both", "missing_blank", "missing_blank_old",
            "extra_blank", "trailing_blanks_new", "wrong_line"]


def mistake(kind: str, old: list[str], new: list[str], first: int, draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """Apply one mistake to (old, new) the way a model makes it; unchanged when it does not apply."""
    shared = [line for line in old if line in new and line.strip()]
    if kind == "trailing_ws" and shared:
        pick = draw(st.sampled_from(shared))
        pad = draw(st.sampled_from([" ", "  ", "\t"]))
        return [x + pad if x == pick else x for x in old], [x + pad if x == pick else x for x in new]
    if kind == "shift":
        delta = draw(st.sampled_from(["+", "-"]))
        o, n = _shift(old, delta, "    "), _shift(new, delta, "    ")
        return (o, n) if o is not None and n is not None else (old, new)
    if kind == "tabs":
        def tabs(lines: list[str]) -> list[str]:
            return [("\t" * ((len(x) - len(x.lstrip(" "))) // 4) + x.lstrip(" ")) if x.strip() else x for x in lines]
        return tabs(old), tabs(new)
    if kind in ("numbers", "numbers_both"):
        o = [f"{first + i + 1:6}\t{x}" for i, x in enumerate(old)]
        return o, ([f"{first + i + 1:6}\t{x}" for i, x in enumerate(new)] if kind == "numbers_both" else new)
    if kind in ("missing_blank", "missing_blank_old"):
        inner = [i for i, x in enumerate(old) if not x.strip() and 0 < i < len(old) - 1]
        if not inner:
            return old, new
        i = inner[0]
        j = _map_equal(old, new, i)
        if j is None:
            return old, new  # the change is about that blank line itself
        o = old[:i] + old[i + 1:]
        if kind == "missing_blank_old":
            return o, new  # the model dropped it from old_str only: new_str still has it
        return o, new[:j] + new[j + 1:]
    if kind == "extra_blank":
        inner = [i for i in range(1, len(old)) if old[i].strip() and old[i - 1].strip()
                 and _map_equal(old, new, i) is not None and _map_equal(old, new, i - 1) is not None]
        if not inner:
            return old, new
        i = draw(st.sampled_from(inner))
        j = _map_equal(old, new, i)
        return old[:i] + [""] + old[i:], new[:j] + [""] + new[j:]
    if kind == "trailing_blanks_new":
        # old_str left out the blank lines after the block; new_str (copied with them) has them
        return old, new
    if kind == "wrong_line" and len(shared) >= 3:
        pick = draw(st.sampled_from(shared))
        bad = pick.replace("=", "==", 1) if "=" in pick else pick + " # x"
        return [bad if x == pick else x for x in old], [bad if x == pick else x for x in new]
    return old, new


@st.composite
def case(draw: st.DrawFn) -> tuple[str, str, str, str, list[str]]:
    lines = draw(source())
    if not draw(st.booleans()):  # no final newline
        while lines and not lines[-1]:
            lines.pop()
    size = draw(st.integers(2, 6))
    first = draw(st.integers(0, max(0, len(lines) - size)))
    block = lines[first: first + size]
    text = "\n".join(lines)
    if not any(x.strip() for x in block) or text.count("\n".join(block)) != 1:
        return text, "", "", "", "", []
    change = draw(st.sampled_from(["replace", "add", "remove", "add_blank_then_line"]))
    new = list(block)
    k = draw(st.integers(0, len(block) - 1))
    indent = block[k][: len(block[k]) - len(block[k].lstrip())]
    if change == "replace" and block[k].strip():
        new[k] = indent + draw(statement())
    elif change == "add":
        new.insert(k + 1, indent + draw(statement()))
    elif change == "remove" and len(block) > 2:
        del new[k]
    else:
        new[k + 1:k + 1] = ["", indent + draw(statement())]
    if new == block:
        return text, "", "", "", "", []
    trailing = draw(st.booleans())
    kinds = draw(st.lists(st.sampled_from(MISTAKES), min_size=1, max_size=3, unique=True))
    if "extra_blank" in kinds and any(k.startswith("missing_blank") for k in kinds):
        kinds.remove("extra_blank")  # together they would say "add a blank line", not make a mistake
    kinds.sort(key=lambda k: k.startswith("numbers"))  # prefixes come last: copied from a view of the text
    old_m, new_m = list(block), list(new)
    for kind in kinds:
        if kind == "trailing_blanks_new":
            after = 0
            while first + size + after < len(lines) and not lines[first + size + after].strip():
                after += 1
            if after and trailing:
                new_m = new_m + [""] * after  # the model's new_str ends with the file's blank lines
            continue
        old_m, new_m = mistake(kind, old_m, new_m, first, draw)
    return text, "\n".join(block), "\n".join(new), "\n".join(old_m), "\n".join(new_m), kinds


def encode(text: str, crlf: bool, bom: bool) -> bytes:
    return (b"\xef\xbb\xbf" if bom else b"") + (text.replace("\n", "\r\n") if crlf else text).encode("utf-8")


def run(examples: int, seed: int) -> dict:
    """Draw `examples` cases; count applied exactly / refused / wrong, keep the first wrong ones."""
    import random
    import tempfile

    counts = {"exact": 0, "refused": 0, "wrong": 0, "skipped": 0}
    wrong: list[str] = []

    @settings(max_examples=examples, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(c=case(), crlf=st.booleans(), bom=st.booleans())
    def probe(c, crlf: bool, bom: bool) -> None:
        text, block, meant, old, new, kinds = c
        if not old or old == new or text.count(block) != 1:
            counts["skipped"] += 1
            return
        with tempfile.TemporaryDirectory() as ws:
            path = Path(ws) / "mod.py"
            before = encode(text, crlf, bom)
            path.write_bytes(before)
            # an old_str that occurs exactly once is taken literally (new_str as written): the mistakes are
            # only tolerated where old_str does not match exactly
            exact = text.count(old) == 1
            want = encode(text.replace(old, new, 1) if exact else text.replace(block, meant, 1), crlf, bom)
            try:
                Editor(Path(ws)).str_replace("mod.py", old, new)
            except EditError:
                counts["refused" if path.read_bytes() == before else "wrong"] += 1
                return
            if path.read_bytes() == want:
                counts["exact"] += 1
            else:
                counts["wrong"] += 1
                if len(wrong) < 5:
                    wrong.append(f"kinds {kinds}: old_str {old!r} new_str {new!r}")

    random.seed(seed)
    probe()
    return {"counts": counts, "wrong_examples": wrong}


def main() -> int:
    import argparse
    import json
    import time

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3, help="independent random runs")
    args = ap.parse_args()
    for r in range(args.runs):
        started = time.time()
        out = run(args.examples, r)
        print(json.dumps({"run": r, "seconds": round(time.time() - started), **out}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
