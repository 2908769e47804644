"""Archives unpacked by coder: regular files and folders only, each written beneath the destination.

tarfile's `data` filter decides entry by entry from the names it sees, then lets the operating system follow
whatever links earlier entries made; a chain of links whose resolved length passes PATH_MAX defeats it on the
Pythons that have CVE-2025-4517, and a zip has no filter at all. Here nothing an archive holds is ever followed:

- only regular files and folders are written; a symbolic link, a hard link, a device, a FIFO (or any other kind
  of entry) refuses the whole archive, naming the entry, before anything is written;
- a name is a relative path of plain components: absolute names, `..`, empty components, NUL and names given
  twice are refused;
- every write goes through `WorkspaceFS` on the destination (coder/fs/beneath.py: an O_PATH handle, no symlink
  followed anywhere), the same writer the editor uses, so even a link that appeared in the destination by other
  means is never written through;
- files get 0644, or 0755 when the archive marks them executable (never setuid, setgid or sticky);
- at most `Bounds.entries` entries and `Bounds.total_bytes` bytes unpacked (counted as written, not as the
  headers claim: a zip's sizes can lie).
"""

from __future__ import annotations

import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, BinaryIO, cast

from coder.base.errors import CoderError
from coder.fs.beneath import WorkspaceFS


class ArchiveRefused(CoderError):
    """An archive coder will not unpack: an entry that is not a regular file or folder, a name out of the
    destination, too many entries or bytes, or no archive at all."""


@dataclass(frozen=True)
class Bounds:
    entries: int = 20_000
    total_bytes: int = 512 * 1024 * 1024


@dataclass(frozen=True)
class Entry:
    name: str  # relative, normalised
    folder: bool
    executable: bool
    size: int


def unpack(archive: Path, into: Path, bounds: Bounds = Bounds()) -> None:
    """Unpack the tar (plain, gzip, bzip2 or xz) or zip `archive` into the existing folder `into`."""
    label = archive.name
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                entries = _checked(label, ((_zip_entry(label, info), info) for info in zf.infolist()), bounds)
                _write(label, into, entries, lambda info: zf.open(info), bounds)
            return
        with tarfile.open(archive) as tf:
            entries = _checked(label, ((_tar_entry(label, member), member) for member in tf), bounds)
            _write(label, into, entries, lambda member: tf.extractfile(member), bounds)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, RuntimeError, NotImplementedError) as exc:
        raise ArchiveRefused(f"{label}: not an archive coder can unpack ({exc})") from exc
    except OSError as exc:
        raise ArchiveRefused(f"{label}: could not be unpacked ({exc})") from exc


def _tar_entry(label: str, member: tarfile.TarInfo) -> Entry:
    if member.isdir():
        folder = True
    elif member.isreg():
        folder = False
    else:
        kind = ("a symbolic link" if member.issym() else "a hard link" if member.islnk() else
                "a FIFO" if member.isfifo() else "a device" if member.isdev() else
                "an entry that is not a file or a folder")
        raise ArchiveRefused(f"{label}: the entry {member.name!r} is {kind}; coder unpacks regular files and "
                             "folders only, nothing was unpacked")
    return Entry(_name(label, member.name), folder, bool(member.mode & 0o111), 0 if folder else member.size)


def _zip_entry(label: str, info: zipfile.ZipInfo) -> Entry:
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
        what = {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a device",
                stat.S_IFBLK: "a device"}.get(kind, "an entry that is not a file or a folder")
        raise ArchiveRefused(f"{label}: the entry {info.filename!r} is {what}; coder unpacks regular files and "
                             "folders only, nothing was unpacked")
    folder = info.is_dir() or kind == stat.S_IFDIR
    return Entry(_name(label, info.filename), folder, bool(mode & 0o111), 0 if folder else info.file_size)


def _name(label: str, raw: str) -> str:
    """`raw` as a relative path of plain components (a backslash counts as a separator, as Windows tools write
    zips)."""
    text = raw.replace("\\", "/")
    parts = [p for p in PurePosixPath(text).parts if p != "."]
    if "\0" in text or text.startswith("/") or not parts or ".." in parts:
        raise ArchiveRefused(f"{label}: the entry {raw!r} would land outside the folder; nothing was unpacked")
    return "/".join(parts)


def _checked(label: str, items: Iterator[tuple[Entry, Any]], bounds: Bounds) -> list[tuple[Entry, Any]]:
    """Every entry read and checked before anything is written."""
    out: list[tuple[Entry, Any]] = []
    names: set[str] = set()
    total = 0
    for entry, source in items:
        if len(out) >= bounds.entries:
            raise ArchiveRefused(f"{label}: more than {bounds.entries} entries; nothing was unpacked")
        if entry.name in names and not entry.folder:
            raise ArchiveRefused(f"{label}: the entry {entry.name!r} is given twice; nothing was unpacked")
        names.add(entry.name)
        total += entry.size
        if total > bounds.total_bytes:
            raise ArchiveRefused(f"{label}: more than {bounds.total_bytes // (1024 * 1024)} MB unpacked; nothing "
                                 "was unpacked")
        out.append((entry, source))
    return out


class _Bounded:
    """A member's stream that fails once the whole archive has given more than its bound."""

    def __init__(self, stream: IO[bytes], label: str, budget: list[int]) -> None:
        self.stream, self.label, self.budget = stream, label, budget

    def read(self, size: int = -1) -> bytes:
        chunk = self.stream.read(size if size and size > 0 else 1 << 20)
        self.budget[0] -= len(chunk)
        if self.budget[0] < 0:
            raise ArchiveRefused(f"{self.label}: more bytes than its entries declare, past the bound; stopped")
        return chunk


def _write(label: str, into: Path, entries: list[tuple[Entry, Any]],
           open_member: Callable[[Any], IO[bytes] | None], bounds: Bounds) -> None:
    budget = [bounds.total_bytes]
    with WorkspaceFS(into) as fs:
        for entry, source in entries:
            if entry.folder:
                fs.makedirs(entry.name)
                continue
            stream = open_member(source)
            if stream is None:  # tarfile: not a regular file after all
                raise ArchiveRefused(f"{label}: the entry {entry.name!r} has no content")
            with stream:
                fs.write_atomic(entry.name, cast(BinaryIO, _Bounded(stream, label, budget)),
                                0o755 if entry.executable else 0o644, create_parents=True)
