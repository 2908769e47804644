"""The suite's tiers: every test is `unit`, `integration` or `slow`, by rule, so nobody marks hundreds of tests by
hand and a new test lands in the right tier without its author doing anything (docs/testing.md).

- `slow` is chosen by the author (`@pytest.mark.slow`): benchmark-like tests and races, minutes under load.
- `integration` is any other test that can start a process (the real sandbox, git, a server, the CLI). Decided
  statically, once per test at collection (coder/ and tests/ are only read, never run): the test function, every
  fixture it uses and every helper under tests/ they reference, followed through the code; a reference to a
  process-starting module (subprocess, pexpect, multiprocessing, pty, `os.fork`/`os.system`/...,
  `sys.executable`) or to anything from a coder module that imports, at any depth, one that starts processes
  (coder/vcs, coder/sandbox, ...) makes the test integration. The rule errs towards integration.
- `unit` is the rest, and is held to it: a unit test that starts a process (set-up included) fails, naming what
  it started (an audit hook sees every fork, exec, spawn and Popen of the test's own threads). A wrong tier is
  fixed by a marker, `@pytest.mark.integration`, never by a bigger timeout.

Each tier has its own timeout (pytest-timeout's marker, unless the test sets one), and the slow tests run first
so that the two xdist workers do not end on one long test. The summary line gives each tier's test time and its
CPU (the test process's and its waited-for children's, per phase, also in `--junitxml`'s properties): on a shared
machine the wall time swings with the load, the CPU much less.
"""

from __future__ import annotations

import functools
import re
import resource
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

TIERS = ("slow", "integration", "unit")
#: seconds; generous on purpose: a timeout is for a hang, and the suite must pass with the machine loaded ~10x
TIMEOUTS = {"unit": 60, "integration": 300, "slow": 900}

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "coder"

#: modules whose use means a process
PROCESS_MODULES = frozenset({"subprocess", "pexpect", "ptyprocess", "pty", "multiprocessing",
                             "concurrent.futures.process"})
#: names that start a process, by the module they are read from (os.fork, sys.executable, ...)
PROCESS_NAMES = {
    "os": frozenset({"fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "popen", "execv", "execve",
                     "execvp", "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp",
                     "spawnvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe"}),
    "sys": frozenset({"executable"}),  # a test that names the interpreter runs it
    "asyncio": frozenset({"create_subprocess_exec", "create_subprocess_shell"}),
}
#: the audit events (docs.python.org/3/library/audit_events.html) by which a process is started
SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.system", "os.exec",
                          "os.spawn"})


# ---- which coder modules can start a process ----------------------------------------------------------------

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(?P<base>\.*[\w.]*)[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n]*)"
                    r"|import[ \t]+(?P<modules>[^\n]*))", re.M)
QUALIFIED = re.compile(r"\b(os|sys|asyncio)\.(\w+)")


def _imports_and_spawns(source: str, module: str, is_package: bool) -> tuple[set[str], bool]:
    """The coder modules this source imports anywhere (also inside functions), and whether it starts processes
    itself. Read with regular expressions, not parsed: an import in a string counts too, which only errs towards
    integration."""
    imported: set[str] = set()
    spawns = any(name in PROCESS_NAMES[owner] for owner, name in QUALIFIED.findall(source))
    for match in IMPORT.finditer(source):
        if match["modules"] is not None:
            names = [part.split()[0] for part in re.sub(r"#.*", "", match["modules"]).split(",") if part.strip()]
        else:
            base = match["base"]
            level = len(base) - len(base.lstrip("."))
            if level:
                parts = module.split(".")
                anchor = parts[: len(parts) - level + (1 if is_package else 0)]
                base = ".".join([*anchor, base.lstrip(".")] if base.lstrip(".") else anchor)
            listed = re.sub(r"#[^\n]*", "", match["names"]).strip("() \n").replace("\n", " ").split(",")
            names = [base, *(f"{base}.{part.split()[0]}" for part in listed if part.strip())]
        for name in names:
            if name in PROCESS_MODULES or name.split(".")[0] in PROCESS_MODULES:
                spawns = True
            elif name == "coder" or name.startswith("coder."):
                imported.add(name)
    return imported, spawns


@functools.cache
def process_modules() -> frozenset[str]:
    """Every coder module that starts a process or imports (at any depth, lazily or not) one that does."""
    graph: dict[str, set[str]] = {}
    spawning: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        imported, spawns = _imports_and_spawns(path.read_text(encoding="utf-8"), name, path.name == "__init__.py")
        graph[name] = imported
        if spawns:
            spawning.add(name)
    known = set(graph)

    def resolve(name: str) -> str | None:  # `coder.vcs.repo.diff` -> `coder.vcs.repo`
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    edges = {m: {r for r in map(resolve, deps) if r and r != m} for m, deps in graph.items()}
    changed = True
    while changed:
        changed = False
        for module, deps in edges.items():
            if module not in spawning and deps & spawning:
                spawning.add(module)
                changed = True
    return frozenset(spawning)


def _coder_module_spawns(module: str | None) -> bool:
    if not module or not (module == "coder" or module.startswith("coder.")):
        return False
    spawning = process_modules()
    while module:
        if module in spawning:
            return True
        module = module.rpartition(".")[0]
    return False


# ---- which test code can start a process ---------------------------------------------------------------------

@functools.cache
def _test_code(filename: str, root: Path) -> bool:
    """Code of the suite itself (its tests, fixtures and helpers), read through; coder's is judged by module."""
    path = Path(filename).resolve()
    return path.is_relative_to(root) and not path.is_relative_to(PACKAGE)


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _functions_of(obj: Any) -> Iterator[types.FunctionType]:
    """The Python functions behind `obj`: itself, a wrapped function, or a class's methods and properties."""
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        yield from (f for f in (obj.fget, obj.fset) if isinstance(f, types.FunctionType))
    elif isinstance(obj, types.FunctionType):
        yield obj
        wrapped = getattr(obj, "__wrapped__", None)
        if wrapped is not None:
            yield from _functions_of(wrapped)
        for cell in obj.__closure__ or ():
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            if isinstance(inner, types.FunctionType):
                yield inner
    elif isinstance(obj, type):
        for klass in obj.__mro__:
            if klass is not object:
                for member in vars(klass).values():
                    yield from _functions_of(member)


@dataclass
class _Reader:
    """Follows test code through its references; `why` is the first process-starting reference found."""

    root: Path
    seen: set[int] = field(default_factory=set)
    why: str = ""

    def spawns(self, fn: Any) -> bool:
        return any(self._function(f) for f in _functions_of(fn))

    def _function(self, fn: types.FunctionType) -> bool:
        if id(fn.__code__) in self.seen:
            return False
        self.seen.add(id(fn.__code__))
        if not _test_code(fn.__code__.co_filename, self.root):
            return _coder_module_spawns(getattr(fn, "__module__", None)) and self._found(fn.__module__)
        where = f"{fn.__module__}.{fn.__qualname__}"
        codes = list(_codes(fn.__code__))
        names = {n for code in codes for n in (*code.co_names, *code.co_varnames, *code.co_freevars)}
        for owner, attributes in PROCESS_NAMES.items():  # `os.system`, also as `import os` then a lambda using it
            if owner in names and names & attributes:
                return self._found(f"{owner}.{min(names & attributes)} in {where}")
        return any(self._name(name, fn.__globals__, where) for code in codes for name in code.co_names)

    def _name(self, name: str, namespace: dict[str, Any], where: str) -> bool:
        if name in PROCESS_MODULES or name.split(".")[0] in PROCESS_MODULES:
            return self._found(f"{name} in {where}")
        if name.startswith("coder.") and _coder_module_spawns(name):  # a lazy `from coder.x import y`
            return self._found(f"{name} in {where}")
        if name not in namespace:
            return False
        obj = namespace[name]
        if isinstance(obj, types.ModuleType):
            if obj.__name__ in PROCESS_MODULES or _coder_module_spawns(obj.__name__):
                return self._found(f"{obj.__name__} in {where}")
            return False
        module = getattr(obj, "__module__", None)
        if isinstance(module, str) and _coder_module_spawns(module):
            return self._found(f"{module}.{getattr(obj, '__qualname__', name)} in {where}")
        return any(self._function(f) for f in _functions_of(obj) if _test_code(f.__code__.co_filename, self.root))

    def _found(self, why: str) -> bool:
        self.why = self.why or why
        return True


def _fixture_functions(item: pytest.Item) -> Iterable[Any]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [d.func for defs in info.name2fixturedefs.values() for d in defs]


def classify(item: pytest.Item) -> tuple[str, str]:
    """(tier, why) for one collected test."""
    for marker in item.iter_markers():  # closest first: a test's own marker wins over its module's
        if marker.name in TIERS:
            return marker.name, "marked"
    reader = _Reader(item.config.rootpath)
    for fn in [getattr(item, "function", None), *_fixture_functions(item)]:
        if fn is not None and reader.spawns(fn):
            return "integration", reader.why
    return "unit", ""


# ---- the check: a unit test that starts a process fails ------------------------------------------------------

class TierError(AssertionError):
    """A test classed `unit` started a process."""


@dataclass
class _Guard:
    test: str = ""
    #: threads that were running before the test's set-up began (another test's servers): not its doing
    others: frozenset[int] = frozenset()
    started: list[str] = field(default_factory=list)

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.test or event not in SPAWN_EVENTS or threading.get_ident() in self.others:
            return
        what = f"{event} {args[1]!r}"[:200] if event == "subprocess.Popen" else event
        self.started.append(what)
        raise TierError(self.message(what))

    def message(self, what: str, test: str = "") -> str:
        return (f"{test or self.test} is a unit test and started a process ({what}). The tier rule missed it: "
                "mark it @pytest.mark.integration (docs/testing.md).")

    def phase(self, item: pytest.Item, first: bool) -> Iterator[None]:
        """Wraps one phase (set-up, call) of a unit test."""
        if item.get_closest_marker("unit") is None:
            return (yield)
        if first:
            self.others = frozenset(t.ident for t in threading.enumerate()
                                    if t is not threading.main_thread() and t.ident is not None)
        self.started.clear()
        self.test = item.nodeid
        try:
            result = yield
        finally:
            self.test = ""
        if self.started:  # started, refused, and the refusal swallowed by the code under test
            raise TierError(self.message(self.started[0], item.nodeid))
        return result


GUARD = _Guard()


def pytest_configure(config: pytest.Config) -> None:
    for name, what in (("unit", "no process: runs in milliseconds, in any order"),
                       ("integration", "starts processes: the real sandbox, git, servers, the CLI"),
                       ("slow", "benchmark-like or a race: seconds to minutes, chosen by the author")):
        config.addinivalue_line("markers", f"{name}: {what} (tier; timeout {TIMEOUTS[name]} s)")
    sys.addaudithook(GUARD.audit)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tiers = {}
    for item in items:
        tier, why = classify(item)
        tiers[item.nodeid] = tier
        item.user_properties.append(("tier", tier if not why else f"{tier}: {why}"))
        if tier not in {m.name for m in item.iter_markers()}:
            item.add_marker(tier)
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIMEOUTS[tier]))
    items.sort(key=lambda item: TIERS.index(tiers[item.nodeid]))  # stable: file order within a tier


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from GUARD.phase(item, first=True))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from GUARD.phase(item, first=False))


@dataclass
class _Totals:
    """Tests, seconds and CPU seconds per tier, from the reports (the workers' too, under xdist)."""

    tests: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)


TOTALS = _Totals()


def _cpu() -> float:
    """CPU seconds of this process and of the children it waited for (a `coder run`, git, the sandbox, theirs):
    a steadier measure of a test's cost than its wall time on a shared machine."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


#: the CPU reading at the end of the last phase reported (set as each test starts)
_CPU_MARK: list[float] = [0.0]


def pytest_runtest_logstart() -> None:
    _CPU_MARK[0] = _cpu()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport() -> Iterator[pytest.TestReport]:
    report = yield
    now = _cpu()
    report.user_properties.append(("cpu", round(now - _CPU_MARK[0], 3)))  # this phase's (set-up, call, teardown)
    _CPU_MARK[0] = now
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    properties = dict(report.user_properties)
    tier = str(properties.get("tier", "")).split(":")[0]
    if not tier:
        return
    TOTALS.seconds[tier] = TOTALS.seconds.get(tier, 0.0) + report.duration
    TOTALS.cpu[tier] = TOTALS.cpu.get(tier, 0.0) + float(properties.get("cpu", 0.0))
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        TOTALS.tests[tier] = TOTALS.tests.get(tier, 0) + 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TOTALS.tests:
        terminalreporter.write_line("tiers: " + ", ".join(
            f"{tier} {TOTALS.tests.get(tier, 0)} tests {TOTALS.seconds.get(tier, 0.0):.0f} s "
            f"({TOTALS.cpu.get(tier, 0.0):.0f} s CPU)"
            for tier in reversed(TIERS)) + " (test time, summed over the workers)")

