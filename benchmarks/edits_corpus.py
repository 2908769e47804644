"""Corpus generator for benchmarks/edits.py: real files from real projects, edits the way models get them wrong.

Sources (downloaded with the registries' own clients, cached outside the repository):
  Python      requests 2.32.3 and flask 3.0.3 sdists from PyPI (`pip download --no-deps --no-binary :all:`)
  TypeScript  rxjs 7.8.1 from npm (`npm pack`; the tarball ships its src/*.ts)
  JavaScript  axios 1.7.7 from npm (`npm pack`; lib/*.js)
  Go          gojsonnet 0.20.0 sdist from PyPI: the Python binding of go-jsonnet ships the Go sources of the
              whole Go project (ast/, parser/, formatter/, ...), which is how we get real Go code from a
              registry we may use (Go module proxies are not available here).

Each case takes a block of 3-7 lines from a file, makes a real change to it (a comment appended, an
identifier renamed, a line inserted or deleted; the result must still parse with tree-sitter), and then
damages the model's view of the block in one of the ways agents do: indentation shifted, trailing spaces,
tabs vs spaces, a missing or extra blank line, line-number prefixes copied from `view`, one slightly wrong
line among five, CRLF files. Some cases have no unique intent (the block occurs twice, the text is not in
the file, or the model's memory of it is badly wrong): the right answer there is a refusal.

Usage: python benchmarks/edits_corpus.py [--cache DIR] [--count N] [--seed S]   (writes DIR/corpus.jsonl)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import tarfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: issue 17 added rich (Python) and orjson (Rust, a language the matcher was never tuned on); the first five are
#: what the matcher was built while looking at
PYPI = [("requests", "2.32.3"), ("flask", "3.0.3"), ("gojsonnet", "0.20.0"), ("rich", "13.9.4"),
        ("orjson", "3.10.12")]
NPM = [("rxjs", "7.8.1"), ("axios", "1.7.7")]
LANG_OF = {".py": "python", ".ts": "typescript", ".js": "javascript", ".go": "go", ".rs": "rust"}
COMMENT = {"python": "#", "typescript": "//", "javascript": "//", "go": "//", "rust": "//"}

#: missing_blank_old: old_str lacks a blank line the file has and new_str keeps it; trailing_blanks: old_str
#: stops before the blank lines after the block, new_str (copied with them) ends with them (issue 17's cases)
APPLY_KINDS = ["exact", "indent_shift", "trailing_ws", "tabs_spaces", "missing_blank", "missing_blank_old",
               "extra_blank", "trailing_blanks", "line_numbers", "wrong_line", "crlf"]
REFUSE_KINDS = ["ambiguous_exact", "ambiguous_shifted", "absent", "badly_wrong"]


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coder-bench" / "edits"


@dataclass
class Case:
    id: str
    lang: str
    file: str  # relative to the cache's src/ folder
    file_sha256: str
    kind: str
    expect: str  # "apply" or "refuse"
    crlf: bool
    old_str: str
    new_str: str
    change: str  # what the intended edit does
    start: int = 0  # 0-based first line of the true block
    end: int = 0  # exclusive
    new_block: list[str] = field(default_factory=list)  # the true replacement lines

    def expected_text(self, text: str) -> str:
        lines = text.split("\n")
        return "\n".join(lines[: self.start] + self.new_block + lines[self.end:])


# -- sources --------------------------------------------------------------------------------------------
def fetch(cache: Path) -> Path:
    """Download and unpack the sources once; returns the src folder."""
    dl, src = cache / "dl", cache / "src"
    dl.mkdir(parents=True, exist_ok=True)
    src.mkdir(parents=True, exist_ok=True)
    for name, version in PYPI:
        if not list(dl.glob(f"{name}-{version}.tar.gz")):
            sdist_from_index(name, version, dl)
    for name, version in NPM:
        if not (dl / f"{name}-{version}.tgz").exists():
            subprocess.run(["npm", "pack", "--silent", f"{name}@{version}"], cwd=dl, check=True,
                           stdout=subprocess.DEVNULL)
    for archive in sorted(dl.iterdir()):
        target = src / archive.name.split(".t")[0]
        if target.exists():
            continue
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
    return src


def sdist_from_index(name: str, version: str, dest: Path) -> None:
    """The source archive as the package index serves it (its simple page), without building anything:
    `pip download --no-binary` would prepare the metadata, which for orjson means compiling maturin."""
    import urllib.request

    page = urllib.request.urlopen(f"https://pypi.org/simple/{name}/", timeout=60).read().decode()
    wanted = f"{name}-{version}.tar.gz"
    match = re.search(r'href="([^"]*/' + re.escape(wanted) + r')(#[^"]*)?"', page)
    if not match:
        raise SystemExit(f"{wanted} is not on the package index")
    with urllib.request.urlopen(match.group(1), timeout=120) as response:
        (dest / wanted).write_bytes(response.read())


def pick_files(src: Path) -> dict[str, list[Path]]:
    files: dict[str, list[Path]] = {}
    for path in sorted(src.rglob("*")):
        lang = LANG_OF.get(path.suffix)
        if not lang or not path.is_file() or path.name.endswith((".d.ts", "_test.go", ".min.js")):
            continue
        if any(part in ("tests", "test", "testdata", "spec", "examples", "docs", "dist", "astgen")
               for part in path.relative_to(src).parts):
            continue
        if lang == "javascript" and "/lib/" not in path.as_posix():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        n = text.count("\n")
        if 60 <= n <= 3000 and "\r" not in text:
            files.setdefault(lang, []).append(path)
    return files


# -- checks ---------------------------------------------------------------------------------------------
def parses_clean(lang_path: Path, text: str) -> bool:
    from coder.edit.syntax import problems

    found = problems(lang_path, text)
    return found is None or not found


IDENT = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]{3,})\b")


def make_change(rng: random.Random, lang: str, block: list[str],
                avoid: int | None) -> tuple[list[str], str, int] | None:
    """A real edit of `block`: (new block, description, index of the changed line)."""
    choices = [i for i, line in enumerate(block) if line.strip() and i != avoid]
    if not choices:
        return None
    i = rng.choice(choices)
    line = block[i]
    kind = rng.choice(["comment", "rename", "insert", "delete"])
    mark = COMMENT[lang]
    if kind == "comment" and mark not in line and "\\" not in line and '"""' not in line and "`" not in line:
        return block[:i] + [line + f"  {mark} edited: checked"] + block[i + 1:], "append a comment", i
    if kind == "rename":
        names = [m for m in IDENT.finditer(line) if line.count(m.group(1)) == 1]
        if names:
            m = rng.choice(names)
            return block[:i] + [line[: m.start()] + m.group(1) + "_v2" + line[m.end():]] + block[i + 1:], \
                f"rename {m.group(1)}", i
    if kind == "insert":
        indent = line[: len(line) - len(line.lstrip())]
        return block[: i + 1] + [f"{indent}{mark} note: keep in sync"] + block[i + 1:], "insert a line", i
    if kind == "delete" and len(block) > 3 and line.strip().startswith(mark):
        return block[:i] + block[i + 1:], "delete a comment line", i
    return None


# -- the mistakes ---------------------------------------------------------------------------------------
def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def shift(lines: list[str], rng: random.Random) -> list[str] | None:
    widths = [len(indent_of(x)) for x in lines if x.strip()]
    if not widths or any("\t" in indent_of(x) for x in lines):
        return None
    low = min(widths)
    if low >= 4 and rng.random() < 0.6:
        return [x[low:] if x.strip() else x for x in lines]  # pasted at column 0
    return ["    " + x if x.strip() else x for x in lines]


def file_unit(text: str) -> int:
    """The file's indentation unit in spaces (the gcd of its space indents, 2 or 4)."""
    from math import gcd

    g = 0
    for line in text.split("\n"):
        ind = indent_of(line)
        if line.strip() and ind and "\t" not in ind:
            g = gcd(g, len(ind))
    return 2 if g == 2 else 4


def to_spaces_or_tabs(lines: list[str], unit: int = 4) -> list[str] | None:
    """Tabs -> 4 spaces (model's habit on Go files), or each space unit -> a tab."""
    if any("\t" in indent_of(x) for x in lines):
        return [indent_of(x).replace("\t", "    ") + x.lstrip(" \t") if x.strip() else x for x in lines]
    if not any(len(indent_of(x)) >= unit for x in lines):
        return None
    out = []
    for x in lines:
        ind = indent_of(x)
        if x.strip() and len(ind) % unit:
            return None  # alignment spaces: not a clean tabs-vs-spaces mistake
        out.append("\t" * (len(ind) // unit) + x.lstrip(" ") if x.strip() else x)
    return out


def typo(line: str, rng: random.Random) -> str | None:
    names = list(IDENT.finditer(line))
    if not names:
        return None
    m = rng.choice(names)
    word = m.group(1)
    k = rng.randrange(1, len(word) - 1)
    wrong = word[:k] + word[k + 1] + word[k] + word[k + 2:] if word[k] != word[k + 1] else word[:k] + word[k + 1:]
    return line[: m.start()] + wrong + line[m.end():]


def _map_line(old: list[str], new: list[str], i: int) -> int | None:
    """Index in `new` of old line i when the change left it (and the line before it) in place."""
    from difflib import SequenceMatcher

    for tag, i1, i2, j1, _ in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal" and i1 < i <= i2 - 1:
            return j1 + (i - i1)
    return None


def _map_equal(old: list[str], new: list[str], i: int) -> int | None:
    """Index in `new` of old line i when the change left that line in place."""
    from difflib import SequenceMatcher

    for tag, i1, i2, j1, _ in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal" and i1 <= i < i2:
            return j1 + (i - i1)
    return None


def damage(kind: str, old: list[str], new: list[str], start: int, rng: random.Random,
           changed: int, unit: int = 4) -> tuple[list[str], list[str]] | None:
    """Apply mistake `kind` to the model's old and new lines (consistently, as a model would)."""
    if kind in ("exact", "crlf"):
        return old, new
    if kind == "indent_shift":
        o, n = shift(old, random.Random(rng.random())), shift(new, random.Random(0))
        if o is None:
            return None
        delta = len(indent_of(next(x for x in o if x.strip()))) - len(indent_of(next(x for x in old if x.strip())))
        n = [(" " * delta + x if delta > 0 else x[-delta:]) if x.strip() else x for x in new]
        return o, n
    if kind == "trailing_ws":
        picks = rng.sample(range(len(old)), k=min(2, len(old)))
        o = [x + rng.choice(["  ", " ", "\t"]) if i in picks and x.strip() else x for i, x in enumerate(old)]
        n = [x + "  " if x in [old[i] for i in picks] and x.strip() else x for x in new]
        return (o, n) if o != old else None
    if kind == "tabs_spaces":
        o, n = to_spaces_or_tabs(old, unit), to_spaces_or_tabs(new, unit)
        return (o, n) if o is not None and n is not None and o != old else None
    if kind == "missing_blank":
        blanks = [i for i, x in enumerate(old) if not x.strip() and 0 < i < len(old) - 1]
        if not blanks:
            return None
        b = blanks[0]
        mapped = _map_line(old, new, b)
        if mapped is None:
            return None
        return old[:b] + old[b + 1:], new[:mapped] + new[mapped + 1:]
    if kind == "missing_blank_old":  # dropped from old_str only; new_str has it where the file has it
        blanks = [i for i, x in enumerate(old) if not x.strip() and 0 < i < len(old) - 1]
        if not blanks or _map_equal(old, new, blanks[0]) is None:
            return None
        return old[: blanks[0]] + old[blanks[0] + 1:], new
    if kind == "extra_blank":
        j = rng.randrange(1, len(old))
        mapped = _map_line(old, new, j)
        if mapped is None or not old[j].strip() or not old[j - 1].strip():
            return None
        return old[:j] + [""] + old[j:], new[:mapped] + [""] + new[mapped:]
    if kind == "line_numbers":
        o = [f"{start + i + 1:6}\t{x}" for i, x in enumerate(old)]
        n = [f"{start + i + 1:6}\t{x}" for i, x in enumerate(new)] if rng.random() < 0.5 else list(new)
        return o, n
    if kind == "wrong_line":
        options = [i for i, x in enumerate(old) if x.strip() and i != changed and old[i] in new]
        rng.shuffle(options)
        for i in options:
            bad = typo(old[i], rng)
            mapped = _map_equal(old, new, i)
            if bad and bad != old[i] and mapped is not None:
                # the model misremembers this one line, in old_str and in the copy of it in new_str
                return old[:i] + [bad] + old[i + 1:], new[:mapped] + [bad] + new[mapped + 1:]
        return None
    raise ValueError(kind)


# -- generation -----------------------------------------------------------------------------------------
class Generator:
    def __init__(self, src: Path, seed: int) -> None:
        self.src = src
        self.rng = random.Random(seed)
        self.files = pick_files(src)
        self.langs = sorted(self.files)
        self._texts: dict[Path, str] = {}
        self._dups: dict[Path, list[tuple[int, int]]] = {}
        self.n = 0

    def text(self, path: Path) -> str:
        if path not in self._texts:
            self._texts[path] = path.read_text(encoding="utf-8")
        return self._texts[path]

    def _case(self, lang: str, path: Path, kind: str, expect: str, crlf: bool, old: list[str], new: list[str],
              change: str, start: int = 0, end: int = 0, new_block: list[str] | None = None) -> Case:
        self.n += 1
        rel = path.relative_to(self.src).as_posix()
        sha = hashlib.sha256(self.text(path).encode()).hexdigest()
        return Case(f"{self.n:04d}-{kind}-{lang}", lang, rel, sha, kind, expect, crlf, "\n".join(old),
                    "\n".join(new), change, start, end, new_block or [])

    def block(self, path: Path, length: int, need_blank: bool = False) -> tuple[int, list[str]] | None:
        lines = self.text(path).split("\n")
        for _ in range(40):
            s = self.rng.randrange(0, max(1, len(lines) - length))
            block = lines[s: s + length]
            if len(block) < length or not block[0].strip() or not block[-1].strip():
                continue
            if sum(1 for x in block if x.strip()) < 2 or len("".join(block).strip()) < 40:
                continue
            if need_blank and not any(not x.strip() for x in block[1:-1]):
                continue
            if self.text(path).count("\n".join(block)) != 1:
                continue
            return s, block
        return None

    def apply_case(self, kind: str, lang: str) -> Case | None:
        for _ in range(300):
            path = self.rng.choice(self.files[lang])
            text = self.text(path)
            if kind == "tabs_spaces" and lang != "go" and "\n    " not in text:
                continue
            length = 5 if kind == "wrong_line" else self.rng.randint(3, 7)
            found = self.block(path, length, need_blank=kind in ("missing_blank", "missing_blank_old"))
            if not found:
                continue
            start, block = found
            change = make_change(self.rng, lang, block, None)
            if not change:
                continue
            new_block, what, changed = change
            lines = text.split("\n")
            expected = "\n".join(lines[:start] + new_block + lines[start + length:])
            if parses_clean(path, text) and not parses_clean(path, expected):
                continue
            if kind == "trailing_blanks":  # needs the file's blank lines after the block, and an inexact old_str
                after = 0
                while start + length + after < len(lines) - 1 and not lines[start + length + after].strip():
                    after += 1
                damaged = damage("trailing_ws", block, new_block, start, self.rng, changed) if after else None
                damaged = (damaged[0], damaged[1] + [""] * after) if damaged else None
            else:
                damaged = damage(kind, block, new_block, start, self.rng, changed, file_unit(text))
            if damaged is None:
                continue
            old, new = damaged
            old_s = "\n".join(old)
            if kind in ("exact", "crlf"):
                if text.count(old_s) != 1:
                    continue
            elif old_s in text:
                continue
            crlf = kind == "crlf" or (kind != "exact" and self.rng.random() < 0.2)
            return self._case(lang, path, kind, "apply", crlf, old, new, what, start, start + length, new_block)
        return None

    def duplicates(self, path: Path) -> list[tuple[int, int]]:
        if path not in self._dups:
            lines = self.text(path).split("\n")
            seen: dict[str, list[int]] = {}
            for length in (3, 2, 4):
                for s in range(len(lines) - length):
                    block = lines[s: s + length]
                    if not all(x.strip() for x in block) or len("".join(x.strip() for x in block)) < 30:
                        continue
                    seen.setdefault("\n".join(block), []).append(s)
            found = []
            for key, starts in seen.items():
                if len(starts) >= 2 and starts[1] - starts[0] >= key.count("\n") + 1:
                    found.append((starts[0], key.count("\n") + 1))
            self._dups[path] = found
        return self._dups[path]

    def refuse_case(self, kind: str, lang: str) -> Case | None:
        for _ in range(300):
            path = self.rng.choice(self.files[lang])
            text = self.text(path)
            lines = text.split("\n")
            if kind in ("ambiguous_exact", "ambiguous_shifted"):
                dups = self.duplicates(path)
                if not dups:
                    continue
                start, length = self.rng.choice(dups)
                block = lines[start: start + length]
                change = make_change(self.rng, lang, block, None)
                if not change:
                    continue
                old, new = block, change[0]
                if kind == "ambiguous_shifted":
                    damaged = damage("indent_shift", block, change[0], start, self.rng, change[2])
                    if damaged is None or "\n".join(damaged[0]) in text:
                        continue
                    old, new = damaged
                return self._case(lang, path, kind, "refuse", False, old, new, change[1])
            if kind == "absent":
                other = self.rng.choice(self.files[lang])
                if other == path:
                    continue
                found = self.block(other, self.rng.randint(3, 6))
                if not found:
                    continue
                _, block = found
                present = set(x.strip() for x in lines)
                if sum(1 for x in block if x.strip() and x.strip() in present) > 1:
                    continue
                change = make_change(self.rng, lang, block, None)
                if not change:
                    continue
                return self._case(lang, path, kind, "refuse", False, block, change[0], change[1])
            if kind == "badly_wrong":
                found = self.block(path, 5)
                if not found:
                    continue
                start, block = found
                change = make_change(self.rng, lang, block, None)
                if not change:
                    continue
                new_block, what, changed = change
                slots = [i for i, x in enumerate(block) if x.strip() and i != changed]
                if len(slots) < 2:
                    continue
                old, new = list(block), list(new_block)
                near = {x.strip() for x in lines[max(0, start - 8): start + 13]}
                donors = [x for x in lines if len(x.strip()) > 12 and x.strip() not in near]
                if len(donors) < 2:
                    continue
                for i in self.rng.sample(slots, 2):
                    replacement = indent_of(block[i]) + self.rng.choice(donors).strip()
                    mapped = _map_equal(block, new_block, i)
                    if mapped is not None:  # the model's new_str repeats its (wrong) memory of unchanged lines
                        new[mapped] = replacement
                    old[i] = replacement
                if "\n".join(old) in text:
                    continue
                return self._case(lang, path, kind, "refuse", False, old, new, what)
        return None

    def generate(self, count: int) -> list[Case]:
        kinds = [(k, "apply") for k in APPLY_KINDS] + [(k, "refuse") for k in REFUSE_KINDS]
        weights = {k: (1.0 if e == "apply" else 0.5) for k, e in kinds}
        total = sum(weights.values())
        cases: list[Case] = []
        for kind, expect in kinds:
            n = max(4, round(count * weights[kind] / total))
            for j in range(n):
                lang = self.langs[j % len(self.langs)]
                case = self.apply_case(kind, lang) if expect == "apply" else self.refuse_case(kind, lang)
                if case:
                    cases.append(case)
        return cases


def load_corpus(path: Path) -> list[Case]:
    return [Case(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build(cache: Path, count: int, seed: int) -> Path:
    src = fetch(cache)
    cases = Generator(src, seed).generate(count)
    out = cache / f"corpus-{count}-{seed}.jsonl"
    with out.open("w", encoding="utf-8") as handle:
        for case in cases:
            handle.write(json.dumps(asdict(case)) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=default_cache())
    parser.add_argument("--count", type=int, default=400, help="about how many cases (default 400)")
    parser.add_argument("--seed", type=int, default=8)
    args = parser.parse_args(argv)
    out = build(args.cache, args.count, args.seed)
    cases = load_corpus(out)
    by_kind: dict[str, int] = {}
    for case in cases:
        by_kind[case.kind] = by_kind.get(case.kind, 0) + 1
    print(f"{len(cases)} cases -> {out}")
    print(json.dumps(by_kind, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
