"""The edit operations behind the tools: create, str_replace (single, multi, replace_all), insert, undo.

`Editor` binds the pure pieces (path resolution, matching, the syntax guard, atomic writes) to one workspace
and one `EditState`. Paths are located beneath a handle on the workspace and all I/O follows no symlink
(coder/edit/paths.py), so what the sandbox plants cannot redirect an edit outside.
Every modifying operation follows the same sequence under a per-file lock: read,
check staleness, compute the new text in memory, guard syntax, write atomically, record undo. Any failure
before the rename leaves the file exactly as it was."""

from __future__ import annotations

import difflib
import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from coder.edit import fileio, paths, syntax
from coder.edit.errors import EditError, MatchError, PathError, StaleFileError
from coder.edit.matcher import Replacement, find_replacement, line_of
from coder.edit.report import describe_closest
from coder.edit.state import EditState, UndoEntry
from coder.fs.beneath import EscapeError, WorkspaceFS

SNIPPET_CONTEXT = 4


@dataclass
class EditOutcome:
    """What one operation did; `message` is the text for the model."""

    path: Path
    display: str
    message: str
    before: str | None = None
    after: str | None = None
    diff: str = ""
    strategies: list[str] = field(default_factory=list)
    changed: bool = True


@dataclass(frozen=True)
class Change:
    """One replacement of a multi-edit: `old_str` (exactly one place, unless `replace_all`) becomes `new_str`."""

    old_str: str
    new_str: str
    replace_all: bool = False


def unified_diff(before: str | None, after: str | None, display: str) -> str:
    a = (before or "").splitlines(keepends=True)
    b = (after or "").splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, "/dev/null" if before is None else f"a/{display}",
                                 "/dev/null" if after is None else f"b/{display}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


SNIPPET_MAX_SPAN = 24
SNIPPET_LINE_CHARS = 400


def snippet(text: str, first: int, last: int, context: int = SNIPPET_CONTEXT) -> str:
    """Lines first..last (1-based) of `text` with `context` lines around, numbered like `view`. A long
    span (edits far apart) shows its two ends; long lines are cut, so a result never floods the context."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()

    def show(lo: int, hi: int) -> list[str]:
        out = []
        for n in range(max(1, lo), min(len(lines), hi) + 1):
            line = lines[n - 1]
            if len(line) > SNIPPET_LINE_CHARS:
                line = line[:SNIPPET_LINE_CHARS] + f" … [{len(line) - SNIPPET_LINE_CHARS} more chars]"
            out.append(f"{n:6}\t{line}")
        return out

    if last - first <= SNIPPET_MAX_SPAN:
        return "\n".join(show(first - context, last + context))
    half = SNIPPET_MAX_SPAN // 2
    return "\n".join(show(first - context, first + half) + ["   ...\t(lines not shown)"]
                     + show(last - half, last + context))


def changed_lines(before: str, after: str) -> tuple[int, int]:
    """1-based first and last line of `after` that differ from `before`."""
    a, b = before.split("\n"), after.split("\n")
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    return start + 1, max(start + 1, end_b)


F = TypeVar("F", bound=Callable[..., Any])


def _beneath(method: F) -> F:
    """A symlink planted between locating a path and using it fails the strict I/O with an EscapeError: turn it
    into a PathError the model reads."""

    @functools.wraps(method)
    def wrapper(self: Editor, path: str, *args: Any, **kwargs: Any) -> Any:
        with paths.beneath_errors(str(path)):
            return method(self, path, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class Editor:
    def __init__(self, workspace: Path, cwd: Path | None = None, state: EditState | None = None, *,
                 syntax_guard: bool = True, max_bytes: int = fileio.MAX_EDIT_BYTES) -> None:
        self.workspace = workspace.resolve()
        self.cwd = cwd or self.workspace
        self.state = state or EditState()
        self.syntax_guard = syntax_guard
        self.max_bytes = max_bytes
        self._fs: WorkspaceFS | None = None

    # -- helpers ---------------------------------------------------------------------------------------
    @property
    def fs(self) -> WorkspaceFS:
        """The handle on the workspace every file operation goes through (coder.fs.beneath)."""
        if self._fs is None:
            self._fs = WorkspaceFS(self.workspace)
        return self._fs

    def locate(self, path: str, for_write: bool = True) -> paths.Loc:
        return paths.locate(self.fs, path, self.cwd, for_write=for_write)

    def resolve(self, path: str, for_write: bool = True) -> Path:
        return self.locate(path, for_write).path

    def display(self, path: Path) -> str:
        return paths.relative(path, self.workspace)

    def _guard(self, path: Path, before: str | None, after: str) -> None:
        if self.syntax_guard:
            syntax.check(path, before, after, self.display(path))

    @_beneath
    def _modify(self, path_arg: str, compute: Callable[[fileio.FileText], tuple[str, list[Replacement]]],
                label: str, tolerate_stale: Callable[[list[Replacement]], bool]) -> EditOutcome:
        loc = self.locate(path_arg)
        path = loc.path
        if self.fs.kind(loc.rel) is None:
            raise PathError(_missing_message(path_arg, loc))
        with self.state.file_lock(path), fileio.file_lock(loc):
            ft, st = fileio.read_text(loc, self.max_bytes)
            fileio.check_writable(loc, st)
            stale = self.state.changed_since_view(path, ft.raw, ft.text)
            try:
                new_text, reps = compute(ft)
            except EditError as exc:
                if stale:  # the likely reason it failed: say so first
                    raise StaleFileError(f"{stale}\n{exc}") from None
                raise
            if stale and not tolerate_stale(reps):
                raise StaleFileError(stale)
            display = self.display(path)
            if new_text == ft.text:
                raise MatchError(f"the edit leaves {display} unchanged (the file already reads like new_str "
                                 "there); nothing was written", kind="no-change")
            self._guard(path, ft.text, new_text)
            data = ft.with_text(new_text)
            new_st = fileio.atomic_write(loc, data)
            self.state.push_undo(path, UndoEntry(ft.raw, hashlib.sha256(data).hexdigest(), label))
            self.state.record_view(path, data, new_text, new_st)
        first, last = changed_lines(ft.text, new_text)
        notes: list[str] = []
        for r in reps:
            notes.extend(r.notes)
        if stale:
            notes.append("note: the file had changed on disk since you viewed it; old_str still matched exactly")
        message = f"Edited {display}." + "".join(f"\n{n}" for n in notes)
        message += f"\nSnippet of the result (cat -n):\n{snippet(new_text, first, last)}"
        return EditOutcome(path, display, message, ft.text, new_text, unified_diff(ft.text, new_text, display),
                           [r.strategy for r in reps])

    # -- operations ------------------------------------------------------------------------------------
    def str_replace(self, path: str, old: str, new: str, replace_all: bool = False) -> EditOutcome:
        return self.multi_edit(path, [Change(old, new, replace_all)])

    def multi_edit(self, path: str, edits: list[Change]) -> EditOutcome:
        if not edits:
            raise EditError("edits is empty: give at least one {old_str, new_str}")

        def compute(ft: fileio.FileText) -> tuple[str, list[Replacement]]:
            text, reps = ft.text, []
            for n, edit in enumerate(edits, 1):
                old = _lf(edit.old_str)
                new = _lf(edit.new_str)
                try:
                    if edit.replace_all:
                        text, rep = _replace_all(text, old, new)
                    else:
                        rep = find_replacement(text, old, new)
                        text = rep.apply(text)
                except MatchError as exc:
                    if len(edits) == 1:
                        raise
                    raise MatchError(f"edit #{n} of {len(edits)} failed, so none was applied: {exc}",
                                     kind=exc.kind, lines=exc.lines) from None
                reps.append(rep)
            return text, reps

        return self._modify(path, compute, "str_replace", lambda reps: all(r.strategy == "exact" for r in reps))

    def insert(self, path: str, insert_line: int, text: str) -> EditOutcome:
        def compute(ft: fileio.FileText) -> tuple[str, list[Replacement]]:
            content = ft.text
            count = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
            if not isinstance(insert_line, int) or insert_line < 0 or insert_line > count:
                raise EditError(f"insert_line {insert_line!r} is out of range: the file has {count} lines, so "
                                f"it must be between 0 (before the first line) and {count} (after the last)")
            new = _lf(text)
            if insert_line == 0:
                offset = 0
            else:
                offset = -1
                for _ in range(insert_line):
                    offset = content.find("\n", offset + 1)
                offset = len(content) if offset == -1 else offset + 1
            if offset == len(content) and content and not content.endswith("\n"):
                piece = "\n" + new.removesuffix("\n")
            else:
                piece = new if new.endswith("\n") else new + "\n"
            return content[:offset] + piece + content[offset:], []

        return self._modify(path, compute, "insert", lambda reps: False)

    @_beneath
    def create(self, path_arg: str, file_text: str, overwrite: bool = False) -> EditOutcome:
        loc = self.locate(path_arg)
        path = loc.path
        display = self.display(path)
        kind = self.fs.kind(loc.rel) if loc.rel else "dir"
        if kind == "dir":
            raise PathError(f"{display} is a directory; give a file path")
        with self.state.file_lock(path), fileio.file_lock(loc):
            existing: fileio.FileText | None = None
            if self.fs.kind(loc.rel) is not None:
                if not overwrite:
                    raise EditError(f"{display} already exists; it was not changed. Use str_replace to edit it, "
                                    "or create with overwrite: true to replace the whole file")
                existing, st = fileio.read_text(loc, self.max_bytes)
                fileio.check_writable(loc, st)
                stale = self.state.changed_since_view(path, existing.raw, existing.text)
                if stale:
                    raise StaleFileError(stale)
            text = _lf(file_text)
            self._guard(path, existing.text if existing else None, text)
            data = fileio.encode_new(text if existing else file_text, existing)
            new_st = fileio.atomic_write(loc, data, create_parents=True)
            self.state.push_undo(path, UndoEntry(existing.raw if existing else None,
                                                 hashlib.sha256(data).hexdigest(), "create"))
            self.state.record_view(path, data, text, new_st)
        note = syntax.snippet_problems(path, text) if existing is None else ""
        verb = "Overwrote" if existing else "Created"
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        message = f"{verb} {display} ({lines} lines)." + (f"\n{note}" if note else "")
        return EditOutcome(path, display, message, existing.text if existing else None, text,
                           unified_diff(existing.text if existing else None, text, display), ["create"])

    @_beneath
    def undo(self, path_arg: str) -> EditOutcome:
        loc = self.locate(path_arg)
        path = loc.path
        display = self.display(path)
        with self.state.file_lock(path), fileio.file_lock(loc):
            entry = self.state.peek_undo(path)
            if entry is None:
                raise EditError(f"no edit of {display} to undo in this session (undo covers edits made with this "
                                "tool and apply_patch; use /undo or git for other changes)")
            current = fileio.read_raw(loc)[0] if self.fs.kind(loc.rel) == "file" else None
            current_sha = hashlib.sha256(current).hexdigest() if current is not None else None
            if current_sha != entry.after_sha256:
                raise StaleFileError(f"{display} changed since your last edit of it (by the shell or another "
                                     "process); undo would discard that change, so nothing was done. Fix it "
                                     "with str_replace instead.")
            before_text = fileio.decode(current, path).text if current is not None else None
            if entry.before is None:
                with paths.beneath_errors(loc.rel):
                    self.fs.unlink(loc.rel)
                self.state.forget_view(path)
                after_text = None
            else:
                new_st = fileio.atomic_write(loc, entry.before)
                after_text = fileio.decode(entry.before, path).text
                self.state.record_view(path, entry.before, after_text, new_st)
            self.state.pop_undo(path)
        left = self.state.undo_depth(path)
        what = "deleted it (it did not exist before)" if entry.before is None else "restored the previous version"
        message = f"Undid the last {entry.label} of {display}: {what}. {left} more undo level(s) for this file."
        return EditOutcome(path, display, message, before_text, after_text,
                           unified_diff(before_text, after_text, display), ["undo"])


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n")


def _replace_all(text: str, old: str, new: str) -> tuple[str, Replacement]:
    if old == new:
        raise MatchError("old_str and new_str are identical, so the edit would change nothing", kind="identical")
    if not old:
        raise MatchError("old_str is empty", kind="empty")
    count = text.count(old)
    if count == 0:
        raise MatchError("replace_all changes exact occurrences only, and old_str occurs nowhere exactly.\n" +
                         describe_closest(text.split("\n"), old.split("\n")), kind="no-match")
    first = line_of(text, text.find(old))
    rep = Replacement(0, len(text), text.replace(old, new), "exact", [f"replaced all {count} occurrence(s)"],
                      first, first)
    return rep.text, rep


def _missing_message(arg: str, loc: paths.Loc) -> str:
    """Why `arg` is missing, with similar names in its folder (listed beneath the workspace)."""
    parent, _, name = loc.rel.rpartition("/")
    hint = ""
    kind = loc.fs.kind(parent) if parent else "dir"
    if kind == "dir":
        try:
            names = [n for n, _ in loc.fs.listdir(parent)][:2000]
        except (OSError, EscapeError):
            names = []
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        if close:
            hint = " Similar names there: " + ", ".join(close) + "."
    elif kind is None:
        hint = f" (its folder {parent.rsplit('/', 1)[-1]}/ does not exist either)"
    return f"{arg} does not exist; nothing was changed.{hint} Use `create` to make a new file."
