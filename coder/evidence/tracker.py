"""The evidence of a session, kept from its events: the last change to each file, every verifying command and how it
ended, and at the end of a turn the record (record.py) saying whether the change was verified.

It reads events only (like the stuck detector), plus two things a live session gives it and a replay can stand
in for: a probe of the work tree after each shell command (probe.py: which files the command changed) and a
reader of workspace files (a test file's imports, the script a run names). coder.evidence.replay feeds it other
agents' trajectories, so the benchmark measures the very code sessions run.

Time is a counter of tool calls, three slots each: the changes a call made before it ran its tests, the run, the
changes after. A verifying command's own changes count as made before its run (`sed -i ... && pytest`) unless a
command after the runner on the same line may write (`pytest; git apply x.patch`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from coder.base import events as ev
from coder.evidence.claims import find_claim
from coder.evidence.commands import Verifying, classify, only_reads, project_words, quoted
from coder.evidence.probe import TreeProbe
from coder.evidence.record import FAILED, UNVERIFIED, VERIFIED, Evidence, RunRecord
from coder.evidence.runners import Counts
from coder.review.context import TEST_DIRS, is_test_path
from coder.review.testing import import_pattern, names_module
from coder.tools.registry import describe

#: what a change to needs proof: source code and the configuration that builds and runs it, by suffix or by name
#: (documents, logs, data, marker files and the like need none)
CODE_SUFFIXES = frozenset(
    ".py .pyi .pyx .pxd .js .jsx .ts .tsx .mjs .cjs .vue .svelte .go .rs .java .kt .kts .scala .groovy .gradle .c .h "
    ".cc .cpp .cxx .hpp .hh .hxx .cs .fs .vb .rb .php .swift .m .mm .sh .bash .zsh .fish .ps1 .pl .pm .lua .r .jl .ex "
    ".exs .erl .hrl .hs .ml .mli .clj .cljs .dart .zig .nim .sql .html .htm .css .scss .sass .less .toml .yaml .yml "
    ".json .ini .cfg .xml .properties .cmake .mk .proto .graphql .tf .nix".split())
CODE_NAMES = re.compile(r"^(Makefile|GNUmakefile|Dockerfile|Containerfile|Gemfile|Rakefile|Justfile|BUILD|WORKSPACE|"
                        r"CMakeLists\.txt|requirements.*\.txt|constraints.*\.txt|Pipfile|Procfile|\.\w+rc)$")
#: what running code leaves behind (when the repository does not ignore it)
_ARTIFACTS = re.compile(r"(^|/)(__pycache__|\.pytest_cache|\.mypy_cache|\.ruff_cache|\.tox|\.nox|node_modules|"
                        r"[^/]+\.egg-info|\.hypothesis)(/|$)")
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\):|^\w*(Error|Exception): |^AssertionError", re.M)


def is_code(path: str) -> bool:
    """Whether a change to `path` needs proof: source or build configuration, not what running code left."""
    p = PurePosixPath(path)
    return bool(p.suffix.lower() in CODE_SUFFIXES or CODE_NAMES.match(p.name)) and not _ARTIFACTS.search(path)


@dataclass
class _Run:
    tick: int
    check: Verifying
    outcome: str
    counts: Counts | None
    exit_code: int | None
    text: str  # the script's or test file's code when read (what `covers` looks for imports in)
    by: str = "model"
    why: str = ""


def result_of(check: Verifying, output: str, data: Mapping[str, Any]) -> tuple[str, Counts | None, int | None, str]:
    """(outcome, counts, exit code, why) of one verifying command from its output and the call's data."""
    if data.get("interrupted") or data.get("background"):
        return "unknown", None, None, "interrupted or sent to the background"
    code = data.get("exit_code") if check.exit_trusted else None
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if data.get("timed_out"):
        return FAILED, None, code, "timed out"
    counts = check.parse(output)
    if counts is not None:
        if counts.bad or code not in (None, 0):
            return FAILED, counts, code, ""
        return ("passed", counts, code, "") if counts.passed else ("empty", counts, code, "no test ran")
    if code is None:
        if check.kind == "script" and _TRACEBACK.search(output):
            return FAILED, None, None, "it raised"
        return "unknown", None, None, "its exit status was not its own and no summary was read"
    if code == 5 and check.runner == "pytest":
        return "empty", None, code, "no test was collected"
    return ("passed" if code == 0 else FAILED), None, code, ""


class EvidenceTracker:
    """Fed a session's events (`observe`); `record(final_text)` at the end of each turn."""

    def __init__(self, probe: TreeProbe | None = None, read: Callable[[str], str | None] | None = None,
                 project: list[str] | None = None, tools: Mapping[str, Any] | None = None,
                 root: str = "") -> None:
        self.probe = probe
        self.read = read or (lambda path: None)
        self.project = project_words(project or [])
        self.tools = tools
        self.root = root.rstrip("/")  # the workspace's absolute path: paths under it are made relative
        self.tick = 0
        self.last_change: dict[str, int] = {}
        self.runs: list[_Run] = []
        self._edited: set[str] = set()  # files edits reported since the last probe
        self._cwd = self.root  # the shell's folder before the next command (its `cwd` after the last one)
        self.turn_changed = False
        self.turn_ran = False
        self.nudged = ""

    # ---- what happened ----------------------------------------------------------------------------------------
    def observe(self, event: ev.Event) -> None:
        if isinstance(event, ev.UserMessage):
            self.turn_changed = self.turn_ran = False
            self.nudged = ""
            self.tick += 3
            for path in self._probed():  # the user's own edits between turns, to files the agent changed
                if path in self.last_change:
                    self.last_change[path] = self.tick
        elif isinstance(event, ev.ToolCallFinished):
            self._call(event.tool, event.input, event.output, event.files_changed, event.data)

    def _call(self, tool: str, args: dict[str, Any], output: str, files: list[str], data: Mapping[str, Any]) -> None:
        self.tick += 3
        for path in files:
            self._changed(self._relative(path, data), self.tick)
            self._edited.add(self._relative(path, data))
        line = describe(tool, args, self.tools).shell
        if line is None:
            return
        before, self._cwd = self._cwd, str(data.get("cwd") or self._cwd)
        check = classify(line, self.project, lambda p, cd: self._relative(p, {"cwd": posixpath.join(before, *cd)})
                         in self.last_change)
        after = check is None or check.writes_after
        for path in self._probed() if check is not None or not only_reads(line) else ():
            self._changed(path, self.tick + 2 if after else self.tick)
        if check is None:
            return
        outcome, counts, code, why = result_of(check, output, data)
        where = {"cwd": posixpath.normpath(posixpath.join(before, *check.cd))}  # `cd x && pytest y`: y is x/y
        check = replace(check, selection=tuple(self._relative(p, where) for p in check.selection),
                        script=self._relative(check.script, where) if check.script not in ("", "-c") else check.script)
        text = check.code or self._text_of(check)
        self.runs.append(_Run(self.tick + 1, check, outcome, counts, code, text, why=why))
        self.turn_ran = True

    def add_run(self, command: str, check: Verifying, output: str, data: Mapping[str, Any], by: str) -> RunRecord:
        """A verifying command coder ran itself (`[verify] on_unverified = "run"`): after every change so far."""
        self.tick += 3
        outcome, counts, code, why = result_of(check, output, data)
        self.runs.append(_Run(self.tick + 1, check, outcome, counts, code, "", by=by, why=why or command))
        return self._record(self.runs[-1], True, "the reviewer's selection for the change")

    def _changed(self, path: str, tick: int) -> None:
        self.last_change[path] = tick
        self.turn_changed = True

    def _probed(self) -> list[str]:
        if self.probe is None:
            return []
        found = [p for p in self.probe.changes() if p not in self._edited]
        self._edited.clear()
        return found

    def _relative(self, path: str, data: Mapping[str, Any]) -> str:
        """A path as the workspace names it: relative paths start at the command's working directory."""
        cwd = str(data.get("cwd") or self.root)
        full = posixpath.normpath(path if path.startswith("/") else f"{cwd}/{path}")
        if self.root and (full == self.root or full.startswith(self.root + "/")):
            full = full[len(self.root) + 1:]
        return full or "."

    def _text_of(self, check: Verifying) -> str:
        """The code a run's coverage is judged by: the script, or the one test file it selects (workspace paths)."""
        paths = [check.script] if check.script else list(check.selection[:1])
        for path in paths:
            if path and "." in PurePosixPath(path).name:
                return self.read(path) or ""
        return ""

    # ---- what it proves ---------------------------------------------------------------------------------------
    def changed(self) -> list[str]:
        """The code files changed (the net change when a probe knows it), scripts run as evidence left out."""
        net = self.probe.net() if self.probe is not None else None
        files = set(self.last_change) if net is None else set(net) & set(self.last_change) | \
            {p for p in net if p not in self.last_change}
        scripts = {r.check.script for r in self.runs if r.check.script not in ("", "-c")}
        return sorted(p for p in files if is_code(p) and p not in scripts)

    def covers(self, run: _Run, changed: list[str]) -> tuple[bool, str]:
        check = run.check
        if run.by == "coder":
            return True, "the reviewer's selection for the change"
        if check.kind == "project":
            return True, "the project's test command"
        modules = _modules([p for p in changed if not is_test_path(p)])
        if check.kind == "script":
            hit = _imported(run.text, modules)
            return (True, f"it imports {hit}") if hit else (False, "it imports no changed module")
        if not check.selection:
            return True, "the whole suite"
        stems = [m.rsplit(".", 1)[-1] for m in modules]
        for sel in check.selection:
            folder = PurePosixPath(sel)
            above = "" if str(folder.parent) == "." else f"{folder.parent}/"
            for path in changed:
                if path == sel or path.startswith(sel + "/"):
                    return True, f"it runs {sel}"
                if folder.name in TEST_DIRS and path.startswith(above):
                    return True, f"{sel} holds the tests of {path}"
            if any(names_module(sel, stem) for stem in stems):
                return True, f"{sel} is named after a changed module"
        hit = _imported(run.text, modules)
        if hit:
            return True, f"{check.selection[0]} imports {hit}"
        return False, "its tests do not touch the change"

    def record(self, final_text: str = "") -> Evidence | None:
        """The evidence now (None when no code changed). Call at the end of a turn."""
        for path in self._probed():  # a background job may have written since the last command
            self._changed(path, self.tick + 2)
        changed = self.changed()
        if not changed:
            return None
        last = max(self.last_change.get(p, 0) for p in changed)
        after = [r for r in self.runs if r.tick > last]
        latest: dict[str, _Run] = {}
        for run in after:
            latest[run.check.text] = run
        records = [self._record(r, *self.covers(r, changed)) for r in latest.values()]
        covering = [r for r in records if r.covers]
        if any(r.outcome == FAILED for r in covering):
            state, reason = FAILED, "a run that covers the change failed after the last change"
        elif any(r.outcome == "passed" for r in covering):
            state, reason = VERIFIED, "tests that cover the change passed after the last change"
        else:
            state, reason = UNVERIFIED, _why_unverified(records, len(self.runs) - len(after))
        claim = find_claim(final_text)
        return Evidence(state, changed, records, len(self.runs) - len(after), reason, claim,
                        bool(claim) and state != VERIFIED, self.nudged)

    def _record(self, run: _Run, covers: bool, why: str) -> RunRecord:
        counts = None if run.counts is None else {"passed": run.counts.passed, "failed": run.counts.failed,
                                                   "errors": run.counts.errors, "skipped": run.counts.skipped}
        return RunRecord(quoted(run.check.text), run.check.kind, run.check.runner, run.outcome, run.exit_code, counts,
                         covers, True, run.by, run.why or why)


def _modules(paths: list[str]) -> list[str]:
    """Dotted module names of changed source files, with their top package (`src/pkg/a/b.py` -> `pkg.a.b`, `pkg`)."""
    out: list[str] = []
    for path in paths:
        p = PurePosixPath(path)
        parts = list(p.parts[1:] if p.parts[:1] == ("src",) and len(p.parts) > 1 else p.parts)
        stem = p.stem if p.name != "__init__.py" else ""
        dotted = ".".join([*parts[:-1], *([stem] if stem else [])])
        if dotted:
            out.append(dotted)
            if "." in dotted:
                out.append(dotted.split(".", 1)[0])
    return sorted(set(out))


def _imported(text: str, modules: list[str]) -> str:
    """The first of `modules` that `text` imports, or ""."""
    if not text or not modules:
        return ""
    found = re.search(import_pattern(modules), text)
    return found.group(2) if found else ""


def _why_unverified(records: list[RunRecord], earlier: int) -> str:
    if any(r.outcome in ("unknown", "empty") for r in records if r.covers):
        return "the runs after the last change ran no test or their result is unknown"
    if records:
        return "the runs after the last change do not cover it"
    if earlier:
        return "no test ran after the last change"
    return "no test ran"
