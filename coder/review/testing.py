"""The project's tests, in the sandbox, with a time limit: the tests related to the touched files first, then the
whole suite when configured (or when nothing related was found).

A test that fails after the patch is the patch's fault only if it passed before: failing pytest tests are run
again on the base tree, and those that failed there too become warnings ("already failing"), not errors.
Configure with `[review.tests]`: `command` (a shell command; replaces detection), `full_suite` ("auto" | true |
false), `timeout` (seconds, default 300), `enabled`."""

from __future__ import annotations

import json
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from coder.base.errors import SandboxUnavailable
from coder.fs.beneath import path_kind
from coder.review.context import ReviewContext
from coder.review.types import Finding, StageResult
from coder.sandbox.exec import run_sandboxed

_PYTEST_FAIL_RE = re.compile(r"^(FAILED|ERROR) (\S+?)(?:::(\S+))?(?: - (.*))?$", re.M)


@dataclass
class TestPlan:
    kind: str  # "pytest", "npm", "go", "cargo", "custom"
    full: str  # the whole suite
    related: str | None = None  # the tests related to the touched files, when they can be selected
    related_files: list[str] = field(default_factory=list)


def _python(workdir: Path) -> str:
    """The interpreter for the project's tests: the project's, never coder's own (`sys.executable` is coder's
    install, a pipx or private venv without the project's dependencies, when coder is installed apart from the
    project). The project's `.venv` or `venv` when it has one, else `python3` as the sandboxed shell resolves it on
    its PATH: the model's shell gets the same PATH (an activated `$VIRTUAL_ENV` first on it, or the one a batch run
    gives the sandbox), so the review's tests and coder.engine.verify's evidence run (`run_selected`) check a claim
    with the interpreter the model used. A venv is looked up beneath `workdir` without following links (a venv's
    `bin/python` is itself a link to the system's, so the last component may be one): it runs in the sandbox,
    which resolves it in its own view; nothing on the host is read through a planted link."""
    venv = _venv(workdir)
    return str(venv / "bin" / "python") if venv is not None else "python3"


def _venv(workdir: Path) -> Path | None:
    """The project's own `.venv` or `venv` folder (one with a `bin/python`), looked up without following links."""
    for name in (".venv", "venv"):
        if path_kind(workdir, f"{name}/bin/python") in ("file", "link"):
            return workdir / name
    return None


def _pytest_configured(ctx: ReviewContext, files: list[str]) -> bool:
    names = set(files)
    if {"pytest.ini", "conftest.py"} & names:
        return True
    for cfg, marker in (("pyproject.toml", "[tool.pytest"), ("setup.cfg", "[tool:pytest]"), ("tox.ini", "[pytest]")):
        if cfg in names and marker in (ctx.read_new(cfg) or ""):
            return True
    return any(PurePosixPath(p).name.startswith("test_") and p.endswith(".py") for p in ctx.test_files)


def detect(ctx: ReviewContext, workdir: Path) -> TestPlan | None:
    """Which test runner this project uses, and the command for the related tests."""
    tcfg = ctx.settings.tests
    if tcfg.command:
        return TestPlan("custom", tcfg.command)
    files = ctx.tree_files(new=True)
    top = set(files)
    if _pytest_configured(ctx, files):
        py = shlex.quote(_python(workdir))
        base = f"{py} -m pytest -q -rfE -p no:cacheprovider --no-header --maxfail=30"
        related = related_python_tests(ctx)
        quoted = " ".join(shlex.quote(p) for p in related)
        return TestPlan("pytest", base, f"{base} {quoted}" if related else None, related)
    if "package.json" in top:
        try:
            scripts = json.loads(ctx.read_new("package.json") or "{}").get("scripts", {})
        except json.JSONDecodeError:
            scripts = {}
        test = scripts.get("test", "")
        if test and "no test specified" not in test:
            return TestPlan("npm", "npm test --silent")
    if "go.mod" in top:
        pkgs = sorted({"./" + str(PurePosixPath(f.path).parent) for f in ctx.files if f.path.endswith(".go")})
        related = " ".join(shlex.quote(p if p != "./." else ".") for p in pkgs)
        return TestPlan("go", "go test ./...", f"go test {related}" if pkgs else None)
    if "Cargo.toml" in top:
        return TestPlan("cargo", "cargo test --quiet")
    return None


def related_python_tests(ctx: ReviewContext) -> list[str]:
    """Changed test files, test files named after a changed module, and test files importing it."""
    tests = set(ctx.test_files)
    related = {f.new_path for f in ctx.files if f.new_path in tests and f.new_path.endswith(".py")
               and PurePosixPath(f.new_path).name != "conftest.py"}
    modules = set()
    for f in ctx.source_files:
        if f.new_path is None or not f.new_path.endswith(".py"):
            continue
        p = PurePosixPath(f.new_path)
        modules.add(p.parent.name if p.name == "__init__.py" else p.stem)
    modules.discard("")
    runnable = [t for t in tests if t.endswith(".py") and (PurePosixPath(t).name.startswith("test_")
                                                          or t.endswith("_test.py"))]
    for mod in modules:
        related.update(t for t in runnable if names_module(t, mod))
    if modules and runnable:
        pattern = import_pattern(sorted(modules), posix=True)
        related.update(ctx.repo.grep(ctx.new_tree, pattern, runnable[:2000]) or [])
    return sorted(related)[:80]


def names_module(test_path: str, module: str) -> bool:
    """A test file named after module `module` (its last dotted part): test_mod.py, mod_test.py, test_mod_x.py,
    mod.test.js, mod_spec.rb: the reviewer's selection, and what coder.evidence calls covering the module."""
    name = PurePosixPath(test_path).name
    stem = name.split(".", 1)[0]
    mod = module.rsplit(".", 1)[-1]
    return bool(mod) and (stem in (f"test_{mod}", f"{mod}_test", f"{mod}_spec") or stem.startswith(f"test_{mod}_")
                          or name.startswith((f"{mod}.test.", f"{mod}.spec.")))


def import_pattern(modules: list[str], posix: bool = False) -> str:
    """An import of any of `modules` (dotted names, each matched as a whole word, inside a dotted path too):
    Python's `from pkg.mod import x` and `import pkg`, JavaScript's `from './mod'` and `require('../mod')`. With
    `posix`, in the syntax `git grep -E` reads (a backslash class inside brackets is literal there: the old
    `[\\w.]` never matched `from pkg.mod`)."""
    word = "[[:alnum:]_./'\"]" if posix else r"[\w./'\"]"
    names = "|".join(re.escape(m) for m in sorted(set(modules)) if m)
    return r"\b(import|from|require\()\s*" + word + r"*\b(" + names + r")\b"


def _run(ctx: ReviewContext, command: str, workdir: Path, timeout: float,
         lend: Path | None = None) -> tuple[int | None, str, bool]:
    """`command` in the model's shell's sandbox on `workdir`; `lend`: one more folder it may read (the project's
    venv, for a run in an exported copy that does not hold it), bound by descriptor (coder/sandbox/lend.py)."""
    env = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": ":".join(
        str(p) for p in (workdir / "src", workdir) if p.is_dir())}
    run = run_sandboxed(command, workdir, ctx.config.sandbox, timeout, env=env,
                        lend_from=(lend.parent, lend.name) if lend is not None else None)
    return run.exit_code, run.output, run.timed_out


@dataclass
class SelectedRun:
    """The reviewer's selected tests for a diff, run once (`run_selected`)."""

    command: str
    exit_code: int | None
    output: str
    timed_out: bool


def run_selected(ctx: ReviewContext) -> SelectedRun | None:
    """Run the tests the reviewer would select for `ctx`'s diff (the related ones, else the whole suite) once in
    the sandbox, within `[review.tests] timeout`; None when no test command is detected. For coder.engine.verify
    (`[verify] on_unverified = "run"`): the same selection as the tests stage, without its verdict."""
    plan = detect(ctx, ctx.workdir)
    if plan is None:
        return None
    command = plan.related or plan.full
    code, output, timed_out = _run(ctx, command, ctx.workdir, ctx.settings.tests.timeout)
    return SelectedRun(command, code, output, timed_out)


def _failures(output: str) -> list[tuple[str, str, str]]:
    """(file, test id, message) for each failing pytest test in `-rfE` output."""
    out = []
    for m in _PYTEST_FAIL_RE.finditer(output):
        file, name = m.group(2), m.group(3) or ""
        out.append((file, f"{file}::{name}" if name else file, (m.group(4) or "").strip()))
    return out


def stage_tests(ctx: ReviewContext) -> StageResult:
    start = time.monotonic()
    tcfg = ctx.settings.tests
    if not (ctx.settings.run_tests if tcfg.enabled is None else tcfg.enabled):
        return StageResult("tests", "skipped", 0.0, "disabled by configuration")
    if not ctx.files:
        return StageResult("tests", "skipped", 0.0, "empty diff")
    workdir = ctx.workdir
    plan = detect(ctx, workdir)
    if plan is None:
        return StageResult("tests", "skipped", time.monotonic() - start, "no test command detected (set "
                           "review.tests.command)")
    timeout = tcfg.timeout
    full_suite = tcfg.full_suite
    commands: list[tuple[str, str]] = []
    if plan.related:
        commands.append(("related", plan.related))
    if full_suite is True or (full_suite == "auto" and not plan.related):
        commands.append(("full", plan.full))

    notes, details, findings = [], "", []
    for scope, command in commands:
        left = timeout - (time.monotonic() - start)
        if left <= 1:
            notes.append(f"{scope} tests not run: time limit reached")
            break
        try:
            code, output, timed_out = _run(ctx, command, workdir, left)
        except SandboxUnavailable as exc:
            return StageResult("tests", "error", time.monotonic() - start, f"sandbox unavailable: {exc}")
        details = output
        if timed_out:
            findings.append(Finding("", None, "warning", f"{scope} tests timed out after {left:.0f}s", "tests-timeout",
                                    "tests"))
            notes.append(f"{scope} tests timed out")
            break
        if plan.kind == "pytest" and code == 5:
            notes.append(f"{scope}: no tests collected")
            continue
        if plan.kind == "pytest" and code and no_pytest(output):  # nothing ran: the project's Python lacks it
            findings.append(Finding("", None, "warning", f"tests not run: {output.strip()} (install pytest for "
                                    "that Python, or set review.tests.command)", "tests-not-run", "tests"))
            notes.append(f"{scope} tests not run: no Python with pytest")
            break
        if code == 0:
            notes.append(f"{scope} tests passed" + (f" ({len(plan.related_files)} file(s))" if scope == "related"
                                                   else ""))
            continue
        findings += _failure_findings(ctx, plan, output, code, workdir, left)
        notes.append(f"{scope} tests failed (exit {code})")
        break
    status = "fail" if any(f.severity == "error" for f in findings) else "warn" if findings else "pass"
    if not commands:
        status = "skipped"
    return StageResult("tests", status, time.monotonic() - start, f"{plan.kind}: " + "; ".join(notes), findings,
                       details if status != "pass" else "")


def no_pytest(output: str) -> bool:
    """`python -m pytest` said only that it has no pytest (issue 47's trial: that read as "tests failed", and the
    model was sent to fix the code twice before /commit gave up), or the shell found no `python3` on its PATH (a
    project with no venv on a machine whose sandbox PATH has none)."""
    lines = output.strip().splitlines()
    return len(lines) == 1 and lines[0].endswith((": No module named pytest", "python3: command not found"))


def _failure_findings(ctx: ReviewContext, plan: TestPlan, output: str, code: int | None, workdir: Path,
                      timeout: float) -> list[Finding]:
    failures = _failures(output) if plan.kind == "pytest" else []
    if not failures:
        tail = output.strip().splitlines()[-1:] or [""]
        return [Finding("", None, "error", f"tests failed (exit {code}): {tail[0][:200]}", "tests-failed", "tests")]
    already = _failing_at_base(ctx, plan, [f[1] for f in failures], timeout) if ctx.base_tree else set()
    findings = []
    for file, test_id, message in failures[:30]:
        if test_id in already:
            findings.append(Finding(file, None, "warning", f"{test_id} fails, but it failed before the change too",
                                    "tests-already-failing", "tests"))
        else:
            findings.append(Finding(file, None, "error", f"{test_id} fails" + (f": {message[:200]}" if message else ""),
                                    "tests-failed", "tests"))
    return findings


def _failing_at_base(ctx: ReviewContext, plan: TestPlan, test_ids: list[str], timeout: float) -> set[str]:
    """The ids among `test_ids` that also fail on the base tree (run there in an exported copy)."""
    ids = test_ids[:30]
    if not ids or timeout < 5:
        return set()
    base_dir = ctx.export(ctx.base_tree)
    command = f"{plan.full} " + " ".join(shlex.quote(t) for t in ids)
    try:  # the copy holds no venv (untracked): the project's own is lent, read-only, at its own path
        _, output, timed_out = _run(ctx, command, base_dir, min(timeout, 120), lend=_venv(ctx.workdir))
    except Exception:  # noqa: BLE001 - this is a refinement; without it failures stay errors
        return set()
    if timed_out:
        return set()
    failed_ids = {f[1] for f in _failures(output)}
    missing = {t for t in ids if path_kind(base_dir, t.split("::")[0]) is None}  # ids come from test output
    return (failed_ids & set(ids)) - missing
