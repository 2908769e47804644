"""Reading and writing files without losing anything the user cares about.

A file is read into `FileText`: the decoded text with CRLF folded to LF (so that matching never has to think
about line endings), plus what is needed to write it back byte-for-byte the same outside the edited span:
encoding, BOM, the positions of the folded CRs, and the dominant line ending for new text. Edits are applied
as spans of the folded text and mapped back onto the original text, so untouched lines (even in files with
mixed line endings) keep their exact bytes, and the final newline stays as it was.

Files are read and written through `Loc` (coder/edit/paths.py): beneath a handle on the workspace, following
no symlink, so a link the sandbox plants mid-edit cannot send a read or a write outside.
Writes are atomic (temp file in the same folder, fsync, rename) and keep the file mode. A per-file lock
(flock on the file itself, re-checked against the inode after the rename of a concurrent writer) serialises
concurrent edits of one file, and the content is compared again under the lock so that a change made by
someone else between read and write is reported instead of overwritten.
"""

from __future__ import annotations

import bisect
import codecs
import errno
import fcntl
import hashlib
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from coder.edit import paths
from coder.edit.errors import EditError, FileFormatError, PathError, StaleFileError
from coder.edit.paths import Loc
from coder.fs.beneath import EscapeError

#: files larger than this are not edited (and not read whole for viewing)
MAX_EDIT_BYTES = 10 * 1024 * 1024
#: how many bytes are sniffed for NUL bytes and image magic
SNIFF_BYTES = 8192

IMAGE_MAGIC: list[tuple[bytes, str]] = [
    (b"\x89PNG\r\n\x1a\n", "PNG image"), (b"\xff\xd8\xff", "JPEG image"), (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"), (b"BM", "BMP image"), (b"\x00\x00\x01\x00", "ICO image"),
]
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".tiff", ".tif", ".avif", ".heic"}


@dataclass
class FileText:
    """A decoded text file. `text` uses LF only; `cr_positions` are the indices in `text` of the LFs that
    were CRLF on disk."""

    text: str
    encoding: str = "utf-8"
    bom: bytes = b""
    newline: str = "\n"  # dominant ending, used for newly written text
    cr_positions: list[int] = field(default_factory=list)
    original: str = ""  # decoded text as on disk (CRLF kept), without the BOM
    raw: bytes = b""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    def original_offset(self, index: int) -> int:
        """Map an index of `text` to the index in `original` (CRs before it added back)."""
        return index + bisect.bisect_left(self.cr_positions, index)

    def splice(self, start: int, end: int, replacement: str) -> str:
        """The original text with text[start:end] replaced by `replacement` (LF converted to the file's
        dominant ending). Everything outside the span keeps its exact characters."""
        if self.newline != "\n":
            replacement = replacement.replace("\n", self.newline)
        a, b = self.original_offset(start), self.original_offset(end)
        return self.original[:a] + replacement + self.original[b:]

    def encode(self, original_text: str) -> bytes:
        """Bytes for an original-form text (CRLF already in place), BOM and encoding kept."""
        try:
            return self.bom + original_text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise FileFormatError(
                f"the new text contains {original_text[exc.start:exc.end]!r}, which {self.encoding} cannot "
                "encode; the file was left unchanged") from exc

    def with_text(self, new_text: str) -> bytes:
        """Bytes for a whole new LF text in this file's format: the spans that changed are spliced, the
        rest keeps its bytes. Used by edits that compute a whole new text (insert, multi-edit, patches)."""
        start, end_old, end_new = _changed_span(self.text, new_text)
        return self.encode(self.splice(start, end_old, new_text[start:end_new]))


def _changed_span(old: str, new: str) -> tuple[int, int, int]:
    """Common prefix/suffix trim: old[start:end_old] became new[start:end_new]."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    return start, end_old, end_new


def sniff_binary(head: bytes, path: Path) -> str | None:
    """A short description when `head` looks like an image or binary data, else None."""
    for magic, kind in IMAGE_MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "WEBP image"
    if path.suffix.lower() in IMAGE_SUFFIXES:
        return f"{path.suffix.lower()[1:].upper()} image"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    if b"\x00" in head:
        return "binary file"
    return None


def human_size(size: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return str(size)


def decode(raw: bytes, path: Path) -> FileText:
    """Decode file bytes. Raises FileFormatError for binaries and invalid UTF-8 (with the exact place)."""
    kind = sniff_binary(raw[:SNIFF_BYTES], path)
    if kind:
        raise FileFormatError(f"{path.name} is a {kind} ({human_size(len(raw))}); the editor only handles text. "
                              "Inspect it with the shell (e.g. `file`, `xxd | head`) if you need to.")
    bom, encoding = b"", "utf-8"
    for candidate, enc in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                           (codecs.BOM_UTF16_BE, "utf-16-be")):
        if raw.startswith(candidate):
            bom, encoding = candidate, enc
            break
    body = raw[len(bom):]
    try:
        original = body.decode(encoding)
    except UnicodeDecodeError as exc:
        line = body[:exc.start].count(b"\n") + 1
        col = exc.start - (body.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FileFormatError(
            f"{path.name} is not valid {encoding.upper()} (byte 0x{body[exc.start]:02x} at line {line}, "
            f"column {col}); it was not changed. Edit it with the shell, or convert it first "
            "(e.g. `iconv -f latin1 -t utf-8`).") from exc
    crlf = original.count("\r\n")
    lf = original.count("\n") - crlf
    text = original.replace("\r\n", "\n") if crlf else original
    cr_positions: list[int] = []
    if crlf:
        removed = 0
        pos = original.find("\r\n")
        while pos != -1:
            cr_positions.append(pos - removed)  # index of the LF in `text`
            removed += 1
            pos = original.find("\r\n", pos + 2)
    return FileText(text=text, encoding=encoding, bom=bom, newline="\r\n" if crlf > lf else "\n",
                    cr_positions=cr_positions, original=original, raw=raw)


def read_raw(loc: Loc, limit: int | None = None) -> tuple[bytes, os.stat_result]:
    """The bytes of the located file (at most `limit`) and its stat, read beneath the workspace without
    following any symlink (see coder/edit/paths.py). PathError when missing, not a regular file or unreadable."""
    with paths.beneath_errors(loc.rel):
        try:
            return loc.fs.read_file(loc.rel, limit)
        except (FileNotFoundError, NotADirectoryError):
            raise PathError(f"{loc.rel} does not exist") from None
        except IsADirectoryError:
            raise PathError(f"{loc.rel} is a directory, not a file (use `view` to list it)") from None
        except PermissionError:
            raise PathError(f"{loc.rel} is not readable (permission denied)") from None
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                raise PathError(f"{loc.rel} is not a regular file (device, socket or pipe); refused") from None
            raise


def read_text(loc: Loc, max_bytes: int = MAX_EDIT_BYTES) -> tuple[FileText, os.stat_result]:
    """Read and decode a file for editing (and its stat, for `check_writable`)."""
    raw, st = read_raw(loc, max_bytes + 1)
    if len(raw) > max_bytes:
        raise FileFormatError(
            f"{loc.path.name} is {human_size(max(st.st_size, len(raw)))}, over the {human_size(max_bytes)} limit "
            "for edits; it was not changed. Use the shell (sed, a script) for files this large.")
    return decode(raw, loc.path), st


def check_writable(loc: Loc, st: os.stat_result) -> None:
    """Refuse read-only files explicitly (root bypasses permission bits, the user's intent does not)."""
    if not st.st_mode & 0o222:
        raise PathError(f"{loc.rel} is read-only (mode {stat.S_IMODE(st.st_mode):04o}); it was not changed. "
                        "Make it writable first (chmod u+w) if the change is intended.")


@contextmanager
def file_lock(loc: Loc, timeout: float = 5.0) -> Iterator[None]:
    """Exclusive lock on an existing file for the read-modify-write of one edit. Another editor that
    replaced the file while we waited is detected by the inode changing; we then lock the new file."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with paths.beneath_errors(loc.rel):
                fd = loc.fs.open(loc.rel, os.O_RDONLY | os.O_NONBLOCK)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            yield  # nothing to lock yet (create); the rename is atomic anyway
            return
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if time.monotonic() > deadline:
                        raise StaleFileError(f"{loc.rel} is being edited by another process; nothing was "
                                             "changed, try again") from None
                    time.sleep(0.01)
            try:
                same = os.fstat(fd).st_ino == loc.fs.stat(loc.rel).st_ino
            except (OSError, EscapeError):
                same = False
            if same:
                yield
                return
        finally:
            os.close(fd)  # releases the lock


def atomic_write(loc: Loc, data: bytes, mode: int | None = None, *, create_parents: bool = False) -> os.stat_result:
    """Write `data` to the located file via a temp file in the same folder and a rename, beneath the workspace
    (a symlink planted at the name is replaced, never followed). The mode of the existing file is kept (or
    `mode` / the umask default for a new file); on failure the original file is untouched."""
    with paths.beneath_errors(loc.rel):
        try:
            return loc.fs.write_atomic(loc.rel, data, mode, create_parents=create_parents)
        except IsADirectoryError:
            raise PathError(f"{loc.rel} is a directory; give a file path") from None
        except OSError as exc:
            raise EditError(f"writing {loc.rel} failed: {exc.strerror}; the file was left as it was") from None


def encode_new(text: str, like: FileText | None) -> bytes:
    """Bytes for a whole new file: in the format of `like` (the file it replaces) when given, else UTF-8
    with the line endings the text already has."""
    if like is None:
        return text.encode("utf-8")
    if like.newline != "\n":
        text = text.replace("\r\n", "\n").replace("\n", like.newline)
    return like.encode(text)
