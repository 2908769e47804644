"""Infrastructure failures apart from model failures (swebench 5.0's harness/infra_failure.py, #586).

A run that did not produce a verdict, or produced a bad one, is labelled by the signatures of its logs: the
*environment* tier cannot plausibly come from a patch to the repository's source (no display, out of memory, no
network name resolution, the package under test not installable with an untouched build); the *ambiguous* tier
can come from either (a missing module, no test collected, a timeout). The label is advisory, as in the harness:
it never turns an unresolved instance into a resolved one nor drops it from the counts; it tells the reader
which failures say something about the model.
"""

from __future__ import annotations

import re

TIER_ENVIRONMENT = "environment"
TIER_AMBIGUOUS = "ambiguous"

#: (reason, tier, pattern), the first match wins: the harness's, then ours
SIGNATURES: tuple[tuple[str, str, str], ...] = (
    ("browser_launch_failed", TIER_ENVIRONMENT, r"Failed to launch|Failed to connect to the bus"),
    ("display_unavailable", TIER_ENVIRONMENT, r"cannot open display|Missing X server|unable to open X display"),
    ("out_of_memory", TIER_ENVIRONMENT, r"Cannot allocate memory|OutOfMemoryError|^Killed$"),
    ("network_unreachable", TIER_ENVIRONMENT, r"Could not resolve host|Temporary failure in name resolution"),
    ("sandbox_unavailable", TIER_ENVIRONMENT, r"^bwrap: "),
    ("missing_module", TIER_AMBIGUOUS, r"Cannot find module|MODULE_NOT_FOUND|ModuleNotFoundError"),
    ("no_tests_collected", TIER_AMBIGUOUS, r"no tests ran|collected 0 items"),
    ("tests_timed_out", TIER_AMBIGUOUS, r"Timeout error: \d+ seconds exceeded|^TIMEOUT after "),
)
_COMPILED = tuple((reason, tier, re.compile(pattern, re.M)) for reason, tier, pattern in SIGNATURES)
#: files whose change makes a failed install the patch's doing as much as the environment's
BUILD_FILES = re.compile(r"^diff --git a/(\S*/)?(setup\.py|setup\.cfg|pyproject\.toml|requirements[^/\s]*\.txt|"
                         r"MANIFEST\.in|[^/\s]*\.pyx|[^/\s]*\.c|[^/\s]*\.h) ", re.M)


def classify(*texts: str) -> tuple[str, str] | None:
    """(reason, tier) of the first signature found in the logs, or None."""
    text = "\n".join(t for t in texts if t)
    for reason, tier, pattern in _COMPILED:
        if pattern.search(text):
            return reason, tier
    return None


def install_failure_tier(patch: str) -> str:
    """A failed install of the package under test: the environment's failure unless the patch changed how the
    package builds."""
    return TIER_AMBIGUOUS if BUILD_FILES.search(patch) else TIER_ENVIRONMENT


#: a failed name resolution: the test reached for the internet (the harness's containers have it, the sandbox not)
NAME_RESOLUTION = re.compile(r"Could not resolve host|Temporary failure in name resolution")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_BLOCK = re.compile(r"^=+ (.+?) =+$")
_HEADING = re.compile(r"^_{3,} (?:ERROR at (?:setup|teardown) of )?(.+?) _{3,}$")


def failure_reports(log: str) -> dict[str, str]:
    """pytest's report of each failed test (the FAILURES and ERRORS blocks), by its heading: the test id without
    its file, `Class.test_name[param]`."""
    reports: dict[str, list[str]] = {}
    current: list[str] | None = None
    inside = False
    for line in _ANSI.sub("", log).splitlines():
        block = _BLOCK.match(line)
        if block:
            inside, current = block.group(1) in ("FAILURES", "ERRORS"), None
            continue
        heading = _HEADING.match(line) if inside else None
        if heading:
            current = reports.setdefault(heading.group(1), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in reports.items()}


def failed_on_network(log: str, failing: list[str], also: re.Pattern[str] | None = None) -> bool:
    """Every test of `failing` (test ids) failed on the network: its own report names a failed name resolution
    (or matches `also`). A test without a report, or with another failure, says something about the patch."""
    if not failing:
        return False
    reports = failure_reports(log)
    for test in failing:
        report = reports.get(".".join(test.split("::")[1:]) or test)
        if report is None or not (NAME_RESOLUTION.search(report) or (also is not None and also.search(report))):
            return False
    return True

