"""The test runners of the common ecosystems: how a command names one, and what its output says.

One row per runner: the words that start it (after wrappers such as `timeout 60`, `uv run` or `npx`, which
`commands.py` strips), and the parser of its summary. A parser reads the counts the runner prints at its end
(pytest's `3 failed, 10 passed in 0.4s`, unittest's `Ran 12 tests` and `FAILED (failures=1)`, cargo's
`test result: ok. 5 passed; 0 failed`, ...) and returns None when no summary is there (the output was cut by
`| head`, or the run never got that far). The per-test lines a harness grades by (`-rA`, `-v`) are not needed:
the summary is what a person reads too, and the part of a long output coder keeps (its tail) holds it.

Runners that run other runners (tox, nox, make, npm scripts, the project's own test command) parse with every
parser, latest summary first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Counts:
    """What a runner reported: tests passed, failed, errored, skipped (xfail and pending count as skipped)."""

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errors + self.skipped

    @property
    def bad(self) -> int:
        return self.failed + self.errors

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.passed + other.passed, self.failed + other.failed, self.errors + other.errors,
                      self.skipped + other.skipped)

    def line(self) -> str:
        parts = [f"{n} {word}" for n, word in ((self.passed, "passed"), (self.failed, "failed"),
                                               (self.errors, "errors"), (self.skipped, "skipped")) if n]
        return ", ".join(parts) or "no tests ran"


Parser = Callable[[str], Counts | None]

_PYTEST_SUMMARY = re.compile(r"^[=\s]*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|"
                             r"rerun)(?:, )?)+)(?: in [\d.]+\s*s.*)?[=\s]*$|^[=\s]*no tests ran in [\d.]+", re.M)
_PYTEST_PART = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")


def pytest_counts(text: str) -> Counts | None:
    found = list(_PYTEST_SUMMARY.finditer(text))
    if not found:
        return None
    line = found[-1].group(0)
    n = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
    for count, word in _PYTEST_PART.findall(line):
        n[{"errors": "error", "xfailed": "skipped", "xpassed": "passed"}.get(word) or word] += int(count)
    return Counts(n["passed"], n["failed"], n["error"], n["skipped"])


_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s\s*$", re.M)
_UNITTEST_END = re.compile(r"^(OK|FAILED)\b(?: \(([^)]*)\))?\s*$", re.M)


def unittest_counts(text: str) -> Counts | None:
    """unittest, and the runners built on it (Django's runtests.py and `manage.py test`, `setup.py test`)."""
    ran = list(_RAN.finditer(text))
    if not ran:
        return None
    last = ran[-1]
    total = int(last.group(1))
    end = _UNITTEST_END.search(text, last.end())
    if end is None:
        return None
    detail = dict((k.strip(), int(v)) for k, v in re.findall(r"(\w[\w ]*)=(\d+)", end.group(2) or ""))
    failed, errors = detail.get("failures", 0), detail.get("errors", 0)
    skipped = detail.get("skipped", 0) + detail.get("expected failures", 0)
    return Counts(max(total - failed - errors - skipped, 0), failed, errors, skipped)


_SYMPY = re.compile(r"tests finished: ((?:\d+ [a-z ]+?,\s*)+)in [\d.]+ seconds")


def sympy_counts(text: str) -> Counts | None:
    found = list(_SYMPY.finditer(text))
    if not found:
        return None
    n = dict((w.strip(), int(c)) for c, w in re.findall(r"(\d+) ([a-z ]+?),", found[-1].group(1)))
    return Counts(n.get("passed", 0), n.get("failed", 0) + n.get("exceptions", 0), 0,
                  n.get("skipped", 0) + n.get("expected to fail", 0))


_GO_PKG = re.compile(r"^(ok|FAIL|---)\s+\S+", re.M)
_GO_TEST = re.compile(r"^\s*--- (PASS|FAIL|SKIP): ", re.M)


def go_counts(text: str) -> Counts | None:
    """`go test`: test lines with -v (`--- PASS: TestX`), else one count per package (`ok  pkg`, `FAIL pkg`)."""
    tests = _GO_TEST.findall(text)
    if tests:
        return Counts(tests.count("PASS"), tests.count("FAIL"), 0, tests.count("SKIP"))
    pkgs = [m.group(1) for m in _GO_PKG.finditer(text) if m.group(1) != "---"]
    if not pkgs:
        return None
    build = len(re.findall(r"\[build failed\]|\[setup failed\]", text))
    return Counts(pkgs.count("ok"), pkgs.count("FAIL") - build, build, 0)


_CARGO = re.compile(r"test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored")


def cargo_counts(text: str) -> Counts | None:
    found = _CARGO.findall(text)
    if not found:
        return Counts(errors=1) if re.search(r"^error(\[E\d+\])?: could not compile", text, re.M) else None
    total = Counts()
    for passed, failed, ignored in found:
        total = total + Counts(int(passed), int(failed), 0, int(ignored))
    return total


_JEST = re.compile(r"^Tests:\s+(.*\d+ total)\s*$", re.M)
_VITEST = re.compile(r"^\s*Tests\s+(.*)\(\d+\)\s*$", re.M)
_WORDS = re.compile(r"(\d+) (passed|failed|skipped|todo|pending)")


def jest_counts(text: str) -> Counts | None:
    """Jest (`Tests: 1 failed, 3 passed, 4 total`) and Vitest (`Tests  1 failed | 3 passed (4)`)."""
    found = list(_JEST.finditer(text)) or list(_VITEST.finditer(text))
    if not found:
        return None
    n = {"passed": 0, "failed": 0, "skipped": 0}
    for count, word in _WORDS.findall(found[-1].group(1)):
        n["skipped" if word in ("todo", "pending") else word] += int(count)
    return Counts(n["passed"], n["failed"], 0, n["skipped"])


_MOCHA = re.compile(r"^\s*(\d+) (passing|failing|pending)\b", re.M)


def mocha_counts(text: str) -> Counts | None:
    found = _MOCHA.findall(text)
    if not any(word == "passing" for _, word in found):
        return None
    n = {word: int(count) for count, word in found}
    return Counts(n.get("passing", 0), n.get("failing", 0), 0, n.get("pending", 0))


_NODE = re.compile(r"^[#ℹ] (tests|pass|fail|cancelled|skipped|todo) (\d+)\s*$", re.M)


def node_counts(text: str) -> Counts | None:
    """`node --test`: its TAP summary (`# pass 3`) or the spec reporter's (`ℹ pass 3`) on a terminal."""
    n = {word: int(count) for word, count in _NODE.findall(text)}
    if "pass" not in n:
        return None
    return Counts(n["pass"], n.get("fail", 0), n.get("cancelled", 0), n.get("skipped", 0) + n.get("todo", 0))


_RSPEC = re.compile(r"^(\d+) examples?, (\d+) failures?(?:, (\d+) pending)?", re.M)


def rspec_counts(text: str) -> Counts | None:
    found = _RSPEC.findall(text)
    if not found:
        return None
    examples, failures, pending = (int(x or 0) for x in found[-1])
    return Counts(examples - failures - pending, failures, 0, pending)


_MAVEN = re.compile(r"Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)(?!, Time)")


def maven_counts(text: str) -> Counts | None:
    """Surefire's total (`Tests run: 5, Failures: 1, Errors: 0, Skipped: 1`, the line without a time), or the build
    failing before any test ran."""
    found = _MAVEN.findall(text)
    if not found:
        return Counts(errors=1) if "BUILD FAILURE" in text else None
    run, failures, errors, skipped = (int(x) for x in found[-1])
    return Counts(run - failures - errors - skipped, failures, errors, skipped)


_GRADLE = re.compile(r"(\d+) tests? completed(?:, (\d+) failed)?(?:, (\d+) skipped)?")


def gradle_counts(text: str) -> Counts | None:
    found = _GRADLE.findall(text)
    if found:
        total, failed, skipped = (int(x or 0) for x in found[-1])
        return Counts(total - failed - skipped, failed, 0, skipped)
    if "BUILD FAILED" in text:
        return Counts(errors=1)
    return None


_CTEST = re.compile(r"(\d+)% tests passed, (\d+) tests? failed out of (\d+)")


def ctest_counts(text: str) -> Counts | None:
    found = _CTEST.findall(text)
    if not found:
        return None
    _, failed, total = (int(x) for x in found[-1])
    return Counts(total - failed, failed, 0, 0)


#: every parser, in the order `any_counts` tries them
PARSERS: tuple[Parser, ...] = (pytest_counts, unittest_counts, sympy_counts, cargo_counts, jest_counts, mocha_counts,
                               node_counts, rspec_counts, maven_counts, gradle_counts, ctest_counts, go_counts)


def any_counts(text: str) -> Counts | None:
    """For a runner of runners: the first parser that finds a summary."""
    for parse in PARSERS:
        counts = parse(text)
        if counts is not None:
            return counts
    return None


@dataclass(frozen=True)
class Runner:
    """A test runner: `name`, the words that start it (each a tuple; "python" stands for any Python
    interpreter), and the parser of its output."""

    name: str
    starts: tuple[tuple[str, ...], ...]
    parse: Parser


PY = "python"  # any interpreter: python, python3, python3.11, .venv/bin/python
RUNNERS: tuple[Runner, ...] = (
    Runner("pytest", (("pytest",), ("py.test",), ("pytest-3",), (PY, "-m", "pytest"), (PY, "-m", "py.test")),
           pytest_counts),
    Runner("unittest", ((PY, "-m", "unittest"), (PY, "setup.py", "test")), unittest_counts),
    Runner("django", ((PY, "tests/runtests.py"), ("tests/runtests.py",), (PY, "runtests.py"), ("runtests.py",),
                      (PY, "manage.py", "test"), (PY, "-m", "django", "test"), ("django-admin", "test")),
           unittest_counts),
    Runner("sympy", ((PY, "bin/test"), ("bin/test",), (PY, "-m", "sympy.testing.runtests")), sympy_counts),
    Runner("tox", (("tox",), (PY, "-m", "tox")), any_counts),
    Runner("nox", (("nox",), (PY, "-m", "nox")), any_counts),
    Runner("jest", (("jest",),), jest_counts),
    Runner("vitest", (("vitest",),), jest_counts),
    Runner("mocha", (("mocha",),), mocha_counts),
    Runner("node --test", (("node", "--test"),), node_counts),
    Runner("npm test", (("npm", "test"), ("npm", "t"), ("npm", "run", "test"), ("yarn", "test"), ("pnpm", "test"),
                        ("yarn", "run", "test"), ("pnpm", "run", "test"), ("bun", "test")), any_counts),
    Runner("go test", (("go", "test"),), go_counts),
    Runner("cargo test", (("cargo", "test"), ("cargo", "nextest", "run")), cargo_counts),
    Runner("rspec", (("rspec",), ("rake", "spec"), ("rake", "test")), rspec_counts),
    Runner("maven", (("mvn", "test"), ("mvn", "verify"), ("mvnw", "test"), ("mvnw", "verify")), maven_counts),
    Runner("gradle", (("gradle", "test"), ("gradle", "check"), ("gradlew", "test"), ("gradlew", "check")),
           gradle_counts),
    Runner("ctest", (("ctest",),), ctest_counts),
    Runner("make", (("make", "test"), ("make", "check"), ("make", "tests")), any_counts),
)

_PYTHON = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)*)?$")


def _word_matches(expected: str, word: str) -> bool:
    """`expected` as the word itself, or as a path's last part: `./gradlew`, `node_modules/.bin/jest`,
    `/testbed/tests/runtests.py`; "python" is any interpreter."""
    if expected == PY:
        return bool(_PYTHON.match(word))
    return word.removeprefix("./") == expected or word.endswith("/" + expected)


def find_runner(words: list[str]) -> tuple[Runner, int] | None:
    """The runner `words` start (wrappers already stripped) and the index of its first own argument."""
    for runner in RUNNERS:
        for start in runner.starts:
            if len(words) >= len(start) and all(_word_matches(e, w) for e, w in zip(start, words, strict=False)):
                return runner, len(start)
            # `npm run test:unit`, `make test-unit`, `yarn test:ci`: a script named after the tests
            last = start[-1]
            if last in ("test", "tests") and len(words) >= len(start) and \
                    all(_word_matches(e, w) for e, w in zip(start[:-1], words, strict=False)) and \
                    re.fullmatch(rf"{last}[:_-][\w:.-]+", words[len(start) - 1]):
                return runner, len(start)
    return None
