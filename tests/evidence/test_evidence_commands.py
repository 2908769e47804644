"""What a shell line verifies (the shell parser's reading of it, not string matching), the project's own test
commands from its instructions, and the claims of success in a final message."""

from __future__ import annotations

import pytest

from coder.evidence.claims import find_claim
from coder.evidence.commands import classify, from_instructions, only_reads, project_words


def check(line: str, project: list[str] | None = None, written: set[str] | None = None):
    return classify(line, project_words(project or []), lambda path, cd: path in (written or set()))


def test_runners_behind_wrappers_and_their_selection() -> None:
    found = check("cd src && timeout 300 uv run python -X dev -m pytest -q -k 'not slow' tests/test_calc.py::test_add")
    assert found is not None and (found.kind, found.runner) == ("tests", "pytest")
    assert found.selection == ("tests/test_calc.py",) and found.cd == ("src",) and found.exit_trusted
    assert check("PYTHONPATH=. pytest").selection == ()  # the whole suite
    assert check("./tests/runtests.py admin_views.tests --parallel 1").selection == ("tests/admin_views",)


def test_an_exit_status_that_is_not_the_runners() -> None:
    piped = check("python -m pytest -x tests 2>&1 | tail -20")
    assert piped is not None and not piped.exit_trusted and not piped.writes_after
    after = check("pytest tests; echo done")
    assert after is not None and not after.exit_trusted and not after.writes_after
    writes = check("pytest tests && git stash pop")
    assert writes is not None and writes.writes_after  # a change after the run on the same line


def test_scripts_count_only_when_the_session_wrote_them() -> None:
    assert check("python reproduce.py") is None  # somebody else's script
    found = check("python reproduce.py", written={"reproduce.py"})
    assert found is not None and (found.kind, found.script) == ("script", "reproduce.py")
    inline = check("python -c 'from calc import add; assert add(2, 3) == 5'")
    assert inline is not None and inline.script == "-c" and "assert add" in inline.code
    here = check("python - <<'EOF'\nimport calc\nprint(calc.add(1, 2))\nEOF")
    assert here is not None and "import calc" in here.code
    assert check("bash -c 'make test'") is None  # a line inside a line is not a script
    assert check("python setup.py build") is None


def test_the_projects_own_command() -> None:
    found = check("bash ./check.sh --fast", project=["./check.sh"])
    assert found is not None and found.kind == "project"
    assert check("./check-links.sh", project=["./check.sh"]) is None


INSTRUCTIONS = """# Working here

Lint: `ruff check src tests` (config in pyproject.toml).
Run the tests with `./run-tests.sh` or, for one area, `python -m pytest tests/AREA -q`.

## Testing
Before you commit:
```sh
$ make test-all
# the slow ones too
make slow
```
Use `python` 3.11; tests live in `tests/`.
"""


def test_test_commands_from_the_instructions() -> None:
    found = from_instructions(INSTRUCTIONS)
    assert found == ["./run-tests.sh", "python -m pytest tests/AREA -q", "make test-all", "make slow"]
    assert "ruff check src tests" not in found  # a linter, named on a line about lint: "tests" is its argument


def test_only_reads() -> None:
    assert only_reads("grep -rn add src | head -5") and only_reads("cd src && ls -la")
    assert not only_reads("sed -i 's/a/b/' x.py") and not only_reads("python x.py")


@pytest.mark.parametrize(("text", "claim"), [
    ("Excellent! All tests pass. Now let me write the patch.", "All tests pass."),
    ("Fixed the off-by-one in calc.py.", "Fixed the off-by-one in calc.py."),
    ("The bug is now fixed and the function works correctly.", "The bug is now fixed and the function works "
                                                               "correctly."),
    ("This fixes the `UnicodeEncodeError` reported in the issue.", "This fixes the `UnicodeEncodeError` reported in "
                                                                  "the issue."),
    ("- ✅ tests green", "✅ tests green"),
    ("This should fix it.", ""), ("I could not verify that it works.", ""), ("The tests are not passing yet.", ""),
    ("Let me run the tests to make sure all tests pass.", ""), ("Done.", ""), ("Tests still fail on Windows.", ""),
])
def test_claims(text: str, claim: str) -> None:
    assert find_claim(text) == claim


def test_test_commands_under_a_testing_heading() -> None:
    text = ("# calc\n\nRun `make build` first.\n\n## Testing\n\nRun `./check.sh` before you finish.\n"
            "Lint with `ruff check .` too; type-check with `mypy src`.\nFixtures live in `tests/conftest.py`.\n"
            "```\nmake slow\n```\n\n## Style\n\nFormat with `black .` and keep `make docs` green.\n")
    assert from_instructions(text) == ["./check.sh", "make slow"]  # not build, lint, typing, files, style
