"""Reading and writing files without losing anything the user cares about.

A file is read into `FileText`: the decoded text with CRLF folded to LF (so that matching never has to think
about line endings), plus what is needed to write it back byte-for-byte the same outside the edited span:
encoding, BOM, the positions of the folded CRs, and the dominant line ending for new text. Edits are applied
as spans of the folded text and mapped back onto the original text, so untouched lines (even in files with
mixed line endings) keep their exact bytes, and the final newline stays as it was.

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
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from coder.edit.errors import EditError, FileFormatError, PathError, StaleFileError

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


def check_regular(path: Path, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise PathError(f"{path} is a directory, not a file (use `view` to list it)")
    if not stat.S_ISREG(st.st_mode):
        raise PathError(f"{path} is not a regular file (device, socket or pipe); refused")


def read_text(path: Path, max_bytes: int = MAX_EDIT_BYTES) -> FileText:
    """Read and decode a file for editing."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise PathError(f"{path} does not exist") from None
    check_regular(path, st)
    if st.st_size > max_bytes:
        raise FileFormatError(
            f"{path.name} is {human_size(st.st_size)}, over the {human_size(max_bytes)} limit for edits; it "
            "was not changed. Use the shell (sed, a script) for files this large.")
    try:
        raw = path.read_bytes()
    except PermissionError:
        raise PathError(f"{path} is not readable (permission denied)") from None
    return decode(raw, path)


def check_writable(path: Path) -> None:
    """Refuse read-only files explicitly (root bypasses permission bits, the user's intent does not)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if not st.st_mode & 0o222:
        raise PathError(f"{path} is read-only (mode {stat.S_IMODE(st.st_mode):04o}); it was not changed. "
                        "Make it writable first (chmod u+w) if the change is intended.")


@contextmanager
def file_lock(path: Path, timeout: float = 5.0) -> Iterator[None]:
    """Exclusive lock on an existing file for the read-modify-write of one edit. Another editor that
    replaced the file while we waited is detected by the inode changing; we then lock the new file."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
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
                        raise StaleFileError(f"{path} is being edited by another process; nothing was changed, "
                                             "try again") from None
                    time.sleep(0.01)
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                yield
                return
        finally:
            os.close(fd)  # releases the lock


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Write `data` to `path` via a temp file in the same folder and a rename. The mode of the existing
    file is kept (or `mode` for a new file); on failure the original file is untouched."""
    try:
        st: os.stat_result | None = path.stat()
    except FileNotFoundError:
        st = None
    folder = path.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".coder-tmp", dir=folder)
    except OSError as exc:
        raise EditError(f"cannot write in {folder}: {exc.strerror}; nothing was changed") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
            if hasattr(os, "chown") and os.geteuid() == 0:
                try:
                    os.chown(tmp, st.st_uid, st.st_gid)
                except OSError:
                    pass
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, mode if mode is not None else 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise EditError(f"writing {path} failed: {exc.strerror}; the file was left as it was") from None
        raise


def encode_new(text: str, like: FileText | None) -> bytes:
    """Bytes for a whole new file: in the format of `like` (the file it replaces) when given, else UTF-8
    with the line endings the text already has."""
    if like is None:
        return text.encode("utf-8")
    if like.newline != "\n":
        text = text.replace("\r\n", "\n").replace("\n", like.newline)
    return like.encode(text)
