"""One commit per task: stage the task's changes, run the repository's hooks (in the sandbox by default, never
skipped silently), commit, optionally on a new branch.

The hooks are run by us rather than by `git commit`, because `git commit` would run them on the host, outside
the sandbox, with the agent's freshly written code in reach. We do not call `git commit` at all: it writes
`.git/COMMIT_EDITMSG` by name, through any symlink the sandbox planted there. The commit is plumbing instead
(`write-tree`, `commit-tree` with the message on stdin, `update-ref`), built from a private index that starts
as HEAD and gets exactly the paths being committed, so nothing else staged in the user's index (by the user, or
by a sandboxed `git add` of a file that was deleted again, or an `update-index` gitlink) rides along unreviewed.
The user's index is only written after the commit, by git, for the committed paths alone: their own staged
changes elsewhere stay staged. A failing hook leaves the user's index and branch as they were.
"""

from __future__ import annotations

import os
import secrets
import shlex
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from coder.base.errors import CoderError, SandboxUnavailable
from coder.fs.beneath import WorkspaceFS
from coder.host import TimeoutExpired, safe_env
from coder.host import git as hostgit
from coder.host import run as host_run
from coder.sandbox.exec import run_sandboxed
from coder.vcs.message import commit_message  # re-exported: the interface names it here
from coder.vcs.repo import (
    RepoState,
    VcsError,
    check_can_commit,
    git_dir,
    gitlinks,
    has_changes,
    require_repo,
    run_git,
    temp_index,
)

if TYPE_CHECKING:
    from coder.sandbox.profile import SandboxConfig

__all__ = ["CommitResult", "HookRun", "commit_changes", "commit_message", "find_hooks"]

HookMode = Literal["sandbox", "host", "skip"]
PRE_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg")
#: the message file the message hooks get, in the git dir as git does it (written and read back beneath it)
MSG_FILE = "COMMIT_EDITMSG"
#: the largest commit message read back from a hook
MSG_LIMIT = 1 << 20


@dataclass
class HookRun:
    name: str
    exit_code: int | None  # None: it never ended (killed at its timeout)
    output: str
    duration: float
    where: str  # "sandbox" or "host"
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


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


def find_hooks(root: Path) -> dict[str, Path]:
    """The repository's executable hooks (the user's core.hooksPath respected), by name.

    Host git runs with hooks off (`core.hooksPath=/dev/null`, see hostgit.py), so the user's own setting is read
    from the config files themselves, leaving out the command-line scope where that override lives."""
    proc = run_git(root, "config", "--show-scope", "--type=path", "--get-all", "core.hooksPath", check=False)
    own = [line.split("\t", 1)[1] for line in proc.stdout.splitlines()
           if "\t" in line and not line.startswith("command\t")]
    if own and own[-1]:
        hooks_dir = Path(own[-1])
    else:
        hooks_dir = Path(run_git(root, "rev-parse", "--git-common-dir").stdout.strip()) / "hooks"
    if not hooks_dir.is_absolute():
        hooks_dir = root / hooks_dir
    found = {}
    for name in (*PRE_HOOKS, "post-commit"):
        path = hooks_dir / name
        if path.is_file() and os.access(path, os.X_OK):
            found[name] = path
    return found


def commit_changes(
    repo_root: Path,
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
    root = require_repo(repo_root)
    state = check_can_commit(root, allow_detached=branch is not None)
    if not message.strip():
        raise VcsError("the commit message is empty")
    if not has_changes(root):
        raise VcsError(f"Nothing to commit in {root}: the work tree has no changes against HEAD.")
    if branch is not None:
        _check_new_branch(root, branch)
    _refuse_repository_filters(root)
    hooks = find_hooks(root)
    if run_hooks_in == "sandbox" and hooks:
        _require_sandbox()

    with temp_index(root, seed_from_user_index=True) as env:
        known = _seed_from_head(root, env, state.head)
        run_git(root, "add", "-A", "--", *(paths or ["."]), env=env)
        files = _staged(root, env, known)
        if not files:
            raise VcsError("Nothing to commit: the selected paths have no changes against HEAD.")
        if branch is not None:
            _start_branch(root, state, branch)
        try:
            pre = [name for name in PRE_HOOKS if name in hooks]
            skipped = pre if run_hooks_in == "skip" else []
            runs: list[HookRun] = []
            if pre and not skipped:
                message, runs = _run_pre_hooks(root, hooks, pre, run_hooks_in, env, message, sandbox_config,
                                               hook_timeout)
                if not runs[-1].ok:
                    if branch is not None:
                        _drop_branch(root, state, branch)
                    failed = runs[-1]
                    why = "timed out" if failed.timed_out else f"failed (exit {failed.exit_code})"
                    return CommitResult(
                        committed=False, branch=branch or state.branch, message=message, files=files, hooks=runs,
                        error=f"The {failed.name} hook {why}; nothing was committed.\n{failed.output.strip()[-4000:]}",
                    )
                _check_unchanged_selection(root, env, known, files)
            final_message = run_git(root, "stripspace", input=message).stdout
            if not final_message.strip():
                raise VcsError("the commit message is empty (after the commit-msg hook)")
            sha = _commit_index(root, env, state.head, final_message)
        except BaseException:
            if branch is not None:
                _drop_branch(root, state, branch)
            raise
    note = _sync_user_index(root, sha, files)
    if "post-commit" in hooks:
        if run_hooks_in == "skip":
            skipped.append("post-commit")
        else:
            runs.append(_run_hook(root, "post-commit", hooks["post-commit"], [], run_hooks_in, sandbox_config,
                                  hook_timeout, {}))  # the user's own index, found as git finds it
    return CommitResult(True, sha, branch or state.branch, final_message.strip(), files, runs, skipped,
                        index_note=note)


def _seed_from_head(root: Path, env: dict[str, str], head: str | None) -> dict[str, str]:
    """Make the private index HEAD's tree (an unborn branch: empty), keeping the stat data the copied user's
    index has for unchanged files (`read-tree -m` with one tree), so `add -A` need not hash every file again.
    Returns HEAD's gitlinks."""
    if head is None:
        run_git(root, "read-tree", "--empty", env=env)
    elif run_git(root, "read-tree", "-m", head, env=env, check=False).returncode != 0:
        run_git(root, "read-tree", head, env=env)  # (an unmerged user index: no stat data to keep)
    return gitlinks(root, env)


def _staged(root: Path, env: dict[str, str], known: dict[str, str]) -> list[str]:
    """The paths the private index changes against HEAD; raises for a new embedded repository among them."""
    _refuse_embedded(root, sorted(set(gitlinks(root, env)) - set(known)))
    return [p for p in run_git(root, "diff", "--cached", "--name-only", "-z", env=env).stdout.split("\0") if p]


def _check_unchanged_selection(root: Path, env: dict[str, str], known: dict[str, str], files: list[str]) -> None:
    """After the hooks: the index may differ in content (a formatter's `git add`), never in which paths change."""
    extra = sorted(set(_staged(root, env, known)) - set(files))
    if extra:
        shown = ", ".join(extra[:8]) + (" ..." if len(extra) > 8 else "")
        raise VcsError(
            f"Not committing: while the hooks ran, {shown} got staged, which is not part of the change being "
            "committed (a hook, or a process still running in the sandbox, added it). Commit it yourself if "
            "you want it.")


def _run_pre_hooks(
    root: Path, hooks: dict[str, Path], names: list[str], where: HookMode, env: dict[str, str], message: str,
    config: SandboxConfig | None, timeout: float,
) -> tuple[str, list[HookRun]]:
    """Run the pre-commit hooks in order until one fails; returns the message (as commit-msg left it) and the
    runs. The message file and, for the sandbox, a copy of the private index live in the git dir, written and
    read back beneath a handle on it, never through a symlink a hook or sandboxed process put there."""
    gdir = git_dir(root)
    runs: list[HookRun] = []
    try:
        with WorkspaceFS(gdir) as fs, _hook_index(fs, gdir, env, where) as hook_env:
            fs.write_atomic(MSG_FILE, message.encode("utf-8"), 0o644)
            msg_path = str(gdir / MSG_FILE)
            args = {"pre-commit": [], "prepare-commit-msg": [msg_path, "message"], "commit-msg": [msg_path]}
            for name in names:
                runs.append(_run_hook(root, name, hooks[name], args[name], where, config, timeout, hook_env))
                if not runs[-1].ok:
                    return message, runs
            message = fs.read_file(MSG_FILE, MSG_LIMIT)[0].decode("utf-8", "replace")
    except (OSError, CoderError) as exc:
        if isinstance(exc, VcsError):
            raise
        raise VcsError(
            f"Not committing: the commit message or index file in {gdir} cannot be used after the hooks ran "
            f"({exc}); it was replaced (by a symbolic link?) while they ran.") from None
    return message, runs


@contextmanager
def _hook_index(fs: WorkspaceFS, gdir: Path, env: dict[str, str], where: HookMode) -> Iterator[dict[str, str]]:
    """The index the hooks see. Host hooks get the private one; sandboxed hooks cannot see the host's temp dir,
    so they get a copy in the git dir (as `git commit` gives hooks its `next-index` file), read back afterwards."""
    private = Path(env["GIT_INDEX_FILE"])
    if where != "sandbox":
        yield dict(env)
        return
    name = f"coder-commit-{secrets.token_hex(6)}.index"
    try:
        with open(private, "rb") as fh:
            fs.write_atomic(name, fh, 0o600)
        yield {"GIT_INDEX_FILE": str(gdir / name)}
        private.write_bytes(fs.read_file(name)[0])
    finally:
        try:
            fs.unlink(name)
        except (OSError, CoderError):
            pass


def _commit_index(root: Path, env: dict[str, str], head: str | None, message: str) -> str:
    """The commit of the private index on top of `head`, with HEAD (or the branch it names) moved to it only if
    it still is `head`. Plumbing throughout: nothing is written into the git dir by name but what git locks."""
    tree = run_git(root, "write-tree", env=env).stdout.strip()
    args = ["commit-tree", tree, *(["-p", head] if head else [])]
    signing = run_git(root, "config", "--type=bool", "commit.gpgSign", check=False).stdout.strip()
    if signing == "true":
        args.append("-S")
    sha = run_git(root, *args, input=message).stdout.strip()
    subject = message.splitlines()[0] if message.strip() else ""
    run_git(root, "update-ref", "-m", f"commit{'' if head else ' (initial)'}: {subject}", "HEAD", sha, head or "")
    return sha


def _sync_user_index(root: Path, sha: str, files: list[str]) -> str:
    """Bring the committed paths of the user's index to the new commit (git writes it, through its lock file);
    everything else they staged stays staged. Returns a note when that failed (e.g. a leftover index.lock)."""
    proc = run_git(root, "reset", "-q", sha, "--pathspec-from-file=-", "--pathspec-file-nul",
                   env={"GIT_LITERAL_PATHSPECS": "1"}, input="".join(p + "\0" for p in files), check=False)
    if proc.returncode == 0:
        return ""
    return (f"your index was not updated ({proc.stderr.strip()[:200]}); `git status` shows the committed files as "
            "staged changes until you run `git reset -q`")


def _start_branch(root: Path, state: RepoState, branch: str) -> None:
    """Create `branch` at HEAD and check it out: refs only (the work tree and the index already match it)."""
    if state.head is not None:
        run_git(root, "update-ref", "-m", f"branch: Created from {state.head}", f"refs/heads/{branch}",
                state.head, "")
    run_git(root, "symbolic-ref", "-m", f"coder: moving to {branch}", "HEAD", f"refs/heads/{branch}")


def _drop_branch(root: Path, state: RepoState, branch: str) -> None:
    """Undo `_start_branch` after a failed attempt (HEAD back where it was, the new branch deleted)."""
    if state.branch is not None:
        run_git(root, "symbolic-ref", "HEAD", f"refs/heads/{state.branch}", check=False)
    elif state.head is not None:
        run_git(root, "update-ref", "--no-deref", "HEAD", state.head, check=False)
    run_git(root, "update-ref", "-d", f"refs/heads/{branch}", check=False)


def _refuse_embedded(root: Path, embedded: list[str]) -> None:
    """A new gitlink would commit a pointer to another repository's commit that nobody else can fetch (and the
    repository may be one a sandboxed command planted); raising here rolls the index back."""
    if embedded:
        shown = ", ".join(embedded[:8]) + (" ..." if len(embedded) > 8 else "")
        what = "is an embedded git repository" if len(embedded) == 1 else "are embedded git repositories"
        raise VcsError(
            f"Not committing: {shown} {what} (a folder with its own .git) in {root}. coder does not commit "
            "embedded repositories. "
            "Delete its .git folder to commit the files, add the folder to .gitignore, or make it a submodule "
            "yourself (`git submodule add`)."
        )


def _refuse_repository_filters(root: Path) -> None:
    """Host git never runs filter programs from the repository's own config (hostgit.py), so committing where they
    are set (git-crypt, a local LFS install) would commit the raw work tree bytes: plaintext, or the big files."""
    filters = [name for name in hostgit.untrusted_drivers(root) if name.startswith("filter.")]
    if filters:
        raise VcsError(
            f"Not committing: the repository config of {root} sets git filters ({', '.join(filters)}), which coder "
            "does not run on the host, so the commit would hold unfiltered files. Commit with git yourself, or "
            "move the filter to your global git config (`git config --global`)."
        )


def _check_new_branch(root: Path, branch: str) -> None:
    if run_git(root, "check-ref-format", "--branch", branch, check=False).returncode != 0:
        raise VcsError(f"{branch!r} is not a valid branch name")
    if run_git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False).returncode == 0:
        raise VcsError(f"Branch {branch!r} already exists; choose a new name (coder only commits to a new branch).")


def _require_sandbox() -> None:
    try:
        from coder.sandbox import exec as sandbox_exec  # noqa: F401
    except ImportError as exc:
        raise VcsError(
            "This repository has git hooks, and coder runs them in the sandbox, which is not available here "
            f"({exc}). Run the hooks on the host (run_hooks_in='host') or skip them explicitly ('skip')."
        ) from exc


def _run_hook(
    root: Path, name: str, hook: Path, args: list[str], where: HookMode, config: SandboxConfig | None,
    timeout: float,
    index_env: dict[str, str],
) -> HookRun:
    command = " ".join(shlex.quote(a) for a in [str(hook), *args])
    start = time.monotonic()
    if where == "sandbox":
        try:
            run = run_sandboxed(command, root, config, timeout, env=index_env)
        except SandboxUnavailable as exc:
            raise VcsError(
                f"The {name} hook must run in the sandbox, which is unavailable: {exc}. Run hooks on the host "
                "or skip them explicitly."
            ) from exc
        return HookRun(name, run.exit_code, run.output, time.monotonic() - start, "sandbox", run.timed_out)
    env = safe_env()  # the user asked for host hooks, not for them to see provider keys
    env.update(index_env)
    try:  # git runs a hook at the top of the work tree, and so does coder
        proc = host_run([str(hook), *args], purpose=f"the {name} hook", workdir=root, env=env, timeout=timeout,
                        text=True, errors="replace")
        return HookRun(name, proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start, "host")
    except TimeoutExpired as exc:
        parts = [p.decode(errors="replace") if isinstance(p, bytes) else p for p in (exc.stdout, exc.stderr) if p]
        return HookRun(name, -1, "".join(parts), time.monotonic() - start, "host", timed_out=True)
    except OSError as exc:  # not executable after all, no interpreter (a bad #! line): the hook failed
        return HookRun(name, 126, f"cannot run {hook}: {exc}", time.monotonic() - start, "host")
