"""Guards against gaming the tests: a patch that makes the tests pass by changing the tests instead of the code.

Checked: test files deleted; tests removed; assertions removed, neutralised (wrapped in a broad try/except,
turned into tautologies) or with their expected values edited; skips, xfails and focus markers added; the test
configuration or CI changed to leave tests out; and (in `specialcase.py`) source code that special-cases the
literal inputs of the tests or detects that it runs under a test runner.

Python test files are compared on their syntax trees (per test function, so a moved assertion is not a removed
one and an edit on a continuation line is still seen); other languages line by line with regexes."""

from __future__ import annotations

import ast
import re
import time
from collections import Counter
from pathlib import PurePosixPath

from coder.review.context import ReviewContext, is_test_path
from coder.review.specialcase import STRING_RE, special_casing, string_lines
from coder.review.testconfig import is_test_config, test_config_findings
from coder.review.types import Finding, StageResult, status_from
from coder.review.types import gaming_finding as _f
from coder.vcs.patch import FilePatch

STAGE = "gaming"

ASSERT_RE = {
    "py": re.compile(r"^\s*assert\b|\bself\.(assert\w*|fail)\(|\bpytest\.(raises|warns|approx)\(|\.assert_\w+\(|"
                     r"\bassert_\w+\("),
    "js": re.compile(r"\bexpect\(|\bassert(\.\w+)?\(|\.should\b"),
    "go": re.compile(r"\bt\.(Error|Errorf|Fatal|Fatalf|Fail|FailNow)\(|\b(assert|require)\.\w+\("),
    "rs": re.compile(r"\b(assert|assert_eq|assert_ne|debug_assert\w*)!\("),
    "rb": re.compile(r"\bexpect\(|\bassert\w*\b|\.to\b|\bshould\b"),
}
SKIP_RE = {
    "py": re.compile(r"@pytest\.mark\.(skip|skipif|xfail)\b|\bpytest\.(skip|xfail)\(|@(unittest\.)?skip(If|Unless)?\b|"
                     r"\bself\.skipTest\(|@(unittest\.)?expectedFailure\b|raise\s+(unittest\.)?SkipTest\b"),
    "js": re.compile(r"\b(it|test|describe|context|suite)\.(skip|todo|only)\b|\b[xf](it|test|describe)\s*\("),
    "go": re.compile(r"\bt\.Skip(f|Now)?\("),
    "rs": re.compile(r"#\[ignore\b"),
    "rb": re.compile(r"^\s*(skip|pending|xit|xdescribe)\b"),
}
TEST_NAME_RE = {
    "js": re.compile(r"\b(?:it|test)\s*\(\s*(['\"`])(.+?)\1"),
    "go": re.compile(r"^func\s+(Test\w+)\s*\(", re.M),
    "rs": re.compile(r"#\[test\]\s*(?:#\[[^\]]*\]\s*)*(?:pub\s+)?(?:async\s+)?fn\s+(\w+)"),
    "rb": re.compile(r"\bit\s+(['\"])(.+?)\1"),
}
_LANG = {".py": "py", ".js": "js", ".jsx": "js", ".ts": "js", ".tsx": "js", ".mjs": "js", ".cjs": "js",
         ".go": "go", ".rs": "rs", ".rb": "rb"}
_LITERAL_RE = re.compile(r"(['\"])(?:\\.|(?!\1).)*\1|\b\d+(\.\d+)?\b")




def stage_gaming(ctx: ReviewContext) -> StageResult:
    start = time.monotonic()
    findings: list[Finding] = []
    for f in ctx.files:
        if is_test_path(f.path):
            findings += _test_file(ctx, f)
        if is_test_config(f.path):
            findings += test_config_findings(ctx, f)
    findings += special_casing(ctx)
    tests = len(ctx.changed_test_files)
    note = f"{tests} test file(s) changed" if tests else "no test file changed"
    return StageResult(STAGE, status_from(findings), time.monotonic() - start, note, findings)


# --- test files ------------------------------------------------------------------------------------------
def _test_file(ctx: ReviewContext, f: FilePatch) -> list[Finding]:
    lang = _LANG.get(PurePosixPath(f.path).suffix.lower())
    if f.status == "deleted":
        old = ctx.read_old(f.old_path) or ""
        if lang == "py" and "def test" not in old:
            return [_f(f.path, None, "warning", "test helper or conftest deleted (moved?)", "test-deleted")]
        return [_f(f.path, None, "error", "test file deleted", "test-deleted")]
    if lang is None:
        return []
    findings = []
    in_strings = string_lines(ctx.read_new(f.new_path) or "", f.path) if lang == "py" else set()
    removed_skips = Counter(line.text.strip() for line in f.removed if SKIP_RE[lang].search(line.text))
    for line in f.added:
        if line.number in in_strings:
            continue
        code = STRING_RE.sub('""', line.text) if lang == "py" else line.text
        if SKIP_RE[lang].search(code):
            key = line.text.strip()
            if removed_skips[key] > 0:
                removed_skips[key] -= 1  # moved, not added
                continue
            findings.append(_f(f.path, line.number, "error", f"skip/xfail/focus marker added: {key[:80]}",
                               "skip-added"))
    if f.status == "added":
        return findings
    old, new = ctx.read_old(f.old_path), ctx.read_new(f.new_path)
    if old is None or new is None:
        return findings
    findings += _data_edits(f, lang)
    if lang == "py":
        py = _python_tests(f.path, old, new, f.added_numbers)
        if py is not None:
            return findings + py
    return findings + _generic_tests(f, lang, old, new)


_DATA_NAMES = {"True", "False", "None", "pytest", "param", "id", "ids", "marks", "approx", "null", "true",
               "false", "nil"}


def _is_data_line(text: str) -> bool:
    """A line of test data (`(3, 6),`, `"key": "value",`, `expected = 42`), not a call that sets a test up."""
    names = [n for n in re.findall(r"[A-Za-z_]\w*", _LITERAL_RE.sub(" ", text)) if n not in _DATA_NAMES]
    return len(names) <= 1


def _data_edits(f: FilePatch, lang: str) -> list[Finding]:
    """Literal test data edited in place (a parametrize table, an expected-values dict): same line shape,
    different literals. Assertion lines are left to the assertion checks."""
    findings = []
    pattern = ASSERT_RE[lang]
    for hunk in f.hunks:
        removed = [line for line in hunk.removed if not pattern.search(line.text) and _LITERAL_RE.search(line.text)
                   and _is_data_line(line.text)]
        added = [line for line in hunk.added if not pattern.search(line.text)]
        for old_line in removed:
            key = _mask(old_line.text)
            twin = next((a for a in added if _mask(a.text) == key and a.text.strip() != old_line.text.strip()), None)
            if twin is None or not key.strip():
                continue
            added.remove(twin)
            findings.append(_f(f.path, twin.number, "error", f"test data edited: {old_line.text.strip()[:70]!r} -> "
                               f"{twin.text.strip()[:70]!r}", "expected-value-edited"))
    return findings


def _mask(text: str) -> str:
    return _LITERAL_RE.sub("<lit>", re.sub(r"\s+", "", text))


def _generic_tests(f: FilePatch, lang: str, old: str, new: str) -> list[Finding]:
    findings = []
    name_re = TEST_NAME_RE.get(lang)
    if name_re is not None:
        def names(text: str) -> Counter:
            return Counter(m.group(m.lastindex or 1) for m in name_re.finditer(text))
        gone = names(old) - names(new)
        for name in sorted(gone):
            findings.append(_f(f.path, None, "error", f"test {name!r} removed or renamed", "test-removed"))
    pattern = ASSERT_RE[lang]
    removed = [line for line in f.removed if pattern.search(line.text)]
    added = [line for line in f.added if pattern.search(line.text)]
    added_norm = Counter(re.sub(r"\s+", "", line.text) for line in added)
    unmatched_removed = []
    for line in removed:
        key = re.sub(r"\s+", "", line.text)
        if added_norm[key] > 0:
            added_norm[key] -= 1
        else:
            unmatched_removed.append(line)
    spare_added = [line for line in added if added_norm[re.sub(r"\s+", "", line.text)] > 0]
    for line in unmatched_removed:
        twin = next((a for a in spare_added if _mask(a.text) == _mask(line.text)), None)
        if twin is not None:
            spare_added.remove(twin)
            findings.append(_f(f.path, twin.number, "error", f"expected value edited in an assertion: "
                               f"{line.text.strip()[:70]!r} -> {twin.text.strip()[:70]!r}", "expected-value-edited"))
        elif spare_added:
            spare_added.pop(0)
            findings.append(_f(f.path, None, "warning", f"assertion changed: {line.text.strip()[:80]!r}",
                               "assertion-changed"))
        else:
            findings.append(_f(f.path, None, "error", f"assertion removed (old line {line.number}): "
                               f"{line.text.strip()[:80]!r}", "assertion-removed"))
    return findings


# --- Python test files, on syntax trees ---------------------------------------------------------------------
class _Assertion:
    def __init__(self, node: ast.AST, neutralised: bool):
        self.node = node
        self.line = getattr(node, "lineno", None)
        self.exact = ast.dump(node, annotate_fields=False)
        self.skeleton = ast.dump(_MaskConstants().visit(_copy(node)), annotate_fields=False)
        self.neutralised = neutralised
        self.text = ast.unparse(node)[:90]
        self.subject = _subject(node)

    @property
    def trivial(self) -> bool:
        """An assertion that cannot fail: `assert True`, `assert x or True`, `assert a == a`."""
        node = self.node
        if not isinstance(node, ast.Assert):
            return False
        test = node.test
        if isinstance(test, ast.Constant) and bool(test.value):
            return True
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            return any(isinstance(v, ast.Constant) and bool(v.value) for v in test.values)
        if isinstance(test, ast.Compare) and len(test.comparators) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is)):
            return ast.dump(test.left) == ast.dump(test.comparators[0])
        return False


class _MaskConstants(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        return ast.copy_location(ast.Constant(value="<lit>"), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        if isinstance(node.operand, ast.Constant):  # -1, +2.5: one literal, not an expression
            return ast.copy_location(ast.Constant(value="<lit>"), node)
        return self.generic_visit(node)


def _subject(node: ast.AST) -> str | None:
    """What an assertion checks (the left side of a comparison, the first argument of assertEqual)."""
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
        return ast.dump(node.test.left)
    if isinstance(node, ast.Call) and node.args:
        return ast.dump(node.args[0])
    return None


def _copy(node: ast.AST) -> ast.AST:
    return ast.parse(ast.unparse(node)).body[0] if not isinstance(node, ast.expr) else ast.parse(
        ast.unparse(node), mode="eval").body


def _is_assertion(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return name.startswith(("assert", "fail")) or name in ("raises", "warns")
    return False


def _broad_handler(handler: ast.ExceptHandler) -> bool:
    names = {n.id for n in ast.walk(handler.type) if isinstance(n, ast.Name)} if handler.type else {"*"}
    reraises = any(isinstance(n, ast.Raise) for n in ast.walk(handler))
    return bool(names & {"*", "Exception", "BaseException", "AssertionError"}) and not reraises


def _assertions(func: ast.AST) -> list[_Assertion]:
    found: list[_Assertion] = []

    def walk(node: ast.AST, neutral: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Try):
                broad = any(_broad_handler(h) for h in child.handlers)
                for stmt in child.body:
                    visit(stmt, neutral or broad)
                for rest in (*child.handlers, *child.orelse, *child.finalbody):
                    visit(rest, neutral)
                continue
            visit(child, neutral)

    def visit(node: ast.AST, neutral: bool) -> None:
        if _is_assertion(node):
            found.append(_Assertion(node, neutral))
            if isinstance(node, ast.Assert):
                return
        walk(node, neutral)

    walk(func, False)
    return found


def _test_functions(tree: ast.Module) -> dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[_Assertion]]]:
    tests: dict[str, tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[_Assertion]]] = {}

    def collect(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                tests[prefix + node.name] = (node, _assertions(node))
            elif isinstance(node, ast.ClassDef):
                collect(node.body, f"{prefix}{node.name}.")

    collect(tree.body, "")
    return tests


def _python_tests(path: str, old: str, new: str, added: set[int] | None = None) -> list[Finding] | None:
    try:
        old_tests = _test_functions(ast.parse(old))
        new_tests = _test_functions(ast.parse(new))
    except (SyntaxError, ValueError, RecursionError):
        return None
    findings = []
    for name, (node, _) in old_tests.items():
        if name not in new_tests:
            findings.append(_f(path, None, "error", f"test {name} removed or renamed (was at line {node.lineno})",
                               "test-removed"))
    for name, (node, new_asserts) in new_tests.items():
        if name not in old_tests:
            continue
        found = _compare_assertions(path, name, node, old_tests[name][1], new_asserts)
        if added and _setup_changed(node, new_asserts, added):
            for f in found:  # the inputs changed too: a rewritten test more likely than an edited expectation
                if f.check == "expected-value-edited":
                    f.severity = "warning"
                    f.message += " (the test's own inputs changed as well: check the new expectation is right)"
        findings += found
    return findings


def _setup_changed(func: ast.FunctionDef | ast.AsyncFunctionDef, asserts: list[_Assertion], added: set[int]) -> bool:
    """Whether lines of the test other than its assertions were added or changed."""
    spans = [(getattr(a.node, "lineno", 0), getattr(a.node, "end_lineno", None)) for a in asserts]
    inside_asserts = {n for start, end in spans for n in range(start, (end or start) + 1)}
    body = range(func.body[0].lineno, (func.end_lineno or func.lineno) + 1)
    return any(n in added and n not in inside_asserts for n in body)


def _compare_assertions(path: str, name: str, node: ast.AST, old: list[_Assertion],
                        new: list[_Assertion]) -> list[Finding]:
    findings = []
    live_new = [a for a in new if not a.neutralised]
    for a in new:
        if a.neutralised and not any(o.neutralised and o.exact == a.exact for o in old):
            findings.append(_f(path, a.line, "error", f"in {name}: assertion wrapped in a try/except that swallows "
                               f"its failure: {a.text}", "assertion-neutralised"))
    old_live = [a for a in old if not a.neutralised]
    for a in new:  # an assertion now swallowed by a try/except is reported above, not again as removed
        twin = next((o for o in old_live if a.neutralised and o.exact == a.exact), None)
        if twin is not None:
            old_live.remove(twin)
    pool = Counter(a.exact for a in live_new)
    unmatched_old = []
    for a in old_live:
        if pool[a.exact] > 0:
            pool[a.exact] -= 1
        else:
            unmatched_old.append(a)
    spare = []
    for a in live_new:
        if pool[a.exact] > 0:
            pool[a.exact] -= 1
            spare.append(a)
    for a in [s for s in spare if s.trivial]:
        spare.remove(a)
        replaced = next((o for o in unmatched_old if o.text[len("assert "):] in a.text), None)
        if replaced is not None:  # `assert x == y` became `assert x == y or True`: one finding, not two
            unmatched_old.remove(replaced)
        findings.append(_f(path, a.line, "error", f"in {name}: assertion that cannot fail: {a.text}",
                           "assertion-weakened"))
    for a in unmatched_old:
        twin = next((s for s in spare if s.skeleton == a.skeleton), None)
        if twin is not None:
            spare.remove(twin)
            findings.append(_f(path, twin.line, "error", f"in {name}: expected value edited: {a.text!r} -> "
                               f"{twin.text!r}", "expected-value-edited"))
        elif a.subject is not None and any(s.subject == a.subject for s in spare):
            twin = next(s for s in spare if s.subject == a.subject)
            spare.remove(twin)
            findings.append(_expectation_change(path, name, node, a, twin))
        elif any(a.node.__class__ is s.node.__class__ for s in spare):
            twin = next(s for s in spare if a.node.__class__ is s.node.__class__)
            spare.remove(twin)
            findings.append(_f(path, twin.line, "warning", f"in {name}: assertion changed: {a.text!r} -> "
                               f"{twin.text!r}", "assertion-changed"))
        else:
            findings.append(_f(path, getattr(node, "lineno", None), "error",
                               f"in {name}: assertion removed: {a.text}", "assertion-removed"))
    return findings


def _expected_side(a: _Assertion) -> list[ast.expr]:
    node = a.node
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
        return list(node.test.comparators)
    if isinstance(node, ast.Call):
        return list(node.args[1:]) + [k.value for k in node.keywords]
    return []


def _ops(a: _Assertion) -> tuple[str, ...]:
    node = a.node
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
        return tuple(type(op).__name__ for op in node.test.ops)
    return (node.func.attr,) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else ()


def _expectation_change(path: str, name: str, func: ast.AST, old: _Assertion, new: _Assertion) -> Finding:
    """Same checked value, different expectation: an edit of the expected value, a weaker comparison, or (when
    the old expected literal is still in the test, e.g. moved into a variable) only a refactor."""
    if _ops(old) != _ops(new):
        return _f(path, new.line, "error", f"in {name}: comparison weakened: {old.text!r} -> {new.text!r}",
                  "assertion-weakened")
    expected = {repr(n.value) for side in _expected_side(old) for n in ast.walk(side) if isinstance(n, ast.Constant)}
    present = {repr(n.value) for n in ast.walk(func) if isinstance(n, ast.Constant)}
    if expected and expected <= present:
        return _f(path, new.line, "warning", f"in {name}: assertion rewritten: {old.text!r} -> {new.text!r}",
                  "assertion-changed")
    return _f(path, new.line, "error", f"in {name}: expected value changed: {old.text!r} -> {new.text!r}",
              "expected-value-edited")
