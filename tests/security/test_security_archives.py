"""Archives coder unpacks (`coder plugin install x.tar`, coder/fs/unpack.py): regular files and folders only,
written beneath the destination; a link, a hard link, a device or a FIFO refuses the archive with the entry named.

Each plant aims at a folder outside the destination that the test owns and leaves a harmless marker there; the
control unpacks the same archive with tarfile's own `data` filter (or zipfile), in a child process, and shows
where that Python would have written it (the CVE-2025-4517 chain does get out on the Pythons that have it)."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from coder.vcs.repo import Repo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_support import coder  # noqa: E402

from coder.fs.unpack import ArchiveRefused, Bounds, unpack  # noqa: E402
from coder.review.context import ReviewContext  # noqa: E402

MARKER = b"planted by the archive\n"
MANIFEST = json.dumps({"name": "team-tools", "version": "1.0.0"}).encode()


def _add(tar: tarfile.TarFile, name: str, kind: bytes = tarfile.REGTYPE, data: bytes = b"",
         link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def _plugin_entries(tar: tarfile.TarFile) -> None:
    _add(tar, "p/.claude-plugin", tarfile.DIRTYPE)
    _add(tar, "p/.claude-plugin/plugin.json", data=MANIFEST)


def cve_2025_4517_chain(path: Path, outside: Path) -> Path:
    """Sixteen folders of 247-character names, each reached by a one-letter link, then a link at the bottom whose
    resolved path passes PATH_MAX (realpath stops resolving there, so the data filter sees a harmless name), then
    a link through it and up out of the destination, and a file written through that link."""
    comp, steps, where = "d" * 247, "abcdefghijklmnop", ""
    with tarfile.open(path, "w") as tar:
        _plugin_entries(tar)
        for step in steps:
            _add(tar, os.path.join(where, comp), tarfile.DIRTYPE)
            _add(tar, os.path.join(where, step), tarfile.SYMTYPE, link=comp)
            where = os.path.join(where, comp)
        long_link = os.path.join("/".join(steps), "l" * 254)
        _add(tar, long_link, tarfile.SYMTYPE, link="../" * len(steps))
        _add(tar, "escape", tarfile.SYMTYPE,
             link=long_link + "/" + "../" * (str(outside).count("/") + 8) + str(outside).lstrip("/"))
        _add(tar, "escape/marker", data=MARKER)
    return path


def _control(archive: Path, dest: Path) -> str:
    """Unpack `archive` into `dest` the way the standard library would (tarfile's data filter, zipfile's
    extractall), in a child process; its error, if any."""
    code = ("import sys, tarfile, zipfile\n"
            "a, d = sys.argv[1], sys.argv[2]\n"
            "try:\n"
            "    if zipfile.is_zipfile(a): zipfile.ZipFile(a).extractall(d)\n"
            "    else: tarfile.open(a).extractall(d, filter='data')\n"
            "except Exception as e: print(type(e).__name__, e)\n")
    dest.mkdir()
    return subprocess.run([sys.executable, "-c", code, str(archive), str(dest)], capture_output=True, text=True,
                          timeout=120).stdout


def test_a_link_chain_longer_than_path_max_writes_nothing_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = cve_2025_4517_chain(tmp_path / "plugin.tar", outside)
    control = _control(archive, tmp_path / "control")
    # the control: this Python's own filter lets the chain out (a Python with the fix refuses it, and says so)
    assert (outside / "marker").read_bytes() == MARKER or "LinkOutsideDestinationError" in control \
        or "OutsideDestination" in control, control
    (outside / "marker").unlink(missing_ok=True)

    done = coder("plugin", "install", str(archive))
    assert done.returncode != 0
    assert "is a symbolic link" in done.stderr and "'a'" in done.stderr and "Traceback" not in done.stderr
    assert not (outside / "marker").exists()
    assert not (Path.home() / ".local" / "share" / "coder" / "plugins" / "team-tools").exists()


def _tar(path: Path, *entries: tuple[str, bytes, bytes, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        _plugin_entries(tar)
        for name, kind, data, link in entries:
            _add(tar, name, kind, data, link)
    return path


TAR_PLANTS = {
    "dotdot": (("../outside/marker", tarfile.REGTYPE, MARKER, ""), "would land outside"),
    "dotdot inside a name": (("p/../../outside/marker", tarfile.REGTYPE, MARKER, ""), "would land outside"),
    "absolute": (("{outside}/marker", tarfile.REGTYPE, MARKER, ""), "would land outside"),
    "symlink out, then a file through it": (("p/out", tarfile.SYMTYPE, b"", "{outside}"), "is a symbolic link"),
    "symlink that stays inside": (("p/readme", tarfile.SYMTYPE, b"", "plugin.json"), "is a symbolic link"),
    "hard link to a file outside": (("p/h", tarfile.LNKTYPE, b"", "{outside}/victim"), "is a hard link"),
    "hard link inside": (("p/h", tarfile.LNKTYPE, b"", "p/.claude-plugin/plugin.json"), "is a hard link"),
    "character device": (("p/tty", tarfile.CHRTYPE, b"", ""), "is a device"),
    "block device": (("p/sda", tarfile.BLKTYPE, b"", ""), "is a device"),
    "fifo": (("p/pipe", tarfile.FIFOTYPE, b"", ""), "is a FIFO"),
}


@pytest.mark.parametrize("plant", sorted(TAR_PLANTS))
def test_traversal_links_and_special_entries_refuse_the_tar(tmp_path: Path, plant: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_bytes(b"victim\n")
    (name, kind, data, link), why = TAR_PLANTS[plant]
    entries = [(name.format(outside=outside), kind, data, link.format(outside=outside))]
    if kind == tarfile.SYMTYPE:
        entries.append(("p/out/marker" if "out" in name else "p/readme2", tarfile.REGTYPE, MARKER, ""))
    archive = _tar(tmp_path / "plugin.tar.gz", *entries)
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveRefused) as refused:
        unpack(archive, dest)
    assert why in str(refused.value) and repr(entries[0][0]) in str(refused.value)
    assert not any(dest.iterdir()), "the check comes before any write"
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    assert (outside / "victim").read_bytes() == b"victim\n"


def test_the_control_of_the_classic_plants_is_live(tmp_path: Path) -> None:
    """A zip has no filter: the standard library writes a `../` member (zipfile cleans it, so the plant that is
    live is a symlink member, written as a file, and an absolute name); and tarfile with no filter follows a link
    out. Each is what the refusals above stop."""
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = _tar(tmp_path / "t.tar.gz", ("p/out", tarfile.SYMTYPE, b"", str(outside)),
                   ("p/out/marker", tarfile.REGTYPE, MARKER, ""))
    dest = tmp_path / "dest"
    dest.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="fully_trusted")
    assert (outside / "marker").read_bytes() == MARKER


def _zip(path: Path, name: str, data: bytes, mode: int) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("p/.claude-plugin/plugin.json", MANIFEST)
        info = zipfile.ZipInfo(name)
        info.external_attr = mode << 16
        zf.writestr(info, data)
    return path


@pytest.mark.parametrize(("name", "data", "mode", "why"), [
    ("../outside/marker", MARKER, stat.S_IFREG | 0o644, "would land outside"),
    ("..\\outside\\marker", MARKER, stat.S_IFREG | 0o644, "would land outside"),
    ("/abs/marker", MARKER, stat.S_IFREG | 0o644, "would land outside"),
    ("p/link", b"/etc/passwd", stat.S_IFLNK | 0o777, "is a symbolic link"),
    ("p/pipe", b"", stat.S_IFIFO | 0o644, "is a FIFO"),
    ("p/sock", b"", stat.S_IFSOCK | 0o644, "not a file or a folder"),
])
def test_zip_plants_are_refused(tmp_path: Path, name: str, data: bytes, mode: int, why: str) -> None:
    archive = _zip(tmp_path / "plugin.zip", name, data, mode)
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveRefused, match=why):
        unpack(archive, dest)
    assert not any(dest.iterdir())


def test_a_regular_archive_unpacks_with_its_modes_and_no_more(tmp_path: Path) -> None:
    archive = tmp_path / "ok.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        _plugin_entries(tar)
        info = tarfile.TarInfo("p/bin/run")
        info.mode = 0o4755  # setuid asked for: never given
        info.size = 3
        tar.addfile(info, io.BytesIO(b"#!\n"))
    dest = tmp_path / "dest"
    dest.mkdir()
    unpack(archive, dest)
    assert (dest / "p" / ".claude-plugin" / "plugin.json").read_bytes() == MANIFEST
    assert stat.S_IMODE((dest / "p" / "bin" / "run").stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "p" / ".claude-plugin" / "plugin.json").stat().st_mode) == 0o644


def test_entries_and_bytes_are_bounded(tmp_path: Path) -> None:
    many = tmp_path / "many.tar"
    with tarfile.open(many, "w") as tar:
        for i in range(30):
            _add(tar, f"f{i}", data=b"x")
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveRefused, match="more than 20 entries"):
        unpack(many, dest, Bounds(entries=20))
    big = tmp_path / "big.zip"
    with zipfile.ZipFile(big, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("zeros", b"\0" * (4 << 20))  # 4 MB of zeros in a few KB
    assert big.stat().st_size < 64 * 1024
    with pytest.raises(ArchiveRefused, match="more than 1 MB"):
        unpack(big, dest, Bounds(total_bytes=1 << 20))
    assert not any(dest.iterdir())


def test_a_duplicate_name_and_a_non_archive_are_refused(tmp_path: Path) -> None:
    twice = _tar(tmp_path / "twice.tar.gz", ("p/a", tarfile.REGTYPE, b"1", ""), ("p/a", tarfile.REGTYPE, b"2", ""))
    dest = tmp_path / "dest"
    dest.mkdir()
    with pytest.raises(ArchiveRefused, match="given twice"):
        unpack(twice, dest)
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not an archive at all")
    with pytest.raises(ArchiveRefused, match="not an archive"):
        unpack(junk, dest)


def test_the_reviewers_export_writes_nothing_through_a_crafted_tree(git_repo: Path, tmp_path: Path) -> None:
    """The sandbox can write git objects: a tree in which `a` is both a link to an outside folder and a folder
    holding a file (git mktree takes it, git archive writes both). The reviewer's export (git archive | tar -x)
    writes the file inside the export, never through the link; the control extracts the same archive with
    tarfile and no filter and the marker lands outside."""
    def git(repo: Path, *args: str, input: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True, text=True, check=True,
                              timeout=120).stdout

    outside = tmp_path / "outside"
    outside.mkdir()
    link = git(git_repo, "hash-object", "-w", "--stdin", input=str(outside)).strip()
    blob = git(git_repo, "hash-object", "-w", "--stdin", input="planted\n").strip()
    sub = git(git_repo, "mktree", input=f"100644 blob {blob}\tmarker\n").strip()
    tree = git(git_repo, "mktree", input=f"120000 blob {link}\ta\n040000 tree {sub}\ta\n").strip()
    archive = subprocess.run(["git", "archive", "--format=tar", tree], cwd=git_repo, capture_output=True,
                             check=True, timeout=60, stdin=subprocess.DEVNULL).stdout
    control = tmp_path / "control"
    control.mkdir()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        try:
            tar.extractall(control, filter="fully_trusted")
        except OSError:
            pass
    assert (outside / "marker").read_text() == "planted\n"  # the plant is live
    (outside / "marker").unlink()

    ctx = ReviewContext(Repo.open(git_repo), "")
    try:
        try:
            export = ctx.export(tree)
        except OSError as exc:  # tar may also refuse the folder over its placeholder: either way, nothing out
            assert "tar could not extract" in str(exc)
        else:
            assert (export / "a" / "marker").read_text() == "planted\n"
        assert not (outside / "marker").exists()
    finally:
        ctx.cleanup()
