"""A repository's git dir as the sandbox may have shaped it: what a `.git` file names, and the symlinks in a git
dir that git would write through.

The sandbox can write a `.git` file and almost all of the top-level `.git` (coder/host/git.py says what host git
is protected from), so before any host git command runs, the git dir it will use is read here, with no git
process: the path a `.git` file names exactly as git reads it (`gitfile_path`), and a refusal
(`PlantedGitDir`) when the git dir holds a link git writes through (`check_git_dir_links`). Where the work tree
and the git dir are, and whether a `.git` file's far side names this tree back, is `coder/host/git.py`'s
`pinned_repo` (that check asks git).
"""

from __future__ import annotations

import os
from pathlib import Path


class PlantedGitDir(OSError):
    """The repository's `.git` holds something git itself never puts there (a `commondir` in a top-level git dir,
    a symlink git would write through); nothing is run until it is removed."""


#: entries of a git dir that git never writes through, so a symlink there is the user's own (the sandbox cannot
#: write either: both are mounted read-only in it)
LINKS_ALLOWED = frozenset({"hooks", "config"})
#: folders of a git dir whose whole tree git writes into (loose refs and reflogs): every entry is checked
WALKED = ("refs", "logs")
#: folders under objects/ that git writes files into (the fan-out folders are checked as entries of objects/)
OBJECT_FOLDERS = ("pack", "info")


def read_small(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        return fh.read(4096).decode("utf-8", "surrogateescape")


def gitfile_path(data: bytes) -> str | None:
    """The path a `.git` file's text names, read exactly as git reads it (`read_gitfile_gently`): the text after
    `gitdir: ` with trailing newlines and carriage returns removed, nothing else (a path with leading spaces or an
    inner newline is that path); None when git would refuse the file."""
    if not data.startswith(b"gitdir: "):
        return None
    path = data[len(b"gitdir: "):].rstrip(b"\r\n")
    return path.decode("utf-8", "surrogateescape") if path else None


def gitfile_target(dot_git: Path) -> Path | None:
    """The git dir a `.git` link or `gitdir: PATH` file names (None when it names none: git then fails)."""
    if dot_git.is_symlink():
        return Path(os.path.realpath(dot_git))
    try:
        with open(dot_git, "rb", opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW | os.O_NONBLOCK)) as fh:
            named = gitfile_path(fh.read(65536))
    except OSError:
        return None
    return None if named is None else Path(os.path.realpath(dot_git.parent / named))


def check_git_dir_links(gdir: Path) -> None:
    """Raise PlantedGitDir when `gdir` holds a symlink that git writes through: one of its own entries (but the
    read-only `hooks` and `config`), anything under `refs/` and `logs/` (loose refs, reflogs), a fan-out folder
    of `objects/`, or an entry of `objects/pack` and `objects/info`. The sandbox can write all of these, and git
    appends reflog lines and writes objects through a link as through a file. Costs a few scandirs (the object
    files themselves are not walked: git writes them by a temp file and a link, never through one)."""
    found = _links_in(gdir, "", LINKS_ALLOWED)
    for name in WALKED:
        found += _links_below(gdir, name)
    found += _links_in(gdir, "objects")
    for name in OBJECT_FOLDERS:
        found += _links_in(gdir, f"objects/{name}")
    if found:
        shown = ", ".join(f"{gdir / rel} -> {os.readlink(gdir / rel) if os.path.islink(gdir / rel) else '?'}"
                          for rel in found[:5]) + (" ..." if len(found) > 5 else "")
        raise PlantedGitDir(
            f"symbolic link(s) in the git dir {gdir}: {shown}. Git writes through them (reflogs, refs, objects, "
            "the index), so something (a command in the sandbox?) planted them to make coder's host git write "
            "outside the repository. coder runs no git here until you have checked and removed them.")


def _links_in(gdir: Path, rel: str, allowed: frozenset[str] = frozenset()) -> list[str]:
    """The symlinks among the entries of `gdir/rel` (none when it is missing)."""
    try:
        with os.scandir(gdir / rel if rel else gdir) as it:
            return [f"{rel}/{e.name}" if rel else e.name for e in it if e.name not in allowed and e.is_symlink()]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _links_below(gdir: Path, rel: str) -> list[str]:
    """The symlinks in the tree `gdir/rel`, itself included (never descending into one)."""
    if os.path.islink(gdir / rel):
        return [rel]
    found: list[str] = []
    todo = [rel]
    while todo:
        here = todo.pop()
        try:
            with os.scandir(gdir / here) as it:
                for entry in it:
                    child = f"{here}/{entry.name}"
                    if entry.is_symlink():
                        found.append(child)
                    elif entry.is_dir(follow_symlinks=False):
                        todo.append(child)
        except (FileNotFoundError, NotADirectoryError):
            continue
    return found
