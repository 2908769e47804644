"""Where `coder plugin install SOURCE` gets a plugin from: a folder, an archive (a file or a URL), or a git
repository (a URL), brought into a temporary folder the caller owns.

- a folder: used as it is (copied by the installer);
- `*.tar.gz`, `*.tgz`, `*.tar`, `*.zip`, local or `http(s)://`: downloaded (at most `MAX_BYTES`) and unpacked
  by coder (coder/fs/unpack.py): regular files and folders only, written beneath the folder, no link, device or
  hard link (the archive is refused, the entry named), bounded in entries and bytes;
- any other URL (`https://host/repo`, `ssh://`, `git@host:repo`, `file://`): `git clone --depth 1` through host
  git (coder/host/git.py: scrubbed, no hooks, no submodules), protocols https, ssh, git and file only.

The plugin is the folder holding `.claude-plugin/plugin.json`: the top, or the one folder below it that does.
"""

from __future__ import annotations

import shutil
import urllib.request
from pathlib import Path

from coder.base.errors import ConfigError
from coder.ext.plugins import MANIFEST
from coder.fs.unpack import ArchiveRefused
from coder.fs.unpack import unpack as unpack_archive
from coder.host import git as hostgit

MAX_BYTES = 100 * 1024 * 1024
ARCHIVES = (".tar.gz", ".tgz", ".tar", ".zip")
CLONE_TIMEOUT = 300.0


def fetch(source: str, work: Path) -> Path:
    """The folder of the plugin `source` names, inside `work` unless it is a local folder."""
    local = Path(source).expanduser()
    if "://" not in source and not source.startswith("git@"):
        if local.is_dir():
            return find_root(local)
        if local.is_file() and source.endswith(ARCHIVES):
            return find_root(unpack(local, work / "unpacked"))
        raise ConfigError(f"{source}: no such folder or archive (give a plugin folder, a .tar.gz/.zip, or a URL)")
    if source.endswith(ARCHIVES) and source.split("://", 1)[0] in ("http", "https", "file"):
        archive = work / ("plugin" + next(s for s in ARCHIVES if source.endswith(s)))
        download(source, archive)
        return find_root(unpack(archive, work / "unpacked"))
    return find_root(clone(source, work / "clone"))


def download(url: str, into: Path) -> None:
    try:
        with urllib.request.urlopen(url, timeout=60) as response, into.open("wb") as out:  # noqa: S310 - the user's URL
            total = 0
            while chunk := response.read(1 << 16):
                total += len(chunk)
                if total > MAX_BYTES:
                    raise ConfigError(f"{url}: larger than {MAX_BYTES // (1024 * 1024)} MB; not installed")
                out.write(chunk)
    except OSError as exc:
        raise ConfigError(f"{url}: could not be downloaded ({exc})") from exc


def unpack(archive: Path, into: Path) -> Path:
    into.mkdir(parents=True)
    try:
        unpack_archive(archive, into)
    except ArchiveRefused as exc:
        raise ConfigError(f"{exc}; the plugin was not installed") from exc
    return into


def clone(url: str, into: Path) -> Path:
    try:
        done = hostgit.run(into.parent, ["clone", "--depth", "1", "--no-recurse-submodules", "--", url, str(into)],
                           timeout=CLONE_TIMEOUT, protocols="https:ssh:git:file")
    except Exception as exc:  # noqa: BLE001 - git could not start (OSError), or the clone timed out
        raise ConfigError(f"{url}: git clone could not run ({exc})") from exc
    if done.returncode != 0:
        raise ConfigError(f"{url}: git clone failed: {done.stderr.strip()[-400:]}")
    shutil.rmtree(into / ".git", ignore_errors=True)
    return into


def find_root(folder: Path) -> Path:
    """The plugin's folder: `folder` or the one folder below it holding the manifest, never through a link (a
    fetched repository whose only entry is `p -> /some/host/folder` would install that host folder)."""
    if (folder / MANIFEST).is_file() and not (folder / MANIFEST).parent.is_symlink():
        return folder
    below = [d for d in sorted(folder.iterdir()) if d.is_dir() and not d.is_symlink() and (d / MANIFEST).is_file()
             and not (d / MANIFEST).parent.is_symlink()]
    if len(below) == 1:
        return below[0]
    raise ConfigError(f"{folder}: no plugin here (no {MANIFEST} at the top or in one folder below it)")
