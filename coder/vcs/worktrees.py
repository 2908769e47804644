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

from coder.vcs.checkpoints import REF_ROOT
from coder.vcs.errors import VcsError
from coder.vcs.repo import CODER_IDENTITY, OWN_FOLDER, Repo
from coder.vcs.restore_files import RestoreBlocked, apply_tree

#: untracked files above this size stay out of a base and a result, as out of checkpoints
MAX_FILE_BYTES = 100 * 1024 * 1024
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: lines of conflicting hunks shown per file
CONFLICT_LINES = 40


class WorktreeError(VcsError):
    """An isolated tree cannot be made, read or merged (the message says why)."""


@dataclass
class IsolatedTree:
    """One agent's tree: `path` (its own repository), made from `base` (a commit of the user's repository
    `repo`), on branch `branch`; `ref` keeps the base and then the result alive in the user's repository."""

    repo: Repo
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


def base_commit(repo: Repo) -> str:
    """A commit of the work tree of `repo` as it is now: HEAD when the tree equals HEAD's, else a commit on top
    of HEAD (parentless on an unborn branch) holding the uncommitted and untracked, not ignored, files."""
    tree = repo.snapshot_tree(MAX_FILE_BYTES)
    head = repo.resolve("HEAD^{commit}")
    if head and repo.resolve_tree(head) == tree:
        return head
    return repo.commit_tree(tree, [head] if head else [], "coder: the work tree when an agent started\n",
                            identity=CODER_IDENTITY)


def create(repo: Repo, base: str, dest: Path, name: str, session_id: str) -> IsolatedTree:
    """Make the isolated tree of agent `name` at `dest` (which must not exist), checked out at `base`."""
    if not _NAME_RE.match(name) or not _NAME_RE.match(session_id):
        raise WorktreeError(f"{name!r} / {session_id!r} cannot name a branch and a ref (letters, digits, . _ -)")
    if os.path.lexists(dest):
        raise WorktreeError(f"{dest} exists already; an isolated tree needs a folder of its own")
    objects = repo.objects_dir()
    dest.mkdir(parents=True)
    branch = f"coder/{name}"
    ref = f"{REF_ROOT}/{session_id}/agents/{name}"
    try:
        own = Repo.init(dest)
        (own.git_dir / "objects" / "info").mkdir(parents=True, exist_ok=True)
        (own.git_dir / "objects" / "info" / "alternates").write_text(f"{objects}\n", encoding="utf-8")
        own.update_ref(f"refs/heads/{branch}", base)
        own.point_head(f"refs/heads/{branch}")
        own.checkout_hard(base)
        repo.update_ref(ref, base, no_deref=True)
    except BaseException:
        remove_tree(dest)
        raise
    return IsolatedTree(repo, dest, branch, base, ref)


def result_commit(tree: IsolatedTree) -> str:
    """The isolated tree's files as a commit on top of its base, hashed into the user's repository (see the module
    docstring); the session's ref for the agent moves to it. Call it only when nothing runs in the tree any more."""
    repo = tree.repo
    result_tree = _tree_of(repo, tree.path, tree.base)
    commit = tree.base if result_tree == repo.resolve_tree(tree.base) else repo.commit_tree(
        result_tree, [tree.base], f"coder: the result of agent {tree.branch}\n", identity=CODER_IDENTITY)
    repo.update_ref(tree.ref, commit, no_deref=True)
    return commit


def patch(repo: Repo, base: str, result: str) -> str:
    """The unified diff from `base` to `result` (commits of the user's repository)."""
    return repo.diff_trees(repo.resolve_tree(base), repo.resolve_tree(result))


def changed(repo: Repo, base: str, result: str) -> list[str]:
    return repo.changed_paths(repo.resolve_tree(base), repo.resolve_tree(result))


def merge(repo: Repo, base: str, result: str, ours_tree: str | None = None) -> MergeOutcome:
    """Merge the agent's `result` into the work tree of `repo`, whose state is `ours_tree` (a tree of the work
    tree now; taken here when None). All or nothing: conflicts write nothing."""
    if repo.resolve_tree(base) == repo.resolve_tree(result):
        return MergeOutcome(True, nothing=True)
    ours_tree = ours_tree or repo.snapshot_tree(MAX_FILE_BYTES)
    ours = repo.commit_tree(ours_tree, [base], "coder: the work tree before a merge\n", identity=CODER_IDENTITY)
    clean, fields = repo.merge_tree(ours, result)
    merged_tree = fields[0]
    if not clean:
        return MergeOutcome(False, conflicts=_conflicts(repo, ours, result, merged_tree))
    paths = repo.changed_paths(ours_tree, merged_tree)
    try:
        written, deleted, protected = apply_tree(repo, merged_tree, paths)
    except RestoreBlocked as exc:
        raise WorktreeError(str(exc)) from None
    return MergeOutcome(True, written, deleted, protected)


def _conflicts(repo: Repo, ours: str, result: str, merged_tree: str) -> list[Conflict]:
    """The conflicts of a merge, with git's messages and the marked regions of each text file."""
    fields = repo.merge_tree(ours, result, messages=True)[1]
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
        conflict.hunks = _marked_regions(repo, merged_tree, conflict.path)
    return list(conflicts.values())


def _marked_regions(repo: Repo, tree: str, path: str) -> str:
    """The lines between git's conflict markers in `tree`'s version of `path`, at most CONFLICT_LINES."""
    blob = repo.blobs(tree, [path]).get(path)
    if blob is None or b"\0" in blob:
        return ""
    shown: list[str] = []
    inside = False
    for line in blob.decode("utf-8", "surrogateescape").splitlines():
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
    tree.repo.delete_refs([tree.ref], check=False)
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


def _tree_of(repo: Repo, work_tree: Path, base: str) -> str:
    """The tree of the files of `work_tree` in the object store of `repo`, with the exclusions of checkpoints
    (coder's own folder, large untracked files).

    Host git runs there with the user's git dir pinned (`Repo.borrowing`) and a private index holding `base` (its
    gitlinks stay as they are, since host git never adds a known one): every file is hashed, nothing is read from
    the tree's own git dir, and as in `Repo.worktree_tree` an embedded repository the agent made is left out (git
    would record its HEAD as a gitlink)."""
    borrowed = repo.borrowing(work_tree)
    with borrowed.private_index() as index:
        index.read_tree(base)
        return index.snapshot([*borrowed.large_untracked(MAX_FILE_BYTES, index), OWN_FOLDER])
