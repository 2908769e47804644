"""Mechanical checks, part two: what must never be committed. Conflict markers, secrets (known token formats and
high-entropy strings), debug leftovers, large binaries. Only added lines are read: old debt is not this patch's."""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from pathlib import PurePosixPath

from coder.review.context import ReviewContext, is_test_path
from coder.review.types import Finding, Severity, StageResult, status_from

_MARKER_RE = re.compile(r"^(<{7}|>{7})(\s|$)")
_LOCKFILES = {"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "Cargo.lock", "go.sum",
              "uv.lock", "Pipfile.lock", "composer.lock", "Gemfile.lock"}

#: (name, pattern) for token formats that are secrets whatever the context
SECRET_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("AWS access key id", re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("private key", re.compile(r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY( BLOCK)?-----")),
    ("GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b")),
    ("Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{32,}")),
    ("Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b")),
    ("Stripe key", re.compile(r"\b[sr]k_live_[0-9A-Za-z]{20,}\b")),
    ("JSON web token", re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),
    ("credentials in a URL", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@'\"]+:[^/\s:@'\"$]{6,}@[\w.-]+")),
]
_ASSIGNED_SECRET_RE = re.compile(
    r"(?i)\b[\w.-]*(password|passwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|token|private[_-]?key)"
    r"[\w-]*['\"]?\s*[:=]\s*['\"]([^'\"\s]{8,})['\"]"
)
_PLACEHOLDER_RE = re.compile(r"(?i)(example|dummy|fake|test|sample|changeme|placeholder|your[_-]|xxxx|\*\*\*|<|\$\{|"
                             r"\{\{|%\(|env|none|null|redacted|secret|foo|bar\b|baz|bogus|invalid|wrong|not[_-]?a)")
_TOKEN_RE = re.compile(r"['\"]([A-Za-z0-9+/=_\-]{32,})['\"]")

#: debug leftovers by extension: (pattern, severity, what)
DEBUG_PATTERNS: dict[str, list[tuple[re.Pattern[str], Severity, str]]] = {
    ".py": [
        (re.compile(r"^\s*(breakpoint\(\)|(i?pdb|pudb)\.set_trace\(\)|import (i?pdb|pudb)\b|from (i?pdb|pudb) import)"),
         "error", "debugger call left in"),
    ],
    ".js": [(re.compile(r"^\s*debugger\s*;?\s*$"), "error", "debugger statement left in")],
    ".rs": [(re.compile(r"\bdbg!\("), "error", "dbg! macro left in")],
    ".rb": [(re.compile(r"^\s*(binding\.pry|byebug|debugger)\b"), "error", "debugger call left in")],
}
for _ext in (".ts", ".tsx", ".jsx", ".mjs", ".cjs"):
    DEBUG_PATTERNS[_ext] = DEBUG_PATTERNS[".js"]
_PRINT_RE = {".py": re.compile(r"^\s*print\("), ".js": re.compile(r"^\s*console\.(log|debug)\(")}
for _ext in (".ts", ".tsx", ".jsx", ".mjs", ".cjs"):
    _PRINT_RE[_ext] = _PRINT_RE[".js"]


_ENTRY_POINT_RE = re.compile(r"__main__|argparse|\bclick\b|typer|\bsys\.stdout\b|process\.argv")


#: files whose job is to print: command-line modules, scripts, benchmarks, examples
_SCRIPT_PATH_RE = re.compile(r"(^|/)(cli|main|__main__|console|commands?)\.py$|(^|/)(scripts?|bin|tools|benchmarks?|"
                             r"examples?|docs)/")


def shannon_entropy(text: str) -> float:
    if not text:
        return 0.0
    counts = Counter(text)
    return -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())


def _is_high_entropy(token: str) -> bool:
    if re.fullmatch(r"[0-9a-fA-F]+", token):
        return len(token) >= 40 and shannon_entropy(token) > 3.7 and not _looks_like_hash_context(token)
    has_classes = sum(bool(re.search(p, token)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]")) == 3
    return has_classes and shannon_entropy(token) > 4.3


def _looks_like_hash_context(token: str) -> bool:
    return len(token) in (40, 64, 128)  # sha1 / sha256 / sha512 digests: usually checksums, not keys


def check_secrets(path: str, line_no: int, text: str) -> list[Finding]:
    findings = []
    for name, pattern in SECRET_PATTERNS:
        m = pattern.search(text)
        if m and not _PLACEHOLDER_RE.search(m.group(0)):
            findings.append(Finding(path, line_no, "error", f"{name} in the added code: remove it and rotate it",
                                    "secret", "hygiene"))
            return findings
    m = _ASSIGNED_SECRET_RE.search(text)
    if m and not _PLACEHOLDER_RE.search(m.group(2)) and shannon_entropy(m.group(2)) > 3.0:
        # test fixtures are full of made-up credentials: there it is worth a look, not a blocker
        severity = "warning" if is_test_path(path) else "error"
        findings.append(Finding(path, line_no, severity, f"a literal {m.group(1).lower()} is assigned in the code: "
                                "read it from the environment or a secret store", "secret", "hygiene"))
        return findings
    for token in _TOKEN_RE.findall(text):
        if _is_high_entropy(token) and not _PLACEHOLDER_RE.search(token):
            findings.append(Finding(path, line_no, "warning", "high-entropy string literal: is it a key or token?",
                                    "secret", "hygiene"))
            break
    return findings


def stage_hygiene(ctx: ReviewContext) -> StageResult:
    start = time.monotonic()
    findings: list[Finding] = []
    max_binary = ctx.settings.max_binary_kb * 1024
    max_text = ctx.settings.max_text_kb * 1024
    for f in ctx.files:
        if f.new_path is None:
            continue
        path = f.new_path
        name = PurePosixPath(path).name
        suffix = PurePosixPath(path).suffix.lower()
        if f.binary:
            size = ctx.blob_size(path) or 0
            if size > max_binary:
                findings.append(Finding(path, None, "error", f"large binary file ({size // 1024} KiB > "
                                        f"{max_binary // 1024} KiB): keep it out of the repository (LFS, a release "
                                        "asset, or .gitignore)", "large-binary", "hygiene"))
            continue
        if f.status == "added":
            size = ctx.blob_size(path) or 0
            if size > max_text:
                findings.append(Finding(path, None, "warning", f"large file added ({size // 1024} KiB): generated "
                                        "or data file?", "large-file", "hygiene"))
        added = f.added
        has_open_marker = any(line.text.startswith("<<<<<<<") for line in added)
        for line in added:
            if _MARKER_RE.match(line.text) or (has_open_marker and line.text.rstrip() == "======="):
                findings.append(Finding(path, line.number, "error", "merge conflict marker left in the file",
                                        "conflict-marker", "hygiene"))
        if name not in _LOCKFILES:
            for line in added:
                if len(line.text) < 4000:
                    findings += check_secrets(path, line.number, line.text)
        findings += _debug_leftovers(ctx, f, suffix)
    return StageResult("hygiene", status_from(findings), time.monotonic() - start,
                       "conflict markers, secrets, debug leftovers, binaries", findings)


def _debug_leftovers(ctx: ReviewContext, f, suffix: str) -> list[Finding]:
    findings = []
    for pattern, severity, what in DEBUG_PATTERNS.get(suffix, []):
        for line in f.added:
            if pattern.search(line.text):
                findings.append(Finding(f.path, line.number, severity, what, "debug-leftover", "hygiene"))
    print_re = _PRINT_RE.get(suffix)
    if print_re is None or is_test_path(f.path):
        return findings
    prints = [line for line in f.added if print_re.search(line.text)]
    if not prints:
        return findings
    old = ctx.read_old(f.old_path) or ""
    new = ctx.read_new(f.new_path) or ""
    # a module that printed before, or is a command-line entry point, prints on purpose
    if re.search(print_re.pattern, old, re.M) or _ENTRY_POINT_RE.search(new) or _SCRIPT_PATH_RE.search(f.path):
        return findings
    for line in prints[:3]:
        findings.append(Finding(f.path, line.number, "warning", "print/console.log added to library code: a debug "
                                "leftover? (use logging)", "debug-leftover", "hygiene"))
    return findings
