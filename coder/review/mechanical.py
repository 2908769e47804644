"""Mechanical checks, part one: the diff applies to its base, every touched file parses, linters are clean on
the changed lines. Cheap, deterministic, and they decide alone when no model is configured."""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path

from coder.codeintel.languages import parser_for
from coder.fs.beneath import path_kind, read_beneath
from coder.host import TimeoutExpired, which
from coder.host import run as host_run
from coder.review.context import ReviewContext
from coder.review.types import Finding, StageResult, status_from
from coder.vcs.repo import VcsError

# ruff codes that mean "this code is broken", not "this code is untidy"
RUFF_ERRORS = ("E9", "F63", "F7", "F82")
#: rules used when the project has no ruff configuration of its own: high signal only
RUFF_DEFAULT_SELECT = "E9,F63,F7,F82,F401,F811,F841"
#: the files ruff reads its configuration from, in a file's folder and every folder above it
RUFF_CONFIG_FILES = ("pyproject.toml", "ruff.toml", ".ruff.toml")


def stage_apply(ctx: ReviewContext) -> StageResult:
    start = time.monotonic()
    if not ctx.diff.strip():
        return StageResult("apply", "skipped", time.monotonic() - start, "empty diff: nothing to review")
    if ctx.apply_error:
        finding = Finding("", None, "error", f"the diff does not apply cleanly to {ctx.base}: {ctx.apply_error}",
                          "apply", "apply")
        return StageResult("apply", "fail", time.monotonic() - start, "", [finding])
    return StageResult("apply", "pass", time.monotonic() - start, f"applies to {ctx.base}")


def _first_error(node) -> int | None:
    """1-based line of the first ERROR or MISSING node, depth first."""
    if node.is_error or node.is_missing:
        return node.start_point[0] + 1
    for child in node.children:
        if child.has_error or child.is_missing or child.is_error:
            line = _first_error(child)
            if line is not None:
                return line
    return None


def _ts_error(path: str, text: str | None) -> tuple[bool, int | None]:
    """(could parse, first error line) with tree-sitter; (False, None) when no grammar covers the file."""
    if text is None:
        return False, None
    parser = parser_for(path)
    if parser is None:
        return False, None
    tree = parser.parse(text.encode("utf-8", errors="surrogateescape"))
    root = tree.root_node
    if not root.has_error:
        return True, None
    return True, _first_error(root) or 1


def _py_error(text: str) -> int | None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return exc.lineno or 1
    except (ValueError, RecursionError):
        return None
    return None


def stage_parse(ctx: ReviewContext) -> StageResult:
    start = time.monotonic()
    findings: list[Finding] = []
    checked = 0
    for f in ctx.files:
        if f.new_path is None or f.binary:
            continue
        new = ctx.read_new(f.new_path)
        covered, line = _ts_error(f.new_path, new)
        if not covered:
            continue
        checked += 1
        if line is None:
            continue
        if f.new_path.endswith((".py", ".pyi")):
            # tree-sitter's grammar and the running Python disagree at the edges of the language; a file is
            # broken when both reject it (new syntax one of them lacks is not the patch's fault)
            py_line = _py_error(new or "")
            if py_line is None:
                continue
            line = py_line
        old_covered, old_line = _ts_error(f.new_path, ctx.read_old(f.old_path)) if f.old_path else (False, None)
        if old_covered and old_line is not None:
            findings.append(Finding(f.new_path, line, "warning", "the file does not parse (it did not before "
                                    "the change either)", "syntax", "parse"))
        else:
            findings.append(Finding(f.new_path, line, "error", "syntax error: the file no longer parses",
                                    "syntax", "parse"))
    note = f"{checked} file(s) parsed" if checked else "no file in a language with a grammar"
    return StageResult("parse", status_from(findings) if checked else "skipped", time.monotonic() - start, note,
                       findings)


def _ruff_command() -> list[str] | None:
    try:
        return [which("ruff")]  # never one found in the workspace (an activated .venv/bin there)
    except OSError:
        pass
    try:
        from ruff.__main__ import find_ruff_bin  # type: ignore[import-not-found]

        return [str(find_ruff_bin())]
    except Exception:  # noqa: BLE001 - ruff is optional
        return None


def _has_ruff_config(root: Path) -> bool:
    """Whether the project configures ruff at its top (`root` is the lint export: plain files only)."""
    if any(path_kind(root, name) == "file" for name in ("ruff.toml", ".ruff.toml")):
        return True
    return b"[tool.ruff" in (read_beneath(root, "pyproject.toml") or b"")


def stage_lint(ctx: ReviewContext) -> StageResult:
    """Ruff on the changed Python files; only findings on added lines count (old debt is not this patch's)."""
    start = time.monotonic()
    py_files = [f for f in ctx.files if f.new_path and f.new_path.endswith((".py", ".pyi")) and not f.binary]
    if not py_files:
        return StageResult("lint", "skipped", time.monotonic() - start, "no changed file has a linter configured")
    if not ctx.settings.lint:
        return StageResult("lint", "skipped", time.monotonic() - start, "disabled by review.lint = false")
    ruff = _ruff_command()
    if ruff is None:
        return StageResult("lint", "skipped", time.monotonic() - start,
                           "ruff not installed (pip install ruff) for the Python files")
    try:
        # on the host, with the repository's ruff config, but in an export of the patched tree: ruff never opens
        # a workspace path (coder/review/lintexport.py)
        workdir = ctx.lint_export([f.new_path for f in py_files if f.new_path], RUFF_CONFIG_FILES)
        configured = _has_ruff_config(workdir)
        args = [*ruff, "check", "--output-format=json", "--no-fix", "--exit-zero", "--no-cache"]
        args += ["--force-exclude"] if configured else ["--isolated", f"--select={RUFF_DEFAULT_SELECT}"]
        args += [f.new_path for f in py_files if f.new_path and path_kind(workdir, f.new_path) == "file"]
        proc = host_run(args, purpose="the reviewer's linter", workdir=workdir, timeout=120, text=True)
        results = json.loads(proc.stdout or "[]")
    except (TimeoutExpired, json.JSONDecodeError, OSError, VcsError) as exc:
        return StageResult("lint", "error", time.monotonic() - start, f"ruff failed: {exc}")
    added = {f.new_path: f.added_numbers for f in py_files}
    findings = []
    for item in results:
        try:
            rel = str(Path(item["filename"]).resolve().relative_to(workdir.resolve()))
        except ValueError:
            continue
        line = item.get("location", {}).get("row")
        code = item.get("code") or "syntax"
        if line not in added.get(rel, set()):
            continue
        severity = "error" if code == "syntax" or code.startswith(RUFF_ERRORS) else "warning"
        findings.append(Finding(rel, line, severity, f"{code} {item.get('message', '')}".strip(), "ruff", "lint"))
    note = "ruff with the project's config" if configured else f"ruff --select {RUFF_DEFAULT_SELECT}"
    return StageResult("lint", status_from(findings), time.monotonic() - start, note, findings)


__all__ = ["stage_apply", "stage_parse", "stage_lint"]
