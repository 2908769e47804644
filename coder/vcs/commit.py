"""One commit per task: stage the task's changes, run the repository's hooks (in the sandbox by default, never
skipped silently: coder/vcs/hooks.py), commit, optionally on a new branch.

We do not call `git commit` at all: it would run the hooks on the host, and it writes `.git/COMMIT_EDITMSG` by
name, through any symlink the sandbox planted there. The commit is plumbing instead (`write-tree`, `commit-tree`
with the message on stdin, `update-ref`), built from a private index that starts as HEAD and gets exactly the
paths being committed, so nothing else staged in the user's index (by the user, or by a sandboxed `git add` of a
file that was deleted again, or an `update-index` gitlink) rides along unreviewed. The user's index is only
written after the commit, by git, for the committed paths alone: their own staged changes elsewhere stay staged. A
failing hook leaves the user's index and branch as they were.

What the repository says (its state, whether it changed, its filters, its hooks, the branch name) is asked of the
`Repo` first, in one go, and judged here afterwards; then the index is built and committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from coder.vcs.errors import VcsError
from coder.vcs.hooks import PRE_HOOKS, HookMode, HookRun, find_hooks, require_sandbox, run_hook, run_pre_hooks
from coder.vcs.message import commit_message  # re-exported: the interface names it here
from coder.vcs.repo import PrivateIndex, Repo

if TYPE_CHECKING:
    from coder.sandbox.profile import SandboxConfig

__all__ = ["CommitResult", "HookRun", "RepoState", "check_can_commit", "commit_changes", "commit_message",
           "find_hooks", "repo_state"]


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


def repo_state(repo: Repo) -> RepoState:
    # rebase-merge/-apply live in the common dir's worktree-specific part: the git dir is already per worktree
    operations = [op for op, markers in _OPERATION_MARKERS.items()
                  if any((repo.git_dir / m).exists() for m in markers)]
    return RepoState(repo.root, repo.branch(), repo.resolve("HEAD^{commit}"), operations)


def check_can_commit(repo: Repo, allow_detached: bool = False) -> RepoState:
    """Raise a VcsError naming the problem when a commit must not happen now; return the state otherwise."""
    state = repo_state(repo)
    _check_state(state, allow_detached)
    return state


def _check_state(state: RepoState, allow_detached: bool) -> None:
    for op in state.operations:
        raise VcsError(f"A {op} is in progress in {state.root}; coder will not commit in the middle of it. "
                       f"First {_OPERATION_ADVICE[op]}.")
    if state.detached and not allow_detached:
        raise VcsError(
            f"HEAD is detached in {state.root} (no branch is checked out), so a commit would be easy to lose. "
            "Check out a branch, or pass a branch name (`--branch NAME`) to commit on a new one.")


@dataclass
class CommitResult:
    committed: bool
    sha: str | None = None
    branch: str | None = None
    message: str = ""
    files: list[str] = field(default_factory=list)
    hooks: list[HookRun] = field(default_factory=list)
    hooks_skipped: list[str] = field(default_factory=list)
    error: str = ""  # why nothing was committed (a failing hook), for the user and for a fix round
    index_note: str = ""  # the commit was made but the user's index could not be brought up to it

    def summary(self) -> str:
        if not self.committed:
            return self.error
        text = f"committed {self.sha[:10] if self.sha else '?'} on {self.branch}: {self.message.splitlines()[0]}"
        if self.hooks_skipped:
            text += f" (hooks NOT run, as requested: {', '.join(self.hooks_skipped)})"
        if self.index_note:
            text += f" ({self.index_note})"
        return text


def commit_changes(
    repo: Repo,
    message: str,
    branch: str | None = None,
    run_hooks_in: HookMode = "sandbox",
    paths: list[str] | None = None,
    sandbox_config: SandboxConfig | None = None,
    hook_timeout: float = 300.0,
) -> CommitResult:
    """Commit the work tree's changes (all of them, or only `paths`) with `message`.

    `branch`: create that branch at HEAD and commit there (works from a detached HEAD too).
    `run_hooks_in`: "sandbox" (default; a missing sandbox is an error when hooks exist), "host", or "skip"
    (an explicit choice, reported in the result). Raises VcsError for states where no commit may happen."""
    state, changed, filters = repo_state(repo), repo.has_changes(), repo.untrusted_filters()
    valid = branch is None or repo.valid_branch_name(branch)
    exists = branch is not None and valid and repo.resolve(f"refs/heads/{branch}") is not None
    hooks = find_hooks(repo.hooks_dir())
    _check_state(state, allow_detached=branch is not None)
    _refuse(repo, message, changed, branch, valid, exists, filters)
    if run_hooks_in == "sandbox" and hooks:
        require_sandbox()

    with repo.private_index(seed_from_user_index=True) as index:
        known = _seed_from_head(index, state.head)
        index.add(paths or ["."])
        files = _staged(index, known)
        if branch is not None:
            _start_branch(repo, state, branch)
        try:
            pre = [name for name in PRE_HOOKS if name in hooks]
            skipped = pre if run_hooks_in == "skip" else []
            runs: list[HookRun] = []
            if pre and not skipped:
                message, runs = run_pre_hooks(repo, hooks, pre, run_hooks_in, index, message, sandbox_config,
                                              hook_timeout)
                if not runs[-1].ok:
                    if branch is not None:
                        _drop_branch(repo, state, branch)
                    failed = runs[-1]
                    why = "timed out" if failed.timed_out else f"failed (exit {failed.exit_code})"
                    return CommitResult(
                        committed=False, branch=branch or state.branch, message=message, files=files, hooks=runs,
                        error=f"The {failed.name} hook {why}; nothing was committed.\n{failed.output.strip()[-4000:]}",
                    )
                _check_unchanged_selection(index, known, files)
            final_message = repo.stripspace(message)
            if not final_message.strip():
                raise VcsError("the commit message is empty (after the commit-msg hook)")
            # plumbing throughout: nothing is written into the git dir by name but what git locks, and HEAD (or the
            # branch it names) moves only if it still is where the commit starts from
            head = state.head
            sha = repo.commit_tree(index.write_tree(), [head] if head else [], final_message,
                                   sign=repo.signs_commits())
            repo.update_ref("HEAD", sha, head or "", message=f"commit{'' if head else ' (initial)'}: "
                                                              f"{final_message.splitlines()[0]}")
        except BaseException:
            if branch is not None:
                _drop_branch(repo, state, branch)
            raise
    # the committed paths of the user's index come to the new commit (git writes it, through its lock file);
    # everything else they staged stays staged
    failed = repo.reset_paths(sha, files)
    note = (f"your index was not updated ({failed[:200]}); `git status` shows the committed files as staged "
            "changes until you run `git reset -q`") if failed else ""
    if "post-commit" in hooks:
        if run_hooks_in == "skip":
            skipped.append("post-commit")
        else:
            runs.append(run_hook(repo, "post-commit", hooks["post-commit"], [], run_hooks_in,
                                 sandbox_config, hook_timeout, {}))  # the user's own index, found as git finds it
    return CommitResult(True, sha, branch or state.branch, final_message.strip(), files, runs, skipped,
                        index_note=note)


def _refuse(repo: Repo, message: str, changed: bool, branch: str | None, valid: bool, exists: bool,
            filters: list[str]) -> None:
    """The reasons not to commit that the repository's answers give, in the order a user should hear them."""
    if not message.strip():
        raise VcsError("the commit message is empty")
    if not changed:
        raise VcsError(f"Nothing to commit in {repo.root}: the work tree has no changes against HEAD.")
    if not valid:
        raise VcsError(f"{branch!r} is not a valid branch name")
    if exists:
        raise VcsError(f"Branch {branch!r} already exists; choose a new name (coder only commits to a new branch).")
    if filters:  # host git runs no filter of the repository's own config: the commit would hold raw bytes
        raise VcsError(
            f"Not committing: the repository config of {repo.root} sets git filters ({', '.join(filters)}), which "
            "coder does not run on the host, so the commit would hold unfiltered files (git-crypt: plaintext; a "
            "local LFS: the big files). Commit with git yourself, or move the filter to your global git config "
            "(`git config --global`).")


def _seed_from_head(index: PrivateIndex, head: str | None) -> dict[str, str]:
    """Make the private index HEAD's tree (an unborn branch: empty), keeping the stat data the copied user's
    index has for unchanged files (`read-tree -m` with one tree), so `add -A` need not hash every file again.
    Returns HEAD's gitlinks."""
    if head is None or not index.read_tree(head, keep_stat=True):
        index.read_tree(head)  # (an unmerged user index: no stat data to keep)
    return index.repo.gitlinks(index)


def _staged(index: PrivateIndex, known: dict[str, str]) -> list[str]:
    """The paths the private index changes against HEAD. A new gitlink would commit a pointer to another
    repository's commit that nobody else can fetch (and the repository may be one a sandboxed command planted);
    raising here rolls the index back."""
    embedded = sorted(set(index.repo.gitlinks(index)) - set(known))
    if embedded:
        shown = ", ".join(embedded[:8]) + (" ..." if len(embedded) > 8 else "")
        what = "is an embedded git repository" if len(embedded) == 1 else "are embedded git repositories"
        raise VcsError(
            f"Not committing: {shown} {what} (a folder with its own .git) in {index.repo.root}. coder does not "
            "commit embedded repositories. Delete its .git folder to commit the files, add the folder to "
            ".gitignore, or make it a submodule yourself (`git submodule add`).")
    files = index.staged()
    if not files:
        raise VcsError("Nothing to commit: the selected paths have no changes against HEAD.")
    return files


def _check_unchanged_selection(index: PrivateIndex, known: dict[str, str], files: list[str]) -> None:
    """After the hooks: the index may differ in content (a formatter's `git add`), never in which paths change."""
    extra = sorted(set(_staged(index, known)) - set(files))
    if extra:
        shown = ", ".join(extra[:8]) + (" ..." if len(extra) > 8 else "")
        raise VcsError(
            f"Not committing: while the hooks ran, {shown} got staged, which is not part of the change being "
            "committed (a hook, or a process still running in the sandbox, added it). Commit it yourself if "
            "you want it.")


def _start_branch(repo: Repo, state: RepoState, branch: str) -> None:
    """Create `branch` at HEAD and check it out: refs only (the work tree and the index already match it)."""
    if state.head is not None:
        repo.update_ref(f"refs/heads/{branch}", state.head, "", message=f"branch: Created from {state.head}")
    repo.point_head(f"refs/heads/{branch}", message=f"coder: moving to {branch}")


def _drop_branch(repo: Repo, state: RepoState, branch: str) -> None:
    """Undo `_start_branch` after a failed attempt (HEAD back where it was, the new branch deleted)."""
    if state.branch is not None:
        repo.point_head(f"refs/heads/{state.branch}", check=False)
    elif state.head is not None:
        repo.update_ref("HEAD", state.head, no_deref=True, check=False)
    repo.delete_refs([f"refs/heads/{branch}"], check=False)
