"""Directory listing for `view`: two levels deep, without git-ignored files.

The names come from a walk beneath a handle on the workspace (`coder.fs.beneath`): directory fds opened one
component at a time, never into a symlink, so a folder the sandbox swaps for a link to the host during the
listing can never show host names. Which names are ignored: inside a git work tree `git check-ignore` (tracked
files are never ignored, as in `git ls-files --exclude-standard`); elsewhere a small .gitignore matcher. Large
folders are summarised so a listing never floods the context."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable
from pathlib import Path

from coder.edit.paths import Loc
from coder.fs.beneath import EscapeError, WorkspaceFS
from coder.host import TimeoutExpired
from coder.host import git as hostgit

MAX_PER_DIR = 60
MAX_ENTRIES = 400
#: entries looked at by one listing walk (a huge untracked tree is cut, not walked whole)
MAX_WALK = 20_000
ALWAYS_SKIP = {".git"}

#: given (workspace-relative path, is_dir) pairs, the paths that are ignored
IgnoreCheck = Callable[[list[tuple[str, bool]]], set[str]]


def _in_git(root: Path) -> bool:
    try:
        proc = hostgit.run(root, ["rev-parse", "--is-inside-work-tree"], text=False, timeout=30)
    except (OSError, TimeoutExpired):
        return False
    return proc.returncode == 0 and proc.stdout.strip() == b"true"


def _git_ignored(root: Path) -> IgnoreCheck:
    """`git check-ignore` run at the workspace root (never in a folder the sandbox controls), through the
    hardened host git (coder/host/git.py)."""

    def check(batch: list[tuple[str, bool]]) -> set[str]:
        if not batch:
            return set()
        names = [rel + ("/" if is_dir else "") for rel, is_dir in batch]
        try:
            proc = hostgit.run(root, ["check-ignore", "--stdin", "-z"], text=False, timeout=60,
                               input="\0".join(names).encode("utf-8", "surrogateescape") + b"\0")
        except (OSError, TimeoutExpired):
            return set()
        out = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
        return {n.rstrip("/") for n in out if n}

    return check


class _Ignore:
    """A small .gitignore matcher: globs, `/`-anchored, dir-only `/` suffix, `!` negation, `**`."""

    def __init__(self) -> None:
        self.rules: list[tuple[Path, str, bool, bool]] = []  # (base, pattern, negated, dir_only)

    def load(self, folder: Path, text: str) -> None:
        for line in text.splitlines():
            line = line.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line[1:] if negated else line
            dir_only = line.endswith("/")
            self.rules.append((folder, line.rstrip("/"), negated, dir_only))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        result = False
        for base, pattern, negated, dir_only in self.rules:
            if dir_only and not is_dir:
                continue
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            anchored = "/" in pattern.strip("/")
            pat = pattern.lstrip("/")
            if anchored:
                hit = fnmatch.fnmatchcase(rel, pat) or fnmatch.fnmatchcase(rel, pat.replace("**/", ""))
            else:
                hit = fnmatch.fnmatchcase(path.name, pat)
            if hit:
                result = not negated
        return result


def _plain_ignored(fs: WorkspaceFS, folder: str) -> IgnoreCheck:
    """The .gitignore matcher outside git: enclosing folders' files (those above the workspace are read by
    path: the sandbox cannot write there), then each walked folder's, read beneath the workspace."""
    ignore = _Ignore()
    chain, parent = [], (fs.root / folder if folder else fs.root).parent
    while True:
        chain.append(parent)
        if parent.parent == parent:
            break
        parent = parent.parent
    for p in reversed(chain):
        if fs.root == p or fs.root in p.parents:
            continue  # inside: loaded beneath, below
        try:
            ignore.load(p, (p / ".gitignore").read_text(encoding="utf-8", errors="replace"))
        except OSError:
            pass
    parts = folder.split("/") if folder else []
    for i in range(len(parts) + 1):
        _load_beneath(ignore, fs, "/".join(parts[:i]))
    loaded = {"/".join(parts[:i]) for i in range(len(parts) + 1)}

    def check(batch: list[tuple[str, bool]]) -> set[str]:
        for rel, _ in batch:
            parent_rel = rel.rpartition("/")[0]
            if parent_rel not in loaded:
                loaded.add(parent_rel)
                _load_beneath(ignore, fs, parent_rel)
        return {rel for rel, is_dir in batch if ignore.ignored(fs.root / rel, is_dir)}

    return check


def _load_beneath(ignore: _Ignore, fs: WorkspaceFS, rel: str) -> None:
    try:
        raw, _ = fs.read_file(f"{rel}/.gitignore" if rel else ".gitignore", 1 << 20)
    except (OSError, EscapeError):
        return
    ignore.load(fs.root / rel if rel else fs.root, raw.decode("utf-8", "replace"))


def _walk_files(fs: WorkspaceFS, folder: str, ignored: IgnoreCheck, depth: int = 3) -> list[str]:
    """Files (and `dir/` for folders not descended or empty) under `folder`, relative to it, `depth` levels
    deep (one more than shown, for the per-folder counts), a level at a time so each level's ignore check is
    one batch."""
    out: list[str] = []
    level = [folder]
    seen = 0
    for n in range(1, depth + 1):
        batch: list[tuple[str, bool]] = []
        for current in level:
            try:
                entries = sorted(fs.listdir(current))
            except (OSError, EscapeError):
                continue
            for name, kind in entries:
                if name in ALWAYS_SKIP:
                    continue
                batch.append((f"{current}/{name}" if current else name, kind == "dir"))
            seen += len(entries)
            if seen > MAX_WALK:
                break
        skip = ignored(batch)
        level = []
        for rel, is_dir in batch:
            if rel in skip:
                continue
            shown = rel[len(folder) + 1:] if folder else rel
            if is_dir and n < depth:
                level.append(rel)
                out.append(shown + "/")  # dropped again below when the folder turns out to have entries
            else:
                out.append(shown + "/" if is_dir else shown)
    parents: set[str] = set()
    for name in out:
        parent = name.rstrip("/").rpartition("/")[0]
        while parent and parent + "/" not in parents:
            parents.add(parent + "/")
            parent = parent.rpartition("/")[0]
    return [name for name in out if name not in parents]


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def list_directory(loc: Loc, display: str) -> str:
    """The text of a `view` on the located directory."""
    if _in_git(loc.fs.root):
        ignored, source = _git_ignored(loc.fs.root), "git-ignored files skipped"
    else:
        ignored, source = _plain_ignored(loc.fs, loc.rel), ".gitignore rules applied"
    files = _walk_files(loc.fs, loc.rel, ignored)
    top: dict[str, dict[str, int]] = {}
    top_files: list[str] = []
    for name in files:
        parts = name.rstrip("/").split("/")
        if parts[0] in ALWAYS_SKIP:
            continue
        if len(parts) == 1 and not name.endswith("/"):
            top_files.append(parts[0])
            continue
        children = top.setdefault(parts[0], {})
        if len(parts) >= 2:
            key = parts[1] + ("/" if len(parts) > 2 or name.endswith("/") else "")
            children[key] = children.get(key, 0) + 1
    lines = [f"Files and directories up to 2 levels deep in {display} ({source}):"]
    count = 0
    for name in sorted(set(top) | set(top_files)):
        if count >= MAX_ENTRIES:
            lines.append(f"... (listing cut at {MAX_ENTRIES} entries; view a subdirectory)")
            break
        if name in top:
            children = top[name]
            total = sum(children.values())
            lines.append(f"{name}/" + (f"  ({_files(total)})" if total > len(children) else ""))
            shown = sorted(children)
            for child in shown[:MAX_PER_DIR]:
                nested = children[child]
                lines.append(f"  {name}/{child}" + (f"  ({_files(nested)})" if child.endswith("/") else ""))
                count += 1
            if len(shown) > MAX_PER_DIR:
                lines.append(f"  ... and {len(shown) - MAX_PER_DIR} more in {name}/")
        else:
            lines.append(name)
        count += 1
    if len(lines) == 1:
        lines.append("(empty)")
    return "\n".join(lines)
