"""Parser for the Codex `apply_patch` format.

    *** Begin Patch
    *** Add File: path            (then "+" lines)
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path         (optional, right after Update File)
    @@ optional header line       (a line to find first, e.g. "def handler(request):")
     context / -removed / +added
    *** End of File               (optional: the hunk ends at the end of the file)
    *** End Patch

Parsing is forgiving about wrappers models add (a shell heredoc `apply_patch <<'EOF'`, Markdown fences,
a missing final `*** End Patch`) and strict about everything that decides what the patch does: an unknown
line inside a hunk is an error naming the patch line, never a guess."""

from __future__ import annotations

from dataclasses import dataclass, field

from coder.edit.errors import PatchError

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
EOF_MARK = "*** End of File"


@dataclass
class Chunk:
    """One `@@` hunk: the old lines (context and removed) become the new lines (context and added)."""

    header: str | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    eof: bool = False
    patch_line: int = 0  # 1-based line in the patch text, for error messages


@dataclass
class FileOp:
    kind: str  # "add", "delete", "update"
    path: str
    move_to: str | None = None
    add_lines: list[str] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    patch_line: int = 0


@dataclass
class Patch:
    ops: list[FileOp]
    notes: list[str] = field(default_factory=list)


def _unwrap(text: str) -> tuple[list[str], list[str]]:
    lines = text.replace("\r\n", "\n").split("\n")
    notes: list[str] = []
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and lines[0].lstrip().startswith("```") and lines[-1].strip() == "```":
        lines = lines[1:-1]
    if lines and "<<" in lines[0] and not lines[0].startswith("***"):  # apply_patch <<'EOF' ... EOF
        marker = lines[0].split("<<", 1)[1].strip().strip("'\"-")
        lines = lines[1:]
        if lines and marker and lines[-1].strip() == marker:
            lines = lines[:-1]
    return lines, notes


def parse_patch(text: str) -> Patch:
    """Parse patch text; raise PatchError naming the offending patch line."""
    if not text or not text.strip():
        raise PatchError("the patch is empty: it must start with '*** Begin Patch' and end with '*** End Patch'")
    lines, notes = _unwrap(text)
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError(f"the patch must start with '{BEGIN}' (first line is {lines[0][:80]!r})" if lines else
                         "the patch is empty")
    if lines[-1].strip() != END:
        notes.append(f"the patch did not end with '{END}'; read to its last line")
        body = lines[1:]
    else:
        body = lines[1:-1]
    ops: list[FileOp] = []
    i = 0
    while i < len(body):
        line, number = body[i], i + 2
        if not line.strip():
            i += 1
            continue
        if line.startswith(ADD):
            op = FileOp("add", _path(line[len(ADD):], number), patch_line=number)
            i += 1
            while i < len(body) and not body[i].startswith("*** "):
                if body[i].startswith("+"):
                    op.add_lines.append(body[i][1:])
                elif body[i] == "" and (i + 1 < len(body) and body[i + 1].startswith("+")):
                    op.add_lines.append("")
                elif body[i].strip():
                    raise PatchError(f"patch line {i + 2}: lines of an added file must start with '+' "
                                     f"(got {body[i][:80]!r})")
                i += 1
            ops.append(op)
        elif line.startswith(DELETE):
            ops.append(FileOp("delete", _path(line[len(DELETE):], number), patch_line=number))
            i += 1
        elif line.startswith(UPDATE):
            op = FileOp("update", _path(line[len(UPDATE):], number), patch_line=number)
            i += 1
            if i < len(body) and body[i].startswith(MOVE):
                op.move_to = _path(body[i][len(MOVE):], i + 2)
                i += 1
            i = _parse_chunks(body, i, op)
            if not op.chunks and not op.move_to:
                raise PatchError(f"patch line {number}: '*** Update File: {op.path}' has no hunks")
            ops.append(op)
        else:
            raise PatchError(f"patch line {number}: expected '*** Add File:', '*** Delete File:' or "
                             f"'*** Update File:', got {line[:80]!r}")
    if not ops:
        raise PatchError("the patch contains no file operations")
    return Patch(ops, notes)


def _path(raw: str, number: int) -> str:
    path = raw.strip()
    if not path:
        raise PatchError(f"patch line {number}: the file path is empty")
    return path


def _parse_chunks(body: list[str], i: int, op: FileOp) -> int:
    chunk: Chunk | None = None
    while i < len(body):
        line = body[i]
        if line.startswith("*** ") and line.strip() != EOF_MARK:
            break
        if line.strip() == EOF_MARK:
            if chunk is None:
                raise PatchError(f"patch line {i + 2}: '{EOF_MARK}' outside a hunk")
            chunk.eof = True
            i += 1
            continue
        if line.startswith("@@"):
            header = line[2:].strip()
            if header.endswith("@@"):  # unified-diff style "@@ -1,3 +1,4 @@": no usable header
                header = ""
            chunk = Chunk(header or None, patch_line=i + 2)
            op.chunks.append(chunk)
            i += 1
            continue
        if chunk is None:  # the first hunk may omit its "@@"
            chunk = Chunk(None, patch_line=i + 2)
            op.chunks.append(chunk)
        if line.startswith(" "):
            chunk.old.append(line[1:])
            chunk.new.append(line[1:])
        elif line.startswith("-"):
            chunk.old.append(line[1:])
        elif line.startswith("+"):
            chunk.new.append(line[1:])
        elif line == "":
            chunk.old.append("")
            chunk.new.append("")
        else:
            raise PatchError(f"patch line {i + 2} in the hunk for {op.path}: every line must start with ' ' "
                             f"(context), '-' (removed) or '+' (added); got {line[:80]!r}")
        i += 1
    for chunk in op.chunks:
        while chunk.old and chunk.new and chunk.old[-1] == "" and chunk.new[-1] == "" and not chunk.eof:
            chunk.old.pop()  # blank lines before the next "***" are layout, not context
            chunk.new.pop()
    op.chunks = [c for c in op.chunks if c.old or c.new]
    return i
