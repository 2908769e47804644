"""Test-log parsing and grading, following the SWE-bench harness rule for rule.

The local evaluator is only useful if it agrees with the official harness, so the parsers and the resolution
rule here reproduce `swebench/harness/log_parsers/python.py` and `swebench/harness/grading.py` of swebench 5.0.2
(MIT; the harness that grades the v5 dataset rows): a test counts as passed when its status is PASSED or XFAIL,
as failed when it is FAILED, ERROR, SKIPPED or missing from the log (a PASS_TO_PASS test that is SKIPPED is
maintained, not failed); a truncated parametrised id (`test_x[log(photon`) matches by prefix when the
candidates agree. An instance is *resolved* when every FAIL_TO_PASS test passes and every PASS_TO_PASS test is
maintained, *partially* resolved when some but not all FAIL_TO_PASS tests pass and the rest holds, otherwise
*not* resolved.

What swebench 5.0 tightened is followed too (`grade`): a log without both markers, or with the harness's failure
codes, is no verdict on the patch; a run whose parser finds no test at all and shows no sign that a suite ran
is invalid (not "all tests passed" and not "not resolved"); and the test command's own exit status is recorded
after the end marker, so output a patch prints (a conftest hook writing `PASSED x`) cannot pass a run whose
command failed while claiming no failure. Such runs are *errors*, and coder/batch/infra.py says whether the
environment or the patch is the likelier cause.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

START_TEST_OUTPUT = ">>>>> Start Test Output"
END_TEST_OUTPUT = ">>>>> End Test Output"
TEST_EXIT_CODE = ">>>>> Test Exit Code"
#: the harness's failure codes: a log holding one says nothing about the patch's tests
BAD_CODES = (">>>>> Patch Apply Failed", ">>>>> Reset Failed", ">>>>> Tests Errored", ">>>>> Tests Timed Out")
STATUSES = ("FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL")

RESOLVED = "resolved"
PARTIALLY = "partially"
NOT_RESOLVED = "not"
ERROR = "error"


_SKIP_SUMMARY_COUNT = re.compile(r"^\[\d+\]$")


def _summary_parts(line: str) -> list[str] | None:
    """`STATUS name [- message]` (pytest's short summary) as [STATUS, name, ...], or None for other lines
    (and for `SKIPPED [N] path:line: reason`, where [N] is no test)."""
    if not any(line.startswith(s) for s in STATUSES):
        return None
    if line.startswith("FAILED"):
        line = line.replace(" - ", " ")
    parts = line.split()
    if len(parts) <= 1 or (parts[0] == "SKIPPED" and _SKIP_SUMMARY_COUNT.match(parts[1])):
        return None
    return parts


def parse_log_pytest(log: str) -> dict[str, str]:
    """`pytest -rA` short summary lines: `PASSED path::test`, `FAILED path::test - message`."""
    status_map: dict[str, str] = {}
    for line in log.split("\n"):
        if parts := _summary_parts(line):
            status_map[parts[1]] = parts[0]
    return status_map


_OPTION = re.compile(r"(.*?)\[(.*)\]")


def parse_log_pytest_options(log: str) -> dict[str, str]:
    """Like pytest, but parametrised ids that are absolute paths are cut to their last component."""
    status_map: dict[str, str] = {}
    for line in log.split("\n"):
        if not (parts := _summary_parts(line)):
            continue
        name = parts[1]
        if match := _OPTION.search(name):
            main, option = match.groups()
            if option.startswith("/") and not option.startswith("//") and "*" not in option:
                option = "/" + option.split("/")[-1]
            name = f"{main}[{option}]"
        status_map[name] = parts[0]
    return status_map


def parse_log_pytest_v2(log: str) -> dict[str, str]:
    """Later pytest versions and verbose output: colour codes stripped, `name STATUS` lines too."""
    status_map: dict[str, str] = {}
    escapes = "".join(chr(c) for c in range(1, 32))
    translator = str.maketrans("", "", escapes)
    for line in log.split("\n"):
        line = re.sub(r"\[(\d+)m", "", line).translate(translator)
        if any(line.startswith(s) for s in STATUSES):
            if line.startswith("FAILED"):
                line = line.split(" - ", 1)[0]  # the message after " - " never enters the id
            parts = line.split()
            if len(parts) >= 2 and not (parts[0] == "SKIPPED" and _SKIP_SUMMARY_COUNT.match(parts[1])):
                status_map[" ".join(parts[1:])] = parts[0]
        elif any(line.endswith(s) for s in STATUSES):
            parts = line.split()
            if len(parts) >= 2:
                status_map[" ".join(parts[:-1])] = parts[-1]
    return status_map


def parse_log_seaborn(log: str) -> dict[str, str]:
    """seaborn: `FAILED name`, `name PASSED ...` (verbose) and `PASSED name` lines."""
    status_map: dict[str, str] = {}
    for line in log.split("\n"):
        parts = line.split()
        if len(parts) < 2:
            continue
        if line.startswith("FAILED"):
            status_map[parts[1]] = "FAILED"
        elif " PASSED " in line:
            if parts[1] == "PASSED":
                status_map[parts[0]] = "PASSED"
        elif line.startswith("PASSED"):
            status_map[parts[1]] = "PASSED"
    return status_map


def parse_log_matplotlib(log: str) -> dict[str, str]:
    """pytest's summary with matplotlib's enum reprs in ids normalised (MouseButton.LEFT -> 1)."""
    return parse_log_pytest(log.replace("MouseButton.LEFT", "1").replace("MouseButton.RIGHT", "3"))


_DJANGO_PATTERNS = [
    r"^(.*?)\s\.\.\.\sTesting\ against\ Django\ installed\ in\ ((?s:.*?))\ silenced\)\.\nok$",
    r"^(.*?)\s\.\.\.\sInternal\ Server\ Error:\ \/(.*)\/\nok$",
    r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$",
]


def parse_log_django(log: str) -> dict[str, str]:
    """Django's runner at --verbosity 2: `test_x (app.tests.Case) ... ok|FAIL|ERROR|skipped`."""
    status_map: dict[str, str] = {}
    prev_test = None
    for line in log.split("\n"):
        line = line.strip()
        if "--version is equivalent to version" in line:
            status_map["--version is equivalent to version"] = "PASSED"
        if " ... " in line:
            prev_test = line.split(" ... ")[0]
        for suffix in (" ... ok", " ... OK", " ...  OK"):
            if line.endswith(suffix):
                if line.strip().startswith("Applying sites.0002_alter_domain_unique...test_no_migrations"):
                    line = line.split("...", 1)[-1].strip()
                status_map[line.rsplit(suffix, 1)[0]] = "PASSED"
                break
        if " ... skipped" in line:
            status_map[line.split(" ... skipped")[0]] = "SKIPPED"
        if line.endswith(" ... FAIL"):
            status_map[line.split(" ... FAIL")[0]] = "FAILED"
        if line.startswith("FAIL:"):
            status_map[line.split()[1].strip()] = "FAILED"
        if line.endswith(" ... ERROR"):
            status_map[line.split(" ... ERROR")[0]] = "ERROR"
        if line.startswith("ERROR:"):
            status_map[line.split()[1].strip()] = "ERROR"
        if line.lstrip().startswith("ok") and prev_test is not None:
            status_map[prev_test] = "PASSED"
    for pattern in _DJANGO_PATTERNS:
        for match in re.finditer(pattern, log, re.MULTILINE):
            status_map[match.group(1)] = "PASSED"
    return status_map


def parse_log_sympy(log: str) -> dict[str, str]:
    """sympy's bin/test --verbose: `test_name ok|F|E` lines, and `___ path.py:test_name ___` failure headers."""
    status_map: dict[str, str] = {}
    for match in re.findall(r"(_*) (.*)\.py:(.*) (_*)", log):
        status_map[f"{match[1]}.py:{match[2]}"] = "FAILED"
    for line in log.split("\n"):
        line = line.strip()
        if line.startswith("test_"):
            if line.endswith(" E"):
                status_map[line.split()[0]] = "ERROR"
            if line.endswith(" F"):
                status_map[line.split()[0]] = "FAILED"
            if line.endswith(" ok"):
                status_map[line.split()[0]] = "PASSED"
    return status_map


PARSERS: dict[str, Callable[[str], dict[str, str]]] = {
    "pytest": parse_log_pytest,
    "pytest_options": parse_log_pytest_options,
    "pytest_v2": parse_log_pytest_v2,
    "django": parse_log_django,
    "sympy": parse_log_sympy,
    "seaborn": parse_log_seaborn,
    "matplotlib": parse_log_matplotlib,
}

#: The harness's parser per repository (the `log_parser` column names them `parse_log_<repo>`).
REPO_PARSER = {
    "astropy": "pytest_v2", "scikit": "pytest_v2", "sphinx": "pytest_v2", "seaborn": "seaborn",
    "matplotlib": "matplotlib",
    "pydicom": "pytest_options", "requests": "pytest_options", "pylint": "pytest_options",
    "django": "django", "sympy": "sympy",
}


def parser_for(name: str) -> Callable[[str], dict[str, str]]:
    """A parser by our name (`pytest`) or the harness's (`parse_log_pydicom`, `parse_log_pytest`)."""
    key = name.removeprefix("parse_log_")
    if key in PARSERS:
        return PARSERS[key]
    return PARSERS[REPO_PARSER.get(key, "pytest")]


def test_section(log: str) -> str | None:
    """The part of an evaluation log between the harness's markers; None when the tests never ran."""
    if START_TEST_OUTPUT not in log or END_TEST_OUTPUT not in log:
        return None
    return log.split(START_TEST_OUTPUT, 1)[1].split(END_TEST_OUTPUT, 1)[0]


def _resolve_case(case: str, sm: dict[str, str]) -> str | None:
    """The status-map key for `case`; a truncated parametrised id (more `[` than `]`) matches by prefix when
    all candidates agree on pass or fail (the harness's workaround for truncated ids in Verified)."""
    if case in sm:
        return case
    if case.count("[") > case.count("]"):
        matches = [k for k in sm if k.startswith(case)]
        if matches and len({sm[k] in ("PASSED", "XFAIL") for k in matches}) == 1:
            return matches[0]
    return None


def passed(case: str, sm: dict[str, str]) -> bool:
    key = _resolve_case(case, sm)
    return key is not None and sm[key] in ("PASSED", "XFAIL")


def maintained(case: str, sm: dict[str, str]) -> bool:
    """PASS_TO_PASS: a skipped test is no regression."""
    key = _resolve_case(case, sm)
    return passed(case, sm) or (key is not None and sm[key] == "SKIPPED")


def failed(case: str, sm: dict[str, str]) -> bool:
    key = _resolve_case(case, sm)
    return key is None or sm[key] in ("FAILED", "ERROR", "SKIPPED")


def tests_report(status_map: dict[str, str], fail_to_pass: list[str],
                 pass_to_pass: list[str]) -> dict[str, dict[str, list[str]]]:
    report: dict[str, dict[str, list[str]]] = {}
    for key, tests, ok_rule in (("FAIL_TO_PASS", fail_to_pass, passed), ("PASS_TO_PASS", pass_to_pass, maintained)):
        ok: list[str] = []
        bad: list[str] = []
        for case in tests:
            if ok_rule(case, status_map):
                ok.append(case)
            elif failed(case, status_map):
                bad.append(case)
        report[key] = {"success": ok, "failure": bad}
    return report


def _ratio(part: dict[str, list[str]]) -> float:
    total = len(part["success"]) + len(part["failure"])
    return 1.0 if total == 0 else len(part["success"]) / total


def resolution(report: dict[str, dict[str, list[str]]]) -> str:
    f2p, p2p = _ratio(report["FAIL_TO_PASS"]), _ratio(report["PASS_TO_PASS"])
    if f2p == 1 and p2p == 1:
        return RESOLVED
    if 0 < f2p < 1 and p2p == 1:
        return PARTIALLY
    return NOT_RESOLVED


#: evidence that a test runner executed although nothing was parsed (swebench 5.0's SUITE_RAN, every count > 0)
SUITE_RAN = re.compile(r"Executed [1-9]\d* of \d+|TOTAL: [1-9]\d* (?:SUCCESS|FAILED)|[1-9]\d* passing"
                       r"|Tests:\s+[1-9]\d*|Test Suites:\s+(?:\d+ \w+, )*[1-9]\d* total|^# tests [1-9]\d*"
                       r"|[1-9]\d* specs?, \d+ failures?|': ok$", re.M)
_EXIT_CODE = re.compile(re.escape(TEST_EXIT_CODE) + r":\s*(-?\d+)")


@dataclass
class Graded:
    """A verdict on one evaluation log: `status` (resolved, partially, not, or error when the log is no verdict
    on the patch, `error` then saying why) and the per-test report."""

    status: str
    tests_status: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    error: str = ""


def test_exit_code(log: str) -> int | None:
    """The test command's own exit status, as the eval script records it after the end marker."""
    match = _EXIT_CODE.search(log)
    return int(match.group(1)) if match else None


def grade(log: str, parser: Callable[[str], dict[str, str]], fail_to_pass: list[str],
          pass_to_pass: list[str]) -> Graded:
    """swebench 5.0's `get_logs_eval` + `get_eval_report`, with its invalid runs named instead of unresolved."""
    bad = [code for code in BAD_CODES if code in log]
    if bad:
        return Graded(ERROR, error=f"the test run did not complete ({bad[0].removeprefix('>>>>> ')})")
    section = test_section(log)
    if section is None:
        return Graded(ERROR, error="the test run ended before its end marker (timeout or crash)")
    status_map = parser(section) or parser(log)  # results printed outside the markers count, as in the harness
    if not status_map and not SUITE_RAN.search(log):
        return Graded(ERROR, error="no test ran: the log shows no test result and no sign that the suite started")
    code = test_exit_code(log)
    if code not in (None, 0) and status_map and not any(v in ("FAILED", "ERROR") for v in status_map.values()):
        return Graded(ERROR, error=f"the test command exited {code} while its log reports no failure: the log does "
                                   "not describe the run (output printed by the patch cannot pass a failed run)")
    report = tests_report(status_map, fail_to_pass, pass_to_pass)
    return Graded(resolution(report), report)
