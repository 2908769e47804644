"""Applying a parsed Codex patch: every file or none.

All paths are resolved and locked first, every new content is computed in memory (hunks matched with the
same tolerant matcher as str_replace, in order, each searched after the previous one), the syntax guard
runs on each final text, and only then are files written. A failure while writing rolls back the files
already written. Paths are located and written beneath the workspace (coder/edit/paths.py); a file
the patch deletes is the named path itself, never reached through a symlink. Usable without a session (the
reviewer and the batch evaluator apply patches with it)."""

from __future__ import annotations

import hashlib
import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from coder.edit import fileio, paths, syntax
from coder.edit.errors import EditError, MatchError, PatchError, StaleFileError
from coder.edit.matcher import find_replacement
from coder.edit.ops import changed_lines, snippet, unified_diff
from coder.edit.patch import Chunk, parse_patch
from coder.edit.paths import Loc
from coder.edit.state import EditState, UndoEntry
from coder.fs.beneath import EscapeError, WorkspaceFS


@dataclass
class FilePlan:
    loc: Loc
    path: Path
    display: str
    before: fileio.FileText | None  # as on disk before the patch (None: did not exist)
    after_text: str | None  # None: deleted
    exact: bool = True
    notes: list[str] = field(default_factory=list)
    moved_from: str | None = None
    #: the format (encoding, BOM, line endings) for a file that did not exist: the source of a move
    template: fileio.FileText | None = None

    def data(self) -> bytes | None:
        if self.after_text is None:
            return None
        fmt = self.before or self.template
        if fmt is None:
            return self.after_text.encode("utf-8")
        return fmt.with_text(self.after_text)


@dataclass
class PatchOutcome:
    plans: list[FilePlan]
    message: str
    diff: str
    files_changed: list[str]


def apply_chunks(text: str, chunks: list[Chunk], display: str) -> tuple[str, list[str], bool]:
    """Apply hunks in order to an LF text. Returns (new text, notes, all hunks matched exactly)."""
    final_newline = text.endswith("\n") or not text
    body = text.split("\n")
    if text.endswith("\n"):
        body.pop()
    if not text:
        body = []
    cursor, notes, exact = 0, [], True
    for n, chunk in enumerate(chunks, 1):
        where = f"{display}, hunk {n} (patch line {chunk.patch_line})"
        if chunk.header:
            found = _find_header(body, chunk.header, cursor)
            if found is None:
                raise PatchError(f"{where}: the @@ line {chunk.header!r} was not found in {display}"
                                 + (f" after line {cursor}" if cursor else ""))
            cursor = found
        if not chunk.old:
            body.extend(chunk.new)
            cursor = len(body)
            continue
        if chunk.old == chunk.new:
            continue
        if chunk.eof and len(body) >= len(chunk.old) and all(
                a.rstrip() == b.rstrip() for a, b in zip(body[len(body) - len(chunk.old):], chunk.old, strict=True)):
            body[len(body) - len(chunk.old):] = chunk.new
            cursor = len(body)
            continue
        remaining = "\n" + "\n".join(body[cursor:]) + "\n"
        old_s = "\n" + "\n".join(chunk.old) + "\n"
        new_s = "\n" + "\n".join(chunk.new) + "\n"
        try:
            rep = find_replacement(remaining, old_s, new_s, line_offset=cursor - 1)
        except MatchError as exc:
            hint = ("" if exc.kind != "multiple" else
                    " Add an '@@ <line>' header naming the enclosing def/class, or more context lines.")
            raise PatchError(f"{where}: {exc}{hint}") from None
        if rep.strategy != "exact":
            exact = False
            notes.extend(f"{display} hunk {n}: {note}" for note in rep.notes)
        result = rep.apply(remaining)
        end = rep.start + len(rep.text)
        consumed = result[1:end].count("\n") + (1 if end > 1 and result[end - 1] != "\n" else 0)
        body = body[:cursor] + result[1:-1].split("\n")
        cursor += consumed
    out = "\n".join(body)
    return (out + "\n" if final_newline and body else out), notes, exact


def _find_header(body: list[str], header: str, start: int) -> int | None:
    for compare in (lambda a, b: a == b, lambda a, b: a.strip() == b.strip(),
                    lambda a, b: b.strip() in a and len(b.strip()) >= 4):
        for i in range(start, len(body)):
            if compare(body[i], header):
                return i
    return None


def apply_patch(text: str, workspace: Path, cwd: Path | None = None, state: EditState | None = None, *,
                syntax_guard: bool = True, dry_run: bool = False,
                max_bytes: int = fileio.MAX_EDIT_BYTES) -> PatchOutcome:
    """Parse and apply `text`. Raises an EditError (nothing changed) or returns what was done."""
    state = state or EditState()
    patch = parse_patch(text)
    with WorkspaceFS(workspace) as fs, paths.beneath_errors("a file of the patch"):
        targets: dict[Path, Loc] = {}
        for op in patch.ops:
            for name, removes in ((op.path, op.kind == "delete" or bool(op.move_to)), (op.move_to, False)):
                if name:
                    loc = _locate(fs, name, cwd, removes, op.patch_line)
                    targets[loc.path] = loc
        with ExitStack() as stack:
            for path in sorted(targets):
                stack.enter_context(state.file_lock(path))
                stack.enter_context(fileio.file_lock(targets[path]))
            plans = _plan(patch.ops, fs, cwd, state, max_bytes)
            for plan in plans.values():
                if plan.before is not None:
                    stale = state.changed_since_view(plan.path, plan.before.raw, plan.before.text)
                    if stale and not plan.exact:
                        raise StaleFileError(f"{stale}\n(The patch was not applied; no file was changed.)")
                if syntax_guard and plan.after_text is not None:
                    try:
                        syntax.check(plan.path, plan.before.text if plan.before else None, plan.after_text,
                                     plan.display)
                    except EditError as exc:
                        raise type(exc)(f"{exc}\n(The patch was not applied; no file was changed.)") from None
            changed = [p for p in plans.values() if (p.before.text if p.before else None) != p.after_text]
            if not dry_run:
                _commit(changed, state)
    diff = "".join(unified_diff(p.before.text if p.before else None, p.after_text, p.display) for p in changed)
    lines = ["Patch applied." if not dry_run else "Patch checks out (dry run, nothing written)."]
    for p in changed:
        if p.after_text is None:
            lines.append(f"  deleted {p.display}")
        elif p.before is None:
            lines.append(f"  added {p.display}" + (f" (moved from {p.moved_from})" if p.moved_from else ""))
        else:
            lines.append(f"  updated {p.display}")
    notes = patch.notes + [n for p in changed for n in p.notes]
    if notes:
        lines.append("Notes:")
        lines.extend(f"  {n}" for n in notes)
    for p in changed[:4]:
        if p.before is not None and p.after_text is not None:
            first, last = changed_lines(p.before.text, p.after_text)
            lines.append(f"Snippet of {p.display}:\n{snippet(p.after_text, first, min(last, first + 20))}")
    return PatchOutcome(changed, "\n".join(lines), diff, [p.display for p in changed])


def _locate(fs: WorkspaceFS, name: str, cwd: Path | None, removes: bool, line: int) -> Loc:
    """Where an op's file is. A file the patch deletes (Delete, the source of a Move) is the named path itself:
    the delete must remove that name, so no symlink may stand in it (a symlinked parent could point anywhere,
    and a link itself is not a text file to delete with a patch). Files written follow links that stay inside
    (coder/edit/paths.py)."""
    if not removes:
        return paths.locate(fs, name, cwd, for_write=True)
    given = paths.lexical_rel(name, fs.root, cwd)
    paths.check_write_target(name, given, given)
    try:
        kind = fs.kind(given) if given else "dir"
    except EscapeError as exc:
        raise PatchError(f"patch line {line}: cannot delete or move {name}: {exc} (nothing was changed)") from None
    if kind == "link":
        raise PatchError(f"patch line {line}: {name} is a symbolic link; apply_patch deletes and moves text files "
                         "only. Remove or move the link with the shell (nothing was changed)")
    if kind == "other":
        raise PatchError(f"patch line {line}: {name} is a device, socket or pipe; refused (nothing was changed)")
    return Loc(fs, given, fs.root / given if given else fs.root)


def _plan(ops: list, fs: WorkspaceFS, cwd: Path | None, state: EditState, max_bytes: int) -> dict[Path, FilePlan]:
    plans: dict[Path, FilePlan] = {}

    def current(loc: Loc) -> FilePlan:
        if loc.path not in plans:
            before = None
            if fs.kind(loc.rel) is not None:
                before, st = fileio.read_text(loc, max_bytes)
                fileio.check_writable(loc, st)
            plans[loc.path] = FilePlan(loc, loc.path, paths.relative(loc.path, fs.root), before,
                                       before.text if before else None)
        return plans[loc.path]

    for op in ops:
        loc = _locate(fs, op.path, cwd, op.kind == "delete" or bool(op.move_to), op.patch_line)
        if not loc.rel or fs.kind(loc.rel) == "dir":
            raise PatchError(f"{op.path} (patch line {op.patch_line}) is a directory; nothing was changed")
        path = loc.path
        plan = current(loc)
        if op.kind == "add":
            new_text = "\n".join(op.add_lines) + ("\n" if op.add_lines else "")
            if plan.after_text is not None and plan.after_text != new_text:
                raise PatchError(f"patch line {op.patch_line}: cannot add {op.path}: it already exists. Use "
                                 "'*** Update File:' to change it (nothing was changed)")
            plan.after_text = new_text
        elif op.kind == "delete":
            if plan.after_text is None:
                raise PatchError(f"patch line {op.patch_line}: cannot delete {op.path}: it does not exist "
                                 "(nothing was changed)")
            plan.after_text = None
        else:
            if plan.after_text is None:
                raise PatchError(f"patch line {op.patch_line}: cannot update {op.path}: it does not exist "
                                 "(use '*** Add File:' for new files; nothing was changed)")
            new_text, notes, exact = apply_chunks(plan.after_text, op.chunks, plan.display)
            plan.exact = plan.exact and exact
            plan.notes.extend(notes)
            if op.move_to:
                dest_loc = _locate(fs, op.move_to, cwd, False, op.patch_line)
                if not dest_loc.rel or fs.kind(dest_loc.rel) == "dir":
                    raise PatchError(f"{op.move_to} (patch line {op.patch_line}) is a directory; nothing was "
                                     "changed")
                dest = dest_loc.path
                target = current(dest_loc)
                if dest != path and target.after_text is not None:
                    raise PatchError(f"patch line {op.patch_line}: cannot move {op.path} to {op.move_to}: the "
                                     "destination exists (nothing was changed)")
                if dest != path:
                    target.after_text = new_text
                    target.moved_from = plan.display
                    target.template = plan.before or plan.template
                    plan.after_text = None
                    continue
            plan.after_text = new_text
    return plans


def _commit(changed: list[FilePlan], state: EditState) -> None:
    done: list[tuple[Loc, bytes | None]] = []
    stats: dict[Path, os.stat_result] = {}
    try:
        for plan in changed:
            data = plan.data()
            if data is None:
                plan.loc.fs.unlink(plan.loc.rel)
            else:
                stats[plan.path] = fileio.atomic_write(plan.loc, data, create_parents=True)
            done.append((plan.loc, plan.before.raw if plan.before else None))
    except (OSError, EditError, EscapeError) as exc:
        for loc, raw in reversed(done):
            try:
                if raw is None:
                    loc.fs.unlink(loc.rel)
                else:
                    fileio.atomic_write(loc, raw)
            except (OSError, EditError, EscapeError):
                pass
        raise PatchError(f"writing the patch failed ({exc}); the files already written were restored") from None
    for plan in changed:
        data = plan.data()
        state.push_undo(plan.path, UndoEntry(plan.before.raw if plan.before else None,
                                             hashlib.sha256(data).hexdigest() if data is not None else None,
                                             "patch"))
        if data is not None:
            state.record_view(plan.path, data, plan.after_text, stats.get(plan.path))
        else:
            state.forget_view(plan.path)
