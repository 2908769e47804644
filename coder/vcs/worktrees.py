"""Isolated trees for agents that write: a checkout of the parent's work tree in a folder of coder's own, whose
result comes back as a patch that is reviewed and merged three ways, or discarded.

Decided in docs/decisions/36-parallel-agents.md ("Isolation"). In short:
- The tree is not a linked worktree of the user's repository (nothing is registered in its `.git/worktrees`, no
  branch is added to it): it is a repository of its own in coder's state folder, whose object store borrows the
  user's (`objects/info/alternates`), with one branch, `coder/<name>`, at the base commit. So `git status`, `git
  diff` and `git log` work inside it, and a crash leaves nothing the user's git trips over: at worst a folder in
  coder's state folder (swept at the next start) and a hidden ref under the session's `refs/coder/<session>/`
  (pruned with its checkpoints).
- The base commit holds the parent's work tree as it is when the agent starts, uncommitted and untracked (not
  ignored) files included: HEAD itself when the tree equals it, else a commit on top of HEAD.
- The result is read on the host once the agent's sandbox is gone: the tree's files are hashed into the *user's*
  object store (host git with the user's git dir and the isolated tree as work tree, hardened like every host git
  command: the tree was shaped by sandboxed code), so the merge and the review run in the user's repository and
  nothing is ever read from the isolated tree's own git dir.
- The merge is `git merge-tree --write-tree` of the parent's tree now against the agent's, both on top of the
  base: all or nothing. A conflict writes nothing and is shown (the paths, git's messages and the conflicting
  hunks); a clean merge is written into the work tree beneath it without following links (coder/vcs/
  restore_files.py), protected paths left alone and reported.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from coder.host import git as hostgit
from coder.vcs.checkpoints import OWN_FOLDER, REF_ROOT
from coder.vcs.repo import (
    EMPTY_TREE,
    VcsError,
    changed_paths,
    diff_trees,
    gitlinks,
    large_untracked,
    run_git,
    temp_index,
    worktree_tree,
)
from coder.vcs.restore_files import RestoreBlocked, apply_tree

#: untracked files above this size stay out of a base and a result, as out of checkpoints
MAX_FILE_BYTES = 100 * 1024 * 1024
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_IDENTITY = {"GIT_AUTHOR_NAME": "coder", "GIT_AUTHOR_EMAIL": "coder@localhost",
             "GIT_COMMITTER_NAME": "coder", "GIT_COMMITTER_EMAIL": "coder@localhost"}
#: lines of conflicting hunks shown per file
CONFLICT_LINES = 40


class WorktreeError(VcsError):
    """An isolated tree cannot be made, read or merged (the message says why)."""


@dataclass
class IsolatedTree:
    """One agent's tree: `path` (its own repository), made from `base` (a commit of the user's repository at
    `root`), on branch `branch`; `ref` keeps the base and then the result alive in the user's repository."""

    root: Path
    path: Path
    branch: str
    base: str
    ref: str


@dataclass
class Conflict:
    path: str
    messages: list[str] = field(default_factory=list)
    hunks: str = ""  # the conflicting regions as git marks them (<<<<<<< parent / >>>>>>> agent)


@dataclass
class MergeOutcome:
    """What a merge did: `written`/`deleted` in the work tree, `protected` left alone, or `conflicts` (then
    nothing was written)."""

    merged: bool
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    nothing: bool = False  # the agent changed nothing: there was nothing to merge

    def summary(self) -> str:
        if self.nothing:
            return "nothing to merge: the agent changed no file"
        if not self.merged:
            lines = [f"not merged: {len(self.conflicts)} file(s) conflict with changes made here since the agent "
                     "started; nothing was written."]
            for conflict in self.conflicts:
                lines.append(f"- {conflict.path}: " + ("; ".join(conflict.messages) or "conflict"))
                if conflict.hunks:
                    lines.append(conflict.hunks)
            return "\n".join(lines)
        if not self.written and not self.deleted and not self.protected:
            return "merged: the work tree has these changes already; nothing to write"
        text = f"merged: {len(self.written)} file(s) written, {len(self.deleted)} deleted"
        if self.protected:
            text += f"; protected file(s) left as they are (apply them yourself): {', '.join(self.protected)}"
        return text


def base_commit(root: Path) -> str:
    """A commit of the work tree of `root` as it is now: HEAD when the tree equals HEAD's, else a commit on top
    of HEAD (parentless on an unborn branch) holding the uncommitted and untracked, not ignored, files."""
    tree = _tree_of(root)
    head = run_git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False).stdout.strip()
    if head and run_git(root, "rev-parse", f"{head}^{{tree}}").stdout.strip() == tree:
        return head
    parents = ["-p", head] if head else []
    return run_git(root, "commit-tree", tree, *parents, input="coder: the work tree when an agent started\n",
                   env=_IDENTITY).stdout.strip()


def create(root: Path, base: str, dest: Path, name: str, session_id: str) -> IsolatedTree:
    """Make the isolated tree of agent `name` at `dest` (which must not exist), checked out at `base`."""
    if not _NAME_RE.match(name) or not _NAME_RE.match(session_id):
        raise WorktreeError(f"{name!r} / {session_id!r} cannot name a branch and a ref (letters, digits, . _ -)")
    if os.path.lexists(dest):
        raise WorktreeError(f"{dest} exists already; an isolated tree needs a folder of its own")
    objects = objects_dir(root)
    dest.mkdir(parents=True)
    branch = f"coder/{name}"
    ref = f"{REF_ROOT}/{session_id}/agents/{name}"
    try:
        run_git(dest, "init", "-q", "--template=", str(dest))
        (dest / ".git" / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (dest / ".git" / "objects" / "info" / "alternates").write_text(f"{objects}\n", encoding="utf-8")
        run_git(dest, "update-ref", f"refs/heads/{branch}", base)
        run_git(dest, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
        run_git(dest, "reset", "-q", "--hard", base)
        run_git(root, "update-ref", "--no-deref", ref, base)
    except BaseException:
        remove_tree(dest)
        raise
    return IsolatedTree(root, dest, branch, base, ref)


def objects_dir(root: Path) -> Path:
    """The object store of the repository at `root` (its common dir's, for a linked worktree): what an isolated
    tree borrows, and what its sandbox must be able to read."""
    path = run_git(root, "rev-parse", "--git-path", "objects").stdout.strip()
    return Path(os.path.realpath(root / path))


def result_commit(tree: IsolatedTree) -> str:
    """The isolated tree's files as a commit on top of its base, hashed into the user's repository (see the module
    docstring); the session's ref for the agent moves to it. Call it only when nothing runs in the tree any more."""
    result_tree = _tree_of(tree.root, tree.path, tree.base)
    base_tree = run_git(tree.root, "rev-parse", f"{tree.base}^{{tree}}").stdout.strip()
    if result_tree == base_tree:
        commit = tree.base
    else:
        commit = run_git(tree.root, "commit-tree", result_tree, "-p", tree.base,
                         input=f"coder: the result of agent {tree.branch}\n", env=_IDENTITY).stdout.strip()
    run_git(tree.root, "update-ref", "--no-deref", tree.ref, commit)
    return commit


def patch(root: Path, base: str, result: str) -> str:
    """The unified diff from `base` to `result` (commits of the user's repository)."""
    return diff_trees(root, _tree(root, base), _tree(root, result))


def changed(root: Path, base: str, result: str) -> list[str]:
    return changed_paths(root, _tree(root, base), _tree(root, result))


def merge(root: Path, base: str, result: str, ours_tree: str | None = None) -> MergeOutcome:
    """Merge the agent's `result` into the work tree of `root`, whose state is `ours_tree` (a tree of the work tree
    now; taken here when None). All or nothing: conflicts write nothing."""
    if _tree(root, base) == _tree(root, result):
        return MergeOutcome(True, nothing=True)
    ours_tree = ours_tree or _tree_of(root)
    ours = run_git(root, "commit-tree", ours_tree, "-p", base, input="coder: the work tree before a merge\n",
                   env=_IDENTITY).stdout.strip()
    proc = run_git(root, "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages", ours, result,
                   check=False)
    if proc.returncode not in (0, 1):
        raise WorktreeError(f"git merge-tree failed (exit {proc.returncode}): {proc.stderr.strip()}")
    merged_tree = proc.stdout.split("\0", 1)[0]
    if proc.returncode == 1:
        return MergeOutcome(False, conflicts=_conflicts(root, ours, result, merged_tree))
    paths = changed_paths(root, ours_tree, merged_tree)
    try:
        written, deleted, protected = apply_tree(root, merged_tree, paths)
    except RestoreBlocked as exc:
        raise WorktreeError(str(exc)) from None
    return MergeOutcome(True, written, deleted, protected)


def _conflicts(root: Path, ours: str, result: str, merged_tree: str) -> list[Conflict]:
    """The conflicts of a merge, with git's messages and the marked regions of each text file."""
    proc = run_git(root, "merge-tree", "--write-tree", "--name-only", "-z", ours, result, check=False)
    fields = proc.stdout.split("\0")
    names: list[str] = []
    i = 1
    while i < len(fields) and fields[i]:
        names.append(fields[i])
        i += 1
    conflicts = {name: Conflict(name) for name in dict.fromkeys(names)}
    i += 1
    while i < len(fields) - 1:  # messages: <count> NUL <path>... NUL <type> NUL <message> NUL
        try:
            count = int(fields[i])
        except ValueError:
            break
        paths = fields[i + 1:i + 1 + count]
        message = fields[i + 2 + count] if i + 2 + count < len(fields) else ""
        kind = fields[i + 1 + count] if i + 1 + count < len(fields) else ""
        i += 3 + count
        if not kind.startswith("CONFLICT"):
            continue
        for path in paths:
            conflicts.setdefault(path, Conflict(path)).messages.append(message.strip())
    for conflict in conflicts.values():
        conflict.hunks = _marked_regions(root, merged_tree, conflict.path)
    return list(conflicts.values())


def _marked_regions(root: Path, tree: str, path: str) -> str:
    """The lines between git's conflict markers in `tree`'s version of `path`, at most CONFLICT_LINES."""
    blob = run_git(root, "cat-file", "-p", f"{tree}:{path}", check=False)
    if blob.returncode != 0 or "\0" in blob.stdout:
        return ""
    shown: list[str] = []
    inside = False
    for line in blob.stdout.splitlines():
        if line.startswith("<<<<<<< "):
            inside = True
            line = "<<<<<<< here (the parent)"
        elif line.startswith(">>>>>>> ") and inside:
            inside = False
            shown.append(">>>>>>> the agent")
            continue
        if inside:
            shown.append(line)
    if len(shown) > CONFLICT_LINES:
        shown = shown[:CONFLICT_LINES] + [f"... ({len(shown) - CONFLICT_LINES} more lines)"]
    return "\n".join("    " + line for line in shown)


def forget(tree: IsolatedTree) -> None:
    """Remove the tree's folder and its ref (merged, discarded, or its session ended)."""
    run_git(tree.root, "update-ref", "-d", tree.ref, check=False)
    remove_tree(tree.path)


def remove_tree(path: Path) -> None:
    """Delete a folder that sandboxed code wrote: read-only folders are made writable first, links are removed,
    never followed."""
    if not os.path.lexists(path):
        return

    def fix(function, failed: str, _exc) -> None:
        parent = os.path.dirname(failed)
        for each in (parent, failed):
            try:
                st = os.lstat(each)
                if stat.S_ISDIR(st.st_mode):
                    os.chmod(each, st.st_mode | stat.S_IRWXU)
            except OSError:
                pass
        try:
            function(failed)
        except FileNotFoundError:
            pass

    shutil.rmtree(path, onerror=fix)  # onerror: Python 3.11 has no onexc


def _tree(root: Path, commit: str) -> str:
    return run_git(root, "rev-parse", f"{commit}^{{tree}}").stdout.strip() if commit else EMPTY_TREE


def _tree_of(root: Path, work_tree: Path | None = None, base: str = "") -> str:
    """The tree of `work_tree` (default: the work tree of `root`) in the object store of `root`, with the
    exclusions of checkpoints (coder's own folder, large untracked files).

    For another work tree, host git runs there with the user's git dir pinned (`hostgit.pinned_repo(root)`) and a
    private index holding `base` (its gitlinks stay as they are, since host git never adds a known one): every
    file is hashed, nothing is read from the tree's own git dir, and as in `worktree_tree` an embedded repository
    the agent made is left out (git would record its HEAD as a gitlink)."""
    if work_tree is None:
        return worktree_tree(root, large_untracked(root, MAX_FILE_BYTES) + [OWN_FOLDER])
    pinned = {**hostgit.pinned_repo(root), "GIT_WORK_TREE": str(work_tree)}
    with temp_index(root) as env:
        env = {**env, **pinned}
        run_git(work_tree, "read-tree", base, env=env)
        known = set(gitlinks(work_tree, env))
        big = [f":(exclude,literal){p}" for p in _large_files(work_tree, env)]
        run_git(work_tree, "add", "-A", "--", ".", f":(exclude,literal){OWN_FOLDER}", *big, env=env)
        embedded = sorted(set(gitlinks(work_tree, env)) - known)
        if embedded:
            run_git(work_tree, "update-index", "--force-remove", "-z", "--stdin", env=env,
                    input="".join(p + "\0" for p in embedded))
        return run_git(work_tree, "write-tree", env=env).stdout.strip()


def _large_files(work_tree: Path, env: dict[str, str]) -> list[str]:
    out = run_git(work_tree, "ls-files", "--others", "--exclude-standard", "-z", env=env).stdout
    big = []
    for rel in filter(None, out.split("\0")):
        try:
            if os.lstat(work_tree / rel).st_size > MAX_FILE_BYTES:
                big.append(rel)
        except OSError:
            continue
    return big
