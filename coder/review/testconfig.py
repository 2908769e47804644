"""Gaming guard for the test configuration and CI: a change that leaves tests out (deselect, ignore, a
collection hook) or makes failures pass (`|| true`, `continue-on-error`) is an error; any other change to the
test or CI configuration is a warning worth a look."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from coder.review.context import ReviewContext
from coder.review.types import Finding
from coder.review.types import gaming_finding as _f
from coder.vcs.patch import FilePatch

CI_PATHS = (".github/workflows/", ".gitlab-ci.yml", ".circleci/", "azure-pipelines.yml", "Jenkinsfile",
            ".travis.yml", "noxfile.py", "tox.ini", "pytest.ini", ".mocharc", "jest.config", "vitest.config",
            "karma.conf", "phpunit.xml")
#: in configuration files (ini, toml, yaml, package.json, Makefile): options that leave tests out or hide failures
_DESELECT_RE = re.compile(r"--deselect|--ignore\b|--ignore-glob|-k\s+['\"]?not\b|\bnorecursedirs\b|collect_ignore|"
                          r"testPathIgnorePatterns|\|\|\s*true\b|continue-on-error:\s*true|--exitfirst=0")
#: in conftest.py: collection hooks that drop or skip tests
_CONFTEST_DESELECT_RE = re.compile(r"collect_ignore|pytest_ignore_collect|\.deselect|items\[:\]\s*=|items\.remove\(|"
                                   r"add_marker\(.*(skip|xfail)")



def is_test_config(path: str) -> bool:
    name = PurePosixPath(path).name
    return (path.startswith(CI_PATHS) or name.startswith(CI_PATHS) or name in ("conftest.py", "pyproject.toml",
            "setup.cfg", "package.json", "Makefile", ".coveragerc"))


def _section_of(text: str | None, line_no: int) -> str:
    if not text:
        return ""
    section = ""
    for i, line in enumerate(text.splitlines(), 1):
        if i > line_no:
            break
        m = re.match(r"^\s*\[([^\]]+)\]", line)
        if m:
            section = m.group(1)
    return section


def test_config_findings(ctx: ReviewContext, f: FilePatch) -> list[Finding]:
    name = PurePosixPath(f.path).name
    old, new = ctx.read_old(f.old_path), ctx.read_new(f.new_path)
    changed = [(line, new, "+") for line in f.added] + [(line, old, "-") for line in f.removed]
    if name in ("pyproject.toml", "setup.cfg", "tox.ini"):
        changed = [c for c in changed if re.search(r"pytest|coverage|testenv|^tox", _section_of(c[1], c[0].number))]
    elif name == "package.json":
        changed = [c for c in changed if re.search(r'"(test|jest|mocha|vitest)[^"]*"\s*:', c[0].text)]
    elif name == "Makefile":
        changed = [c for c in changed if re.search(r"\btest", c[0].text)]
    if not changed:
        return []
    findings = []
    for line, _, sign in changed:
        pattern = _CONFTEST_DESELECT_RE if name == "conftest.py" else _DESELECT_RE
        if sign == "+" and pattern.search(line.text):
            findings.append(_f(f.path, line.number, "error", f"test configuration changed to leave tests out or "
                               f"ignore failures: {line.text.strip()[:80]}", "tests-deselected"))
    if not findings:
        what = "CI configuration" if f.path.startswith((".github/", ".gitlab", ".circleci/")) else "test configuration"
        findings.append(_f(f.path, changed[0][0].number if changed[0][2] == "+" else None, "warning",
                           f"{what} changed: check it does not weaken the tests", "test-config-changed"))
    return findings
