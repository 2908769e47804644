"""Directory listing for `view`: two levels deep, without git-ignored files.

Inside a git work tree the file list comes from `git ls-files --cached --others --exclude-standard` (what the
user sees as the project); elsewhere a walk honours .gitignore files with a small matcher and always skips
`.git`. Large folders are summarised so a listing never floods the context."""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path

MAX_PER_DIR = 60
MAX_ENTRIES = 400
ALWAYS_SKIP = {".git"}


def _git_files(folder: Path) -> list[str] | None:
    try:
        proc = subprocess.run(["git", "-C", str(folder), "ls-files", "-z", "--cached", "--others",
                               "--exclude-standard"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return [n for n in names if os.path.lexists(folder / n)]


class _Ignore:
    """A small .gitignore matcher: globs, `/`-anchored, dir-only `/` suffix, `!` negation, `**`."""

    def __init__(self) -> None:
        self.rules: list[tuple[Path, str, bool, bool]] = []  # (base, pattern, negated, dir_only)

    def load(self, folder: Path) -> None:
        path = folder / ".gitignore"
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        for line in lines:
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


def _walk_files(folder: Path, depth: int = 2) -> list[str]:
    ignore = _Ignore()
    parent = folder
    chain = []
    while True:  # .gitignore files of enclosing folders count too
        chain.append(parent)
        if parent.parent == parent:
            break
        parent = parent.parent
    for p in reversed(chain):
        ignore.load(p)
    out: list[str] = []

    def walk(current: Path, level: int) -> None:
        ignore.load(current) if current != folder else None
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name in ALWAYS_SKIP:
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            path = Path(entry.path)
            if ignore.ignored(path, is_dir):
                continue
            rel = path.relative_to(folder).as_posix()
            if is_dir:
                if level < depth:
                    before = len(out)
                    walk(path, level + 1)
                    if len(out) == before:
                        out.append(rel + "/")
                else:
                    out.append(rel + "/")
            else:
                out.append(rel)

    walk(folder, 1)
    return out


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def list_directory(folder: Path, display: str) -> str:
    """The text of a `view` on a directory."""
    files = _git_files(folder)
    source = "git ls-files (ignored files skipped)"
    if files is None:
        files = _walk_files(folder)
        source = ".gitignore rules applied"
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
