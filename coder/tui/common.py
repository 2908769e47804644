"""What the Textual app and the plain REPL share: how a tool call reads in one line, the input history kept
across sessions, and the git status shown in the status bar (the session options come from coder/engine/options.py).

Nothing here imports Textual or prompt-toolkit, so both frontends (and their tests) can use it cheaply.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coder.host import TimeoutExpired
from coder.tools.base import one_line  # noqa: F401 - re-exported: the frontends' one-line text
from coder.tools.registry import describe

HISTORY_LIMIT = 2000


def tool_title(tool: str, args: dict[str, Any]) -> str:
    """`bash: pytest -q`, `edit src/app.py (str_replace)`: the call as a person would name it (its tool says)."""
    return describe(tool, args).title


def failure(is_error: bool, data: dict[str, Any] | None = None, output: str = "") -> str | None:
    """Why a call failed, in a word or two (None when it did not): a shell command that exits non-zero or is
    interrupted is a successful *tool call* (is_error False) but a failed command, and must not read as ✓."""
    data = data or {}
    code = data.get("exit_code")
    if data.get("interrupted") or "was interrupted by the user" in output[-2000:]:
        return "interrupted"
    if data.get("timed_out"):
        return "timed out"
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        return f"exit {code}"
    return "failed" if is_error else None


def result_line(output: str, is_error: bool, duration: float = 0.0, data: dict[str, Any] | None = None) -> str:
    """`✓ first line … 3 more lines 0.4s`, or `✗ exit 127 · first line` for a failed call."""
    lines = [line for line in output.splitlines() if line.strip()]
    first = one_line(lines[0], 80) if lines else "(no output)"
    rest = len(lines) - 1
    more = f" … {rest} more line{'s' if rest > 1 else ''}" if rest > 0 else ""
    took = f" {duration:.1f}s" if duration >= 0.1 else ""
    why = failure(is_error, data, output)
    if data and data.get("background"):  # the user sent it on with Ctrl+B (coder/tools/bash_jobs.py)
        return f"⇥ background job {data['background']} · {first}{more}{took}"
    if why is None:
        return f"✓ {first}{more}{took}"
    return f"✗ {why + ' · ' if why != 'failed' else ''}{first}{more}{took}"


def input_summary(tool: str, args: dict[str, Any]) -> str:
    """What a permission prompt shows: the command itself, or the edit's path and a preview (its tool says)."""
    return describe(tool, args).detail


# ---- input history across sessions ---------------------------------------------------------------------------
class InputHistory:
    """Prompts typed in any session, newest last, in `state_dir()/input_history.jsonl` (one JSON string a line,
    so multi-line prompts survive). Bounded: the file is rewritten to the newest HISTORY_LIMIT when it grows."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            from coder.base.paths import state_dir

            path = state_dir() / "input_history.jsonl"
        self.path = path
        self.entries: list[str] = []
        self._lock = threading.Lock()
        try:
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if isinstance(value, str) and value.strip():
                    self.entries.append(value)
        except (OSError, UnicodeDecodeError):
            pass
        self.entries = self.entries[-HISTORY_LIMIT:]

    def add(self, text: str) -> None:
        text = text.rstrip()
        if not text.strip() or (self.entries and self.entries[-1] == text):
            return
        with self._lock:
            self.entries.append(text)
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                if len(self.entries) > HISTORY_LIMIT * 1.5:
                    self.entries = self.entries[-HISTORY_LIMIT:]
                    tmp = self.path.with_suffix(".tmp")
                    tmp.write_text("".join(json.dumps(e) + "\n" for e in self.entries), encoding="utf-8")
                    tmp.replace(self.path)
                else:
                    with self.path.open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(text) + "\n")
            except OSError:
                pass  # history is a convenience; a read-only state dir must not break the prompt

    def search(self, needle: str, limit: int = 50) -> list[str]:
        needle = needle.lower()
        seen: set[str] = set()
        out = []
        for entry in reversed(self.entries):
            if needle in entry.lower() and entry not in seen:
                seen.add(entry)
                out.append(entry)
                if len(out) >= limit:
                    break
        return out


# ---- git state for the status bar -----------------------------------------------------------------------------
@dataclass
class GitState:
    branch: str | None = None
    dirty: bool = False

    def label(self) -> str:
        if self.branch is None:
            return "no git"
        return f"⎇ {self.branch}{' *' if self.dirty else ''}"


def git_state(workspace: Path) -> GitState:
    try:
        from coder.host import git as hostgit

        branch = hostgit.run(workspace, ["rev-parse", "--abbrev-ref", "HEAD"], timeout=5)
        if branch.returncode != 0:
            return GitState()
        status = hostgit.run(workspace, ["status", "--porcelain", "--untracked-files=normal"], timeout=10)
    except (OSError, TimeoutExpired):
        return GitState()
    return GitState(branch.stdout.strip() or "HEAD", bool(status.stdout.strip()))


# ---- @path completion -----------------------------------------------------------------------------------------
def project_files(workspace: Path, limit: int = 50_000) -> list[str]:
    """Files `@path` completes: git's list (tracked and untracked, ignored left out), or a bounded walk."""
    from coder.commands.agents_md import repo_files

    return repo_files(workspace, limit)


def match_paths(files: list[str], prefix: str, limit: int = 12) -> list[str]:
    """Paths starting with `prefix` first, then paths containing it (case-insensitive)."""
    low = prefix.lower()
    starts = [f for f in files if f.lower().startswith(low)]
    contains = [f for f in files if low in f.lower() and not f.lower().startswith(low)] if low else []
    return (starts + contains)[:limit]


def word_at_end(text: str) -> str:
    """The token being typed at the end of `text` (after the last space or newline)."""
    cut = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"))
    return text[cut + 1:]


def env_flag(name: str) -> bool:
    return os.environ.get(name, "") not in ("", "0", "false", "no")
