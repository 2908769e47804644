"""The repository: where it is, what state it is in, and the diffs the reviewer and the committer work on.

We drive the `git` executable directly (GitPython's command layer is the same subprocess underneath, but we need
per-call environments, e.g. a private GIT_INDEX_FILE, stdin input and exact byte output), always through
`hostgit`, which keeps configuration the sandbox could have planted from running anything. Every user-facing
failure is a `VcsError` with one paragraph saying what is wrong and what to do about it.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from coder.base.errors import CoderError
from coder.host import CompletedProcess
from coder.host import git as hostgit

#: the tree every repository knows: what `git hash-object -t tree /dev/null` gives
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class VcsError(CoderError):
    """A git operation cannot be done in the repository's current state (message says why and what to do)."""


class NotARepository(VcsError):
    """The path is not inside a git work tree: a usage error."""

    exit_code = 2


class UnknownRevision(VcsError):
    """A revision the user named does not exist: a usage error."""

    exit_code = 2


class GitCommandError(VcsError):
    """`git` itself failed; the message carries its stderr."""


def git_executable() -> str:
    try:
        return hostgit.git_path()
    except FileNotFoundError as exc:
        raise VcsError(str(exc)) from None


def run_git(
    root: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    input: bytes | str | None = None,
    check: bool = True,
    text: bool = True,
) -> CompletedProcess:
    """Run host git in `root`, hardened (coder/host/git.py), with `env` added; raise GitCommandError on
    failure when `check`."""
    git_executable()
    try:
        proc = hostgit.run(root, args, env=env, input=input, text=text)
    except hostgit.PlantedGitDir as exc:
        raise VcsError(str(exc)) from None
    if check and proc.returncode != 0:
        stderr = proc.stderr if text else proc.stderr.decode(errors="replace")
        raise GitCommandError(f"git {' '.join(args[:3])} failed (exit {proc.returncode}): {stderr.strip()}")
    return proc


def find_repo(path: Path | str) -> Path | None:
    """The top of the work tree containing `path`, or None when `path` is not inside one (bare repos too).

    The top is the nearest folder at or above `path` holding a `.git` entry (`hostgit.repo_top`), never what a
    `core.worktree` says: that could name any host folder, which would then become coder's workspace, mounted
    read-write in the sandbox. Host git runs with GIT_DIR/GIT_WORK_TREE pinned there, so git agrees; if it ever
    did not, that is refused rather than guessed. Every frontend (sessions, `coder review`, `coder trust`) and the
    commit and checkpoint code find the repository here."""
    start = Path(path)
    if not start.exists():
        return None
    if start.is_file():
        start = start.parent
    top = hostgit.repo_top(start)
    if top is None:
        return None
    proc = run_git(top, "rev-parse", "--show-toplevel", check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    found = Path(proc.stdout.strip()).resolve()
    if found != top:
        raise VcsError(
            f"git puts the work tree of the repository at {top} in {found}, which is not {start} or a folder above "
            "it (a `core.worktree` setting?). coder will not work there; check the repository's git config.")
    return top


def require_repo(path: Path | str) -> Path:
    root = find_repo(path)
    if root is None:
        raise NotARepository(
            f"{path} is not inside a git repository. Run `git init` there first (coder needs git for "
            "checkpoints, review and commits)."
        )
    return root


def git_dir(root: Path) -> Path:
    """The repository's private git dir (per worktree)."""
    out = run_git(root, "rev-parse", "--absolute-git-dir").stdout.strip()
    return Path(out)


@dataclass
class RepoState:
    """What a commit needs to know about the repository before touching it."""

    root: Path
    branch: str | None  # None when HEAD is detached
    head: str | None  # None on an unborn branch (no commit yet)
    operations: list[str] = field(default_factory=list)  # "merge", "rebase", "cherry-pick", "revert", "bisect"

    @property
    def detached(self) -> bool:
        return self.branch is None

    @property
    def busy(self) -> bool:
        return bool(self.operations)


_OPERATION_MARKERS = {
    "merge": ("MERGE_HEAD",),
    "rebase": ("rebase-merge", "rebase-apply"),
    "cherry-pick": ("CHERRY_PICK_HEAD",),
    "revert": ("REVERT_HEAD",),
    "bisect": ("BISECT_LOG",),
}

_OPERATION_ADVICE = {
    "merge": "finish it (`git commit`) or abort it (`git merge --abort`)",
    "rebase": "finish it (`git rebase --continue`) or abort it (`git rebase --abort`)",
    "cherry-pick": "finish it (`git cherry-pick --continue`) or abort it (`git cherry-pick --abort`)",
    "revert": "finish it (`git revert --continue`) or abort it (`git revert --abort`)",
    "bisect": "end it (`git bisect reset`)",
}


def repo_state(root: Path) -> RepoState:
    gdir = git_dir(root)
    branch_proc = run_git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False)
    branch = branch_proc.stdout.strip() if branch_proc.returncode == 0 else None
    head_proc = run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    head = head_proc.stdout.strip() if head_proc.returncode == 0 else None
    # rebase-merge/-apply live in the common dir's worktree-specific part: gdir is already per worktree
    operations = [op for op, markers in _OPERATION_MARKERS.items() if any((gdir / m).exists() for m in markers)]
    return RepoState(root=root, branch=branch, head=head, operations=operations)


def check_can_commit(root: Path, allow_detached: bool = False) -> RepoState:
    """Raise a VcsError naming the problem when a commit must not happen now; return the state otherwise."""
    state = repo_state(root)
    for op in state.operations:
        raise VcsError(
            f"A {op} is in progress in {root}; coder will not commit in the middle of it. "
            f"First {_OPERATION_ADVICE[op]}."
        )
    if state.detached and not allow_detached:
        raise VcsError(
            f"HEAD is detached in {root} (no branch is checked out), so a commit would be easy to lose. "
            "Check out a branch, or pass a branch name (`--branch NAME`) to commit on a new one."
        )
    return state


def has_changes(root: Path) -> bool:
    """True when the work tree or index differs from HEAD, counting untracked files that are not ignored."""
    out = run_git(root, "status", "--porcelain=v1", "--untracked-files=all").stdout
    return bool(out.strip())


@contextmanager
def temp_index(root: Path, seed_from_user_index: bool = False) -> Iterator[dict[str, str]]:
    """A private index file for plumbing work; yields the env to pass to run_git.

    Seeding it from the user's index only copies bytes (their stat cache makes `git add -A` fast); the user's
    index itself is never written."""
    with tempfile.TemporaryDirectory(prefix="coder-index-") as tmp:
        path = Path(tmp) / "index"
        if seed_from_user_index:
            copy_index(git_dir(root) / "index", path)
        yield {"GIT_INDEX_FILE": str(path)}


def copy_index(user_index: Path, dest: Path) -> bool:
    """Copy the user's index to `dest`, keeping its mtime (git's racy-entry check depends on it); False when there
    is none. Opened without following a link and without blocking: the sandbox can write the git dir, and a link
    there must not make coder read a host file, nor a FIFO hang it."""
    try:
        fd = os.open(user_index, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as src:
        st = os.fstat(src.fileno())
        if not stat.S_ISREG(st.st_mode):
            return False
        with open(dest, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns))
    return True


def large_untracked(root: Path, max_bytes: int) -> list[str]:
    """Untracked, not ignored files bigger than `max_bytes` (datasets, downloads: not worth snapshotting)."""
    out = run_git(root, "ls-files", "--others", "--exclude-standard", "-z").stdout
    big = []
    for rel in filter(None, out.split("\0")):
        try:
            if (root / rel).stat().st_size > max_bytes:
                big.append(rel)
        except OSError:
            continue
    return big


def worktree_tree(root: Path, exclude: list[str] | None = None) -> str:
    """The tree object of the work tree as it is now: tracked and untracked-not-ignored files, deletions applied.

    Written with a private index, so neither the user's index nor any ref changes. `exclude` leaves those
    untracked paths out. Gitlinks stay as the user's index has them and embedded repositories are left out:
    a checkpoint could not restore another repository's commit anyway, and `git add` on a submodule runs git
    inside it (with whatever config the sandbox wrote there)."""
    with temp_index(root, seed_from_user_index=True) as env:
        if not (git_dir(root) / "index").exists():
            head = run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{tree}", check=False).stdout.strip()
            if head:
                run_git(root, "read-tree", head, env=env)
        known = gitlinks(root, env)  # hostgit keeps `add` away from them
        specs = ["."] + [f":(exclude,literal){p}" for p in exclude or []]
        run_git(root, "add", "-A", "--", *specs, env=env)
        embedded = sorted(set(gitlinks(root, env)) - set(known))
        if embedded:
            run_git(root, "update-index", "--force-remove", "-z", "--stdin", env=env,
                    input="".join(p + "\0" for p in embedded))
        return run_git(root, "write-tree", env=env).stdout.strip()


def gitlinks(root: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Submodules and embedded repositories in the index (`env` may name a private one): path -> commit."""
    return hostgit.parse_gitlinks(run_git(root, "ls-files", "--stage", "-z", env=env).stdout)


def resolve_tree(root: Path, rev: str | None) -> str:
    """The tree of `rev` (a commit, tag or tree); the empty tree for None or an unborn HEAD."""
    if rev is None:
        return EMPTY_TREE
    proc = run_git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{tree}}", check=False)
    if proc.returncode != 0:
        if rev == "HEAD":
            return EMPTY_TREE
        raise UnknownRevision(f"{rev!r} is not a commit or tree in {root} (check the name with `git log --oneline`).")
    return proc.stdout.strip()


def resolve_commit(root: Path, rev: str) -> str:
    proc = run_git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if proc.returncode != 0:
        raise UnknownRevision(f"{rev!r} is not a commit in {root} (check the name with `git log --oneline`).")
    return proc.stdout.strip()


_DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "-U3")


def diff_trees(root: Path, old_tree: str, new_tree: str, paths: list[str] | None = None) -> str:
    args = ["diff", *_DIFF_FLAGS, old_tree, new_tree]
    if paths:
        args += ["--", *paths]
    return run_git(root, *args).stdout


def diff(
    root: Path,
    base: str | None = None,
    staged: bool = False,
    commit: str | None = None,
    include_untracked: bool = True,
) -> str:
    """The unified diff to review or commit.

    - `commit`: what that commit changed (against its first parent; a root commit against the empty tree);
    - `staged`: the index against `base` (default HEAD), like `git diff --cached`;
    - otherwise the work tree against `base` (default HEAD), new untracked files included (plain `git diff`
      leaves them out, and an agent's new files are exactly what a review must see).
    """
    if commit is not None:
        sha = resolve_commit(root, commit)
        parent = run_git(root, "rev-parse", "--verify", "--quiet", f"{sha}^1", check=False).stdout.strip()
        return diff_trees(root, resolve_tree(root, parent) if parent else EMPTY_TREE, resolve_tree(root, sha))
    base_tree = resolve_tree(root, base or "HEAD")
    if staged:
        index_tree = run_git(root, "write-tree", check=False)
        if index_tree.returncode != 0:
            raise VcsError(f"The index of {root} has unresolved conflicts; resolve them before reviewing it.")
        return diff_trees(root, base_tree, index_tree.stdout.strip())
    if include_untracked:
        return diff_trees(root, base_tree, worktree_tree(root))
    return run_git(root, "diff", *_DIFF_FLAGS, base_tree).stdout


def changed_paths(root: Path, old_tree: str, new_tree: str) -> list[str]:
    out = run_git(root, "diff", "--name-only", "--no-renames", "-z", old_tree, new_tree).stdout
    return [p for p in out.split("\0") if p]
