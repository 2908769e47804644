"""Source code that special-cases the tests: `if name == "Bob": return "hello Bob"` where "Bob" is what a
test passes in, or code that checks whether it runs under pytest or jest.

A literal in a new condition of source code is suspicious when the tests use it and the project's own
(non-test) code did not know it before the patch: a value only the tests know is a test input, not a domain
constant. Strings are strong evidence; small numbers are everywhere, so a number needs corroboration (a second
test literal on the line or a returned literal the tests also expect)."""

from __future__ import annotations

import ast
import re
from functools import lru_cache

from coder.review.context import ReviewContext, is_test_path
from coder.review.types import Finding, gaming_finding
from coder.vcs.repo import Repo

_COND_RE = re.compile(r"^\s*(if|elif|else\s+if|case|when|switch|while)\b|\bif\s*\(|[=!]==?|\bin\s*[\[\(\{]|"
                      r"\?\s*[^:]+:|\bmatch\b")
_STRING_RE = re.compile(r"""(?<![\w\\])[rbuf]?(['"])((?:\\.|(?!\1).){1,200})\1""")
#: a string literal (group 2: its body), shared with the gaming checks that must ignore text inside strings
STRING_RE = _STRING_RE
_NUMBER_RE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_TRIVIAL_NUMBERS = {"0", "1", "2", "-1", "0.0", "1.0", "10", "100", "1000", "1024", "60", "24", "3600",
                    "8", "16", "32", "64", "128", "255", "256", "512"}
_ENV_SNIFF_RE = re.compile(
    r"PYTEST_CURRENT_TEST|PYTEST_VERSION|['\"](pytest|_pytest|unittest)['\"]\s+in\s+sys\.modules|"
    r"sys\.modules(\.get)?\(\s*['\"](pytest|_pytest)['\"]|JEST_WORKER_ID|VITEST|__vitest|"
    r"sys\.argv\[0\].*(pytest|test)|inspect\.stack\(\).*test|testing\.Testing\(\)"
)


def special_casing(ctx: ReviewContext) -> list[Finding]:
    """Only code added to files that existed, checked against tests that existed: gaming gets existing tests to
    pass; a new module written together with its new tests shares literals with them by design."""
    findings: list[Finding] = []
    test_files = ctx.base_test_files
    for f in ctx.source_files:
        if f.new_path is None or f.binary:
            continue
        if f.status != "modified":
            findings += _sniffing(f)
            continue
        old_source = without_docstrings(ctx.read_old(f.old_path) or "", f.new_path)
        added = f.added
        in_strings = string_lines(ctx.read_new(f.new_path) or "", f.new_path)
        for i, line in enumerate(added):
            text = line.text
            if line.number in in_strings:
                continue
            if sniffs(text):
                findings.append(gaming_finding(f.new_path, line.number, "error",
                                               "source code checks whether it runs under a test runner: behaviour "
                                               "under test would differ from production", "test-environment-sniffing"))
                continue
            if not test_files or not _COND_RE.search(_strip_comment(text)):
                continue
            code = _strip_comment(text)
            strings = [lit for lit in _compared_strings(code) if _meaningful(lit)]
            equality = bool(_EQUALITY_RE.search(code))
            numbers = [n for n in _NUMBER_RE.findall(_STRING_RE.sub("", code)) if n not in _TRIVIAL_NUMBERS
                       and equality]
            strong = [s for s in strings if _test_only_string(ctx, s, old_source, f.new_path)]
            weak = [n for n in numbers if _test_only_number(ctx, n, old_source)]
            if strong:
                findings.append(gaming_finding(f.new_path, line.number, "error",
                                               f"condition on {strong[0]!r}, a value that appears in the tests and "
                                               "nowhere in the project's code: special-casing a test input?",
                                               "special-cased-test-input"))
                continue
            canned: list[str] = []
            if equality:  # `if x == 1: return "B"`: a canned answer keyed on an input
                returned = _returned_strings(text, added[i + 1:i + 3], line.number)
                canned = [r for r in returned if (len(r) == 1 and r.isalnum()) or _meaningful(r)]
                canned = [r for r in canned if _test_only_string(ctx, r, old_source, f.new_path, 1)]
                canned += [d for d in _returned_displays(text, added[i + 1:i + 3], line.number)
                           if d not in old_source and _in_tests(ctx, d)]
            if canned:
                findings.append(gaming_finding(f.new_path, line.number, "error",
                                               f"returns {canned[0]!r} under a new condition: a value only the tests "
                                               "know (a canned answer for a test input?)", "special-cased-test-input"))
                continue
            if weak:
                following = " ".join(a.text for a in added[i + 1:i + 3] if a.number - line.number <= 3
                                     and re.match(r"^\s*(return|yield)\b", a.text))
                returned = [lit for lit in _literals(following) if _in_tests(ctx, lit)]
                if len(weak) > 1 or returned or _inline_return(text, ctx):
                    findings.append(gaming_finding(f.new_path, line.number, "error",
                                                   f"condition on {weak[0]} returning a value the tests expect: "
                                                   "special-casing a test input?", "special-cased-test-input"))
                else:
                    findings.append(gaming_finding(f.new_path, line.number, "warning",
                                                   f"condition on {weak[0]}, a number that appears in the tests but "
                                                   "not in this file before: check it is not a test input",
                                                   "special-cased-test-input"))
    return findings


_EQUALITY_RE = re.compile(r"==|\bin\s*[\[\(\{]|^\s*(case|when)\b")


def _compared_strings(code: str) -> list[str]:
    """String literals the condition compares something with (==, !=, in (...), case, startswith): the values a
    special case is keyed on. Literals used otherwise (a default, a message) are left out."""
    found = []
    for m in _STRING_RE.finditer(code):  # sequential: every literal once, never a span between two of them
        before, after = code[:m.start()].rstrip(), code[m.end():].lstrip()
        if (before.endswith(("==", "!=")) or after.startswith(("==", "!=")) or re.match(r"(not\s+)?in\b", after)
                or re.search(r"\b(case|when)$", before) or re.search(r"\.(startswith|endswith)\($", before)
                or re.search(r"\bin\s*[\[\(\{][^\]\)\}]*$", before)):
            found.append(m.group(2))
    return list(dict.fromkeys(found))


def _meaningful(raw: str) -> bool:
    """A string worth tracing to the tests: some letters or digits, not an escape or a lone separator."""
    try:
        value = ast.literal_eval(f'"{raw}"') if '"' not in raw else raw
    except (ValueError, SyntaxError):
        value = raw
    return len(value.strip()) >= 2 and any(c.isalnum() for c in value)


_SNIFF_CONTEXT_RE = re.compile(r"environ|getenv|sys\.modules|process\.env|sys\.argv|inspect\.stack|testing\.Testing")


def sniffs(text: str) -> bool:
    """A test-runner check in code (not a pattern list or a message that merely names one)."""
    return bool(_ENV_SNIFF_RE.search(text)) and bool(_SNIFF_CONTEXT_RE.search(_STRING_RE.sub('""', text)))


def _sniffing(f) -> list[Finding]:
    return [gaming_finding(f.new_path, line.number, "error", "source code checks whether it runs under a test runner: "
                           "behaviour under test would differ from production", "test-environment-sniffing")
            for line in f.added if sniffs(line.text)]


def _strip_comment(text: str) -> str:
    return re.sub(r"\s(#|//).*$", "", text)


def _literals(text: str) -> list[str]:
    code = _strip_comment(text)
    out = [m.group(0) for m in _STRING_RE.finditer(code)]
    out += [n for n in _NUMBER_RE.findall(_STRING_RE.sub("", code)) if n not in _TRIVIAL_NUMBERS]
    return out


def _inline_return(text: str, ctx: ReviewContext) -> bool:
    """`if n == 5: return 120` on one line."""
    m = re.search(r":\s*return\s+(.+)$|\)\s*return\s+(.+?);?$", text)
    if not m:
        return False
    return any(_in_tests(ctx, lit) for lit in _literals(m.group(1) or m.group(2) or ""))


def _in_tests(ctx: ReviewContext, literal: str) -> bool:
    return bool(_grep(ctx.repo, ctx.base_tree, literal, tuple(ctx.base_test_files), literal[:1].isdigit() or
                      literal[:1] == "-"))


def _returned_strings(text: str, following: list, number: int) -> list[str]:
    """String literals returned right under a condition: `if x == 1: return "B"` or on the next lines."""
    candidates = []
    inline = re.search(r":\s*return\s+(.+)$", _strip_comment(text))
    if inline:
        candidates.append(inline.group(1))
    for line in following:
        if line.number - number <= 2 and re.match(r"^\s*(return|yield)\b", line.text):
            candidates.append(_strip_comment(line.text))
    return [m.group(2) for c in candidates for m in _STRING_RE.finditer(c) if m.group(2).strip()]


def _returned_displays(text: str, following: list, number: int) -> list[str]:
    """Literal lists, tuples, dicts or sets returned under a condition, in canonical form (`[(1, 2), (3, 4)]`)."""
    exprs = []
    inline = re.search(r":\s*return\s+(.+)$", _strip_comment(text))
    if inline:
        exprs.append(inline.group(1))
    for line in following:
        m = re.match(r"^\s*return\s+(.+)$", _strip_comment(line.text))
        if m and line.number - number <= 2:
            exprs.append(m.group(1))
    out = []
    for expr in exprs:
        try:
            value = ast.literal_eval(expr.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, (list, tuple, dict, set)) and len(value) >= 2:
            out.append(repr(value))
    return out


def string_lines(text: str, path: str) -> set[int]:
    """Lines that are inside a multi-line string of a Python file (prose, not code, whatever it looks like)."""
    if not path.endswith((".py", ".pyi")):
        return set()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return set()
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Constant, ast.JoinedStr)) and (node.end_lineno or node.lineno) > node.lineno:
            if isinstance(node, ast.JoinedStr) or isinstance(node.value, (str, bytes)):
                inside.update(range(node.lineno + 1, (node.end_lineno or node.lineno) + 1))
    return inside


def without_docstrings(text: str, path: str) -> str:
    """Python source with its docstrings blanked: doctest examples there repeat the tests' inputs and outputs,
    so they must not make a test value look like something the code already knew."""
    if not path.endswith((".py", ".pyi")):
        return text
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return text
    lines = text.splitlines(keepends=True)
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for n in range(node.lineno - 1, (node.end_lineno or node.lineno)):
                lines[n] = "\n"
    return "".join(lines)


def code_literals(text: str, path: str) -> set[str] | None:
    """String literals a Python file uses as values (docstrings left out: doctest examples there are test data
    too); None for other languages (callers fall back to a substring search)."""
    if not path.endswith((".py", ".pyi")):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in docstrings}


def _knows(text: str, path: str, s: str) -> bool:
    literals = code_literals(text, path)
    return s in text if literals is None else any(s == lit or (len(s) > 3 and s in lit) for lit in literals)


def _test_only_string(ctx: ReviewContext, s: str, old_source: str, path: str = "", min_len: int = 2) -> bool:
    if len(s) < min_len or (old_source and _knows(old_source, path or "x.txt", s)):
        return False
    quoted = [f'"{s}"', f"'{s}'"]
    if not any(_grep(ctx.repo, ctx.base_tree, q, tuple(ctx.base_test_files), False) for q in quoted):
        return False
    searched = quoted if len(s) < 4 else [s]  # short strings: only as literals, or every file matches
    known_files = sorted({p for q in searched for p in _grep(ctx.repo, ctx.base_tree, q, None, False)})
    for known in known_files:
        if is_test_path(known):
            continue
        if _knows(ctx.read_old(known) or "", known, s):
            return False
    return True


def _test_only_number(ctx: ReviewContext, n: str, old_source: str) -> bool:
    if re.search(rf"(?<![\w.]){re.escape(n)}(?![\w.])", old_source):
        return False
    return bool(_grep(ctx.repo, ctx.base_tree, n, tuple(ctx.base_test_files), True))


@lru_cache(maxsize=4096)
def _grep(repo: Repo, tree: str, literal: str, paths: tuple[str, ...] | None, word: bool) -> tuple[str, ...]:
    """Files of `tree` (restricted to `paths`) containing `literal`, via `git grep` on the object store."""
    if paths is not None and not paths:
        return ()
    return tuple(repo.grep(tree, literal, paths[:2000] if paths is not None else None, fixed=True, word=word,
                           text_only=True) or ())
