"""What the reviewer's linter reads, exported from git's objects into a private folder.

ruff runs on the host (it reads the repository's own configuration and never executes it), and it opens files by
name: the changed files, then every `pyproject.toml` / `ruff.toml` in their folders and above. Run in the
workspace, a FIFO that a sandboxed command left under one of those names blocked every review round until the
timeout (and a link could point it anywhere). So it runs in a folder of ours instead, holding exactly the patched
tree's versions of those files as plain files (a symlink or submodule in the tree is left out), plus the names at
the top and in `src/` as empty placeholders: ruff tells first-party imports from third-party ones by them.

Cost: three git commands (two listings and one `cat-file --batch` for every file), whatever the repository's size.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from coder.vcs.repo import run_git

REGULAR_MODES = ("100644", "100755")


def _listing(root: Path, tree: str, paths: list[str]) -> list[tuple[str, str, str]]:
    """(mode, kind, path) of the entries `git ls-tree` lists for `paths` in `tree`."""
    out = run_git(root, "ls-tree", "-z", tree, "--", *paths).stdout if paths else ""
    entries = []
    for record in filter(None, out.split("\0")):
        meta, _, path = record.partition("\t")
        mode, kind = meta.split()[:2]
        entries.append((mode, kind, path))
    return entries


def _blobs(root: Path, tree: str, paths: list[str]) -> dict[str, bytes]:
    """The contents of `paths` in `tree`, read by one `git cat-file --batch`."""
    specs = [p for p in paths if "\n" not in p]
    if not specs:
        return {}
    out = run_git(root, "cat-file", "--batch", input="".join(f"{tree}:{p}\n" for p in specs).encode(),
                  text=False).stdout
    blobs: dict[str, bytes] = {}
    pos = 0
    for path in specs:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) != 3 or header[1] != b"blob":
            continue  # "missing"
        size = int(header[2])
        blobs[path] = out[pos:pos + size]
        pos += size + 1
    return blobs


def export_for_lint(root: Path, tree: str, paths: list[str], config_names: tuple[str, ...], into: Path) -> Path:
    """Fill `into` with `paths` and the `config_names` files of their folders and every folder above (regular
    files of `tree` only), and placeholders for the names at the top and in `src/`. Returns `into`."""
    folders: set[PurePosixPath] = set()
    for path in paths:
        folders.update(PurePosixPath(path).parents)
    wanted = set(paths) | {str(folder / name) for folder in folders for name in config_names}
    regular = [path for mode, kind, path in _listing(root, tree, sorted(wanted))
               if kind == "blob" and mode in REGULAR_MODES and path in wanted]
    for mode, kind, path in _listing(root, tree, [".", "src/"]):
        if "/" in path and not path.startswith("src/"):
            continue
        placeholder = into / path
        if kind == "tree":
            placeholder.mkdir(parents=True, exist_ok=True)
        elif kind == "blob" and mode in REGULAR_MODES and path not in wanted:
            placeholder.parent.mkdir(parents=True, exist_ok=True)
            placeholder.touch()
    for path, data in _blobs(root, tree, regular).items():
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return into
