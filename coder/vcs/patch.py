"""A unified diff (git flavour) as data: files, their status, and the lines added and removed with line numbers.

The reviewer's checks and the commit-message fallback all read diffs; one small parser keeps them agreeing on
what "a changed line" is. It reads what `git diff` prints (renames off), and tolerates plain `diff -u` output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

FileStatus = Literal["added", "deleted", "modified"]

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Line:
    number: int  # in the new file for added lines, in the old file for removed ones
    text: str


@dataclass
class Hunk:
    old_start: int
    new_start: int
    added: list[Line] = field(default_factory=list)
    removed: list[Line] = field(default_factory=list)


@dataclass
class FilePatch:
    old_path: str | None  # None for an added file
    new_path: str | None  # None for a deleted file
    binary: bool = False
    hunks: list[Hunk] = field(default_factory=list)
    new_mode: str | None = None
    #: read off the fields above once the file's part of the diff is parsed (`settle`): the reviewer's checks read
    #: them again and again, as data
    path: str = ""
    status: FileStatus = "modified"
    added: list[Line] = field(default_factory=list)
    removed: list[Line] = field(default_factory=list)
    added_numbers: set[int] = field(default_factory=set)

    def settle(self) -> FilePatch:
        self.path = self.new_path or self.old_path or ""
        self.status = "added" if self.old_path is None else "deleted" if self.new_path is None else "modified"
        self.added = [line for h in self.hunks for line in h.added]
        self.removed = [line for h in self.hunks for line in h.removed]
        self.added_numbers = {line.number for line in self.added}
        return self


def _strip_prefix(path: str) -> str | None:
    path = path.strip()
    if path.startswith('"') and path.endswith('"'):
        path = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape").encode("latin-1").decode(
            "utf-8", "replace"
        )
    if path == "/dev/null":
        return None
    if path[:2] in ("a/", "b/"):
        return path[2:]
    return path


def parse_diff(text: str) -> list[FilePatch]:
    """Parse `text` into one FilePatch per file, in order."""
    files: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    old_no = new_no = old_left = new_left = 0
    for raw in text.splitlines():
        if raw.startswith("diff --git "):
            m = re.match(r'^diff --git ("?a/.*?"?) ("?b/.*"?)$', raw)
            old = _strip_prefix(m.group(1)) if m else None
            new = _strip_prefix(m.group(2)) if m else None
            current = FilePatch(old, new)
            files.append(current)
            hunk = None
            continue
        if hunk is not None and current is not None and (old_left > 0 or new_left > 0 or raw.startswith("\\")):
            if raw.startswith("+"):
                hunk.added.append(Line(new_no, raw[1:]))
                new_no += 1
                new_left -= 1
            elif raw.startswith("-"):
                hunk.removed.append(Line(old_no, raw[1:]))
                old_no += 1
                old_left -= 1
            elif raw.startswith(" ") or raw == "":
                old_no += 1
                new_no += 1
                old_left -= 1
                new_left -= 1
            continue
        if raw.startswith("--- "):
            if current is None or current.hunks:
                current = FilePatch(None, None)
                files.append(current)
            current.old_path = _strip_prefix(raw[4:].split("\t")[0])
            hunk = None
            continue
        if raw.startswith("+++ ") and current is not None:
            current.new_path = _strip_prefix(raw[4:].split("\t")[0])
            continue
        if current is None:
            continue
        if raw.startswith("new file mode"):
            current.old_path = None
            current.new_mode = raw.split()[-1]
        elif raw.startswith("deleted file mode"):
            current.new_path = None
        elif raw.startswith("new mode"):
            current.new_mode = raw.split()[-1]
        elif raw.startswith("Binary files ") or raw.startswith("GIT binary patch"):
            current.binary = True
            if raw.startswith("Binary files "):
                m = re.match(r"^Binary files (.*) and (.*) differ$", raw)
                if m:
                    current.old_path = _strip_prefix(m.group(1))
                    current.new_path = _strip_prefix(m.group(2))
        else:
            m = _HUNK_RE.match(raw)
            if m:
                hunk = Hunk(int(m.group(1)), int(m.group(3)))
                old_no, new_no = int(m.group(1)), int(m.group(3))
                old_left = int(m.group(2)) if m.group(2) is not None else 1
                new_left = int(m.group(4)) if m.group(4) is not None else 1
                current.hunks.append(hunk)
    return [f.settle() for f in files]


def diff_stat(files: list[FilePatch]) -> list[tuple[str, int, int]]:
    return [(f.path, len(f.added), len(f.removed)) for f in files]
