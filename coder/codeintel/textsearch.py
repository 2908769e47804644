"""Text search over a repository: ripgrep when installed, a Python fallback that honours .gitignore.

Text search needs no index, so it answers at once even while a cold build runs, and covers every file
(unknown languages too). Results are capped: a search that would match 10,000 lines is stopped early and
says so, because the model can narrow a query but cannot read 10,000 lines.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path

from coder.base.errors import UsageError
from coder.codeintel.files import MAX_FILE_BYTES, is_vendored, list_files
from coder.fs.beneath import EscapeError, WorkspaceFS
from coder.host import Text, available, start

MAX_LINE_CHARS = 240
#: ripgrep is stopped after this long (a search of a big tree takes well under a second)
RG_TIMEOUT = 60.0


@dataclass
class TextMatch:
    path: str
    line: int
    text: str
    is_context: bool = False


@dataclass
class TextSearchResult:
    matches: list[TextMatch] = field(default_factory=list)
    match_count: int = 0  # matches (not context lines) returned
    truncated: bool = False
    engine: str = "python"
    notes: list[str] = field(default_factory=list)


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + "…"


def search(root: Path, pattern: str, *, fixed: bool = False, ignore_case: bool = False, glob: str | None = None,
           path: str | None = None, context: int = 0, max_matches: int = 100,
           use_ripgrep: bool | None = None) -> TextSearchResult:
    """Lines matching `pattern` (a regex unless `fixed`) under `root` (or its sub-path `path`)."""
    if not pattern:
        raise UsageError("empty search pattern")
    root = Path(root).resolve()
    context = max(0, min(int(context), 10))
    max_matches = max(1, int(max_matches))
    if use_ripgrep is None:
        use_ripgrep = available("rg")
    with WorkspaceFS(root) as fs:
        base = _base(fs, path) if path else ""
        if use_ripgrep:
            return _verified(fs, _rg(root, base, pattern, fixed, ignore_case, glob, context, max_matches))
        return _python(fs, base, pattern, fixed, ignore_case, glob, context, max_matches)


def _base(fs: WorkspaceFS, path: str) -> str:
    """The real workspace-relative folder or file `path` names (symlinks that stay inside followed)."""
    lexical = os.path.relpath(os.path.normpath(fs.root / path), fs.root)
    real = ""
    try:
        if lexical == ".." or lexical.startswith("../"):
            raise EscapeError(f"{path} is outside the repository")
        real = fs.resolve_real(lexical)
        kind = fs.kind(real)
    except (EscapeError, OSError):
        kind = None
    if kind is None:
        raise UsageError(f"no such path in the repository: {path}")
    if kind not in ("file", "dir"):
        raise UsageError(f"{path} is not a file or folder (a device, socket or pipe)")
    return real


def _rg(root: Path, base: str, pattern: str, fixed: bool, ignore_case: bool, glob: str | None, context: int,
        max_matches: int) -> TextSearchResult:
    cmd = ["rg", "--json", "--no-config", "--max-filesize", f"{MAX_FILE_BYTES * 10}", "--no-require-git"]
    if fixed:
        cmd.append("--fixed-strings")
    cmd.append("--ignore-case" if ignore_case else "--case-sensitive")
    if context:
        cmd += ["--context", str(context)]
    if glob:
        cmd += ["--glob", Text(glob)]
    cmd += ["--regexp", Text(pattern), "--", base or "."]
    result = TextSearchResult(engine="ripgrep")
    proc = start(cmd, purpose="text search", workdir=root)  # ripgrep's job is the workspace: it runs there
    assert proc.stdout is not None
    watchdog = threading.Timer(RG_TIMEOUT, proc.kill)  # a FIFO swapped in while ripgrep walks would block it
    watchdog.start()
    try:
        for raw in proc.stdout:
            event = json.loads(raw)
            kind = event.get("type")
            if kind not in ("match", "context"):
                continue
            data = event["data"]
            rel = _rg_text(data["path"]).removeprefix("./")
            if is_vendored(rel):
                continue
            if kind == "match":
                if result.match_count >= max_matches:
                    result.truncated = True
                    break
                result.match_count += 1
            result.matches.append(TextMatch(rel, data["line_number"], _clip(_rg_text(data["lines"])),
                                            kind == "context"))
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        _out, err = proc.communicate()
    if proc.returncode == -signal.SIGKILL and not result.truncated:
        result.truncated = True
        result.notes.append(f"text search stopped after {RG_TIMEOUT:.0f} s")
    if proc.returncode == 2 and not result.matches:
        message = err.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"bad search pattern: {message[-1] if message else pattern}")
    _trim_trailing_context(result)
    return result


def _rg_text(obj: dict) -> str:
    if "text" in obj:
        return obj["text"]

    return base64.b64decode(obj.get("bytes", "")).decode("utf-8", "replace")


def _verified(fs: WorkspaceFS, result: TextSearchResult) -> TextSearchResult:
    """Only lines that are in the workspace: each one ripgrep reports is checked against the file read beneath
    the workspace handle. ripgrep opens files by name, so a folder the sandbox swaps for a symlink while it
    walks could make it read (and report) a file outside; such a line is not in the file read here, and is
    dropped, as is every line of a file that is now a link, under one, or not a regular file."""
    files: dict[str, list[bytes] | None] = {}
    kept: list[TextMatch] = []
    for m in result.matches:
        if m.path not in files:
            data = fs.read_if_file(m.path, MAX_FILE_BYTES * 10)
            files[m.path] = data.split(b"\n") if data is not None else None
        lines = files[m.path]
        if lines is not None and 0 < m.line <= len(lines) and _clip(_decode(lines[m.line - 1])) == m.text:
            kept.append(m)
    dropped = sum(not m.is_context for m in result.matches) - sum(not m.is_context for m in kept)
    if dropped:
        result.notes.append(f"{dropped} matching lines left out: their files changed during the search")
    result.matches, result.match_count = kept, result.match_count - dropped
    return result


def _decode(line: bytes) -> str:
    return line.decode("utf-8", "replace")


def _trim_trailing_context(result: TextSearchResult) -> None:
    while result.truncated and result.matches and result.matches[-1].is_context:
        result.matches.pop()


def _python(fs: WorkspaceFS, base: str, pattern: str, fixed: bool, ignore_case: bool, glob: str | None,
            context: int, max_matches: int) -> TextSearchResult:
    flags = re.IGNORECASE if ignore_case else 0
    try:
        rx = re.compile(re.escape(pattern) if fixed else pattern, flags)
    except re.error as exc:
        raise UsageError(f"bad search pattern: {exc}") from exc
    listing = list_files(fs.root, all_files=True)
    result = TextSearchResult(engine="python", notes=list(listing.notes))
    for rel in listing.files:
        if base and not (rel == base or rel.startswith(base + "/")):
            continue
        if glob and not (Path(rel).match(glob) or Path(rel).name == glob):
            continue
        data = fs.read_if_file(rel, MAX_FILE_BYTES * 10 + 1)  # no link, no FIFO, nothing under a link
        if data is None or len(data) > MAX_FILE_BYTES * 10 or b"\0" in data[:8192]:
            continue
        lines = data.decode("utf-8", "replace").splitlines()
        shown: set[int] = set()
        for number, line in enumerate(lines, 1):
            if not rx.search(line):
                continue
            if result.match_count >= max_matches:
                result.truncated = True
                _trim_trailing_context(result)
                return result
            result.match_count += 1
            for n in range(max(1, number - context), min(len(lines), number + context) + 1):
                if n not in shown:
                    shown.add(n)
                    result.matches.append(TextMatch(rel, n, _clip(lines[n - 1]), n != number))
                elif n == number:
                    for m in result.matches:
                        if m.path == rel and m.line == n:
                            m.is_context = False
    return result
