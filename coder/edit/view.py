"""`view`: a file with line numbers (or a range of it), a directory listing, or an outline of a large file.

Line numbers use the `cat -n` layout of Anthropic's reference editor ("     12\\tcode"), which the models were
trained on and which the matcher recognises when it is pasted back into old_str."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coder.edit import fileio, paths
from coder.edit.errors import EditError, FileFormatError, PathError
from coder.edit.listing import list_directory
from coder.edit.ops import Editor, _missing_message
from coder.edit.outline import outline

#: a whole-file view longer than this becomes outline + head
VIEW_MAX_LINES = 1500
VIEW_MAX_CHARS = 60_000
#: a view_range longer than this is cut
RANGE_MAX_LINES = 2000
HEAD_LINES = 80
LINE_MAX_CHARS = 2000


@dataclass
class ViewResult:
    text: str
    path: Path
    display: str
    truncated: bool = False


def _fmt(lines: list[str], first: int) -> str:
    out = []
    for n, line in enumerate(lines, first):
        if len(line) > LINE_MAX_CHARS:
            line = line[:LINE_MAX_CHARS] + f" … [{len(line) - LINE_MAX_CHARS} more chars on this line]"
        out.append(f"{n:6}\t{line}")
    return "\n".join(out)


def view(editor: Editor, path_arg: str, view_range: list[int] | None = None,
         max_chars: int | None = None) -> ViewResult:
    with paths.beneath_errors(path_arg):
        return _view(editor, path_arg, view_range, max_chars)


def _view(editor: Editor, path_arg: str, view_range: list[int] | None, max_chars: int | None) -> ViewResult:
    loc = editor.locate(path_arg, for_write=False)
    path = loc.path
    display = editor.display(path)
    kind = editor.fs.kind(loc.rel) if loc.rel else "dir"
    if kind is None:
        raise PathError(_missing_message(path_arg, loc).replace(" Use `create` to make a new file.", ""))
    if kind == "dir":
        if view_range:
            raise EditError(f"{display} is a directory; view_range only applies to files")

        return ViewResult(list_directory(loc, display + "/" if display != "." else "the workspace"), path, display)
    raw, st = fileio.read_raw(loc, editor.max_bytes + 1)
    size = max(st.st_size, len(raw))
    note = ""
    if size > editor.max_bytes:
        head = raw[:64 * 1024]
        kind = fileio.sniff_binary(head[: fileio.SNIFF_BYTES], path)
        if kind:
            raise FileFormatError(f"{display} is a {kind} ({fileio.human_size(size)}); the editor only shows text")
        text = head.decode("utf-8", "replace").replace("\r\n", "\n").split("\n")[:HEAD_LINES]
        return ViewResult(f"{display} is {fileio.human_size(size)}, too large to view whole or edit here. First "
                          f"{len(text)} lines:\n{_fmt(text, 1)}\nUse the shell (grep -n, sed -n 'A,Bp') to read "
                          "other parts.", path, display, True)
    try:
        ft = fileio.decode(raw, path)
        text = ft.text
    except FileFormatError as exc:
        if "not valid" not in str(exc):
            raise
        text = raw.decode("utf-8", "replace").replace("\r\n", "\n")
        note = f"note: {exc} Undecodable bytes are shown as \ufffd; edits to this file are refused.\n"
    editor.state.record_view(path, raw, text, st)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if not text:
        return ViewResult(f"{display} is empty (0 lines).", path, display)
    total = len(lines)
    if view_range:
        return ViewResult(note + _range(lines, view_range, display), path, display)
    limit = max_chars or VIEW_MAX_CHARS
    if total <= VIEW_MAX_LINES and len(text) <= limit:
        return ViewResult(note + _fmt(lines, 1), path, display)
    return ViewResult(note + _large(path, text, lines, display, size), path, display, True)


def _range(lines: list[str], view_range: list[int], display: str) -> str:
    total = len(lines)
    if (not isinstance(view_range, (list, tuple)) or len(view_range) != 2
            or not all(isinstance(x, int) for x in view_range)):
        raise EditError(f"view_range must be two integers [start, end] (end -1 = to the end); got {view_range!r}")
    start, end = view_range
    if start < 1 or start > total:
        raise EditError(f"view_range start {start} is outside {display}, which has {total} lines (1-{total})")
    notes = []
    if end == -1 or end > total:
        if end > total:
            notes.append(f"(the file ends at line {total})")
        end = total
    if end < start:
        raise EditError(f"view_range end {end} is before its start {start}")
    if end - start + 1 > RANGE_MAX_LINES:
        end = start + RANGE_MAX_LINES - 1
        notes.append(f"(cut at {RANGE_MAX_LINES} lines; view from line {end + 1} for more)")
    return _fmt(lines[start - 1:end], start) + ("\n" + " ".join(notes) if notes else "")


def _large(path: Path, text: str, lines: list[str], display: str, size: int) -> str:
    items = outline(path, text)
    parts = [f"{display} has {len(lines)} lines ({fileio.human_size(size)}), too long to show whole. "
             "Outline (line spans), then the first lines. Use view_range [start, end] to read a part."]
    if items:
        parts.append("Outline:")
        for item in items[:300]:
            span = f"{item.line}-{item.end_line}" if item.end_line != item.line else f"{item.line}"
            parts.append(f"  {'  ' * item.depth}{item.kind} {item.name}  (lines {span})")
        if len(items) > 300:
            parts.append(f"  ... and {len(items) - 300} more definitions")
    else:
        parts.append("(no outline available for this file type)")
    parts.append(f"First {HEAD_LINES} lines:")
    parts.append(_fmt(lines[:HEAD_LINES], 1))
    return "\n".join(parts)
