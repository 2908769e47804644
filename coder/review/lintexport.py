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

from coder.vcs.repo import Repo

REGULAR_MODES = ("100644", "100755")


def export_for_lint(repo: Repo, tree: str, paths: list[str], config_names: tuple[str, ...], into: Path) -> Path:
    """Fill `into` with `paths` and the `config_names` files of their folders and every folder above (regular
    files of `tree` only), and placeholders for the names at the top and in `src/`. Returns `into`."""
    folders: set[PurePosixPath] = set()
    for path in paths:
        folders.update(PurePosixPath(path).parents)
    wanted = set(paths) | {str(folder / name) for folder in folders for name in config_names}
    listed = repo.tree_entries(tree, sorted(wanted)) if wanted else []
    regular = [e.path for e in listed if e.kind == "blob" and e.mode in REGULAR_MODES and e.path in wanted]
    for entry in repo.tree_entries(tree, [".", "src/"]):
        if "/" in entry.path and not entry.path.startswith("src/"):
            continue
        placeholder = into / entry.path
        if entry.kind == "tree":
            placeholder.mkdir(parents=True, exist_ok=True)
        elif entry.kind == "blob" and entry.mode in REGULAR_MODES and entry.path not in wanted:
            placeholder.parent.mkdir(parents=True, exist_ok=True)
            placeholder.touch()
    for path, data in repo.blobs(tree, regular).items():
        target = into / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return into
