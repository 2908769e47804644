"""One commit per task: stage the task's changes, run the repository's hooks (in the sandbox by default, never
skipped silently), commit, optionally on a new branch.

The hooks are run by us rather than by `git commit`, because `git commit` would run them on the host, outside
the sandbox, with the agent's freshly written code in reach. After they pass we call `git commit --no-verify`:
not a silent skip, the hooks already ran, and `CommitResult.hooks` records each run. A failing hook leaves the
repository as it was: the user's index bytes and the branch are put back.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from coder.vcs import hostgit
from coder.vcs.message import commit_message  # re-exported: the interface names it here
from coder.vcs.repo import (
    VcsError,
    check_can_commit,
    git_dir,
    gitlinks,
    has_changes,
    require_repo,
    run_git,
)

__all__ = ["CommitResult", "HookRun", "commit_changes", "commit_message", "find_hooks"]

HookMode = Literal["sandbox", "host", "skip"]
PRE_HOOKS = ("pre-commit", "prepare-commit-msg", "commit-msg")


@dataclass
class HookRun:
    name: str
    exit_code: int
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

    def summary(self) -> str:
        if not self.committed:
            return self.error
        text = f"committed {self.sha[:10] if self.sha else '?'} on {self.branch}: {self.message.splitlines()[0]}"
        if self.hooks_skipped:
            text += f" (hooks NOT run, as requested: {', '.join(self.hooks_skipped)})"
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
    sandbox_config: dict[str, Any] | None = None,
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

    gdir = git_dir(root)
    index_path = gdir / "index"
    saved_index = index_path.read_bytes() if index_path.exists() else None
    original = state.branch or state.head
    created_branch = False
    try:
        if branch is not None:
            if state.head is None:
                run_git(root, "symbolic-ref", "HEAD", f"refs/heads/{branch}")
            else:
                run_git(root, "switch", "-q", "-c", branch)
            created_branch = True
        known = gitlinks(root)  # submodules stay as they are: hostgit never gives them to `add`
        run_git(root, "add", "-A", "--", *(paths or ["."]))
        _refuse_embedded(root, sorted(set(gitlinks(root)) - set(known)))
        if run_git(root, "diff", "--cached", "--quiet", check=False).returncode == 0:
            raise VcsError("Nothing to commit: the selected paths have no changes against HEAD.")
        files = [p for p in run_git(root, "diff", "--cached", "--name-only", "-z").stdout.split("\0") if p]
        msg_file = gdir / "COMMIT_EDITMSG"
        msg_file.write_text(message.strip() + "\n", encoding="utf-8")
        runs: list[HookRun] = []
        skipped: list[str] = []
        for name in PRE_HOOKS:
            if name not in hooks:
                continue
            if run_hooks_in == "skip":
                skipped.append(name)
                continue
            args = {"pre-commit": [], "prepare-commit-msg": [str(msg_file), "message"], "commit-msg": [str(msg_file)]}
            run = _run_hook(root, name, hooks[name], args[name], run_hooks_in, sandbox_config, hook_timeout)
            runs.append(run)
            if not run.ok:
                _roll_back(root, saved_index, index_path, original, branch if created_branch else None, state.head)
                created_branch = False
                why = "timed out" if run.timed_out else f"failed (exit {run.exit_code})"
                return CommitResult(
                    committed=False, branch=branch or state.branch, message=message, files=files, hooks=runs,
                    error=f"The {name} hook {why}; nothing was committed.\n{run.output.strip()[-4000:]}",
                )
        final_message = msg_file.read_text(encoding="utf-8")
        run_git(root, "commit", "-q", "--no-verify", "-F", str(msg_file))
    except BaseException:
        if created_branch or saved_index is not None:
            _roll_back(root, saved_index, index_path, original, branch if created_branch else None, state.head)
        raise
    sha = run_git(root, "rev-parse", "HEAD").stdout.strip()
    if "post-commit" in hooks:
        if run_hooks_in == "skip":
            skipped.append("post-commit")
        else:
            runs.append(_run_hook(root, "post-commit", hooks["post-commit"], [], run_hooks_in, sandbox_config,
                                  hook_timeout))
    return CommitResult(True, sha, branch or state.branch, final_message.strip(), files, runs, skipped)


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
    root: Path, name: str, hook: Path, args: list[str], where: HookMode, config: dict | None, timeout: float
) -> HookRun:
    import shlex

    command = " ".join(shlex.quote(a) for a in [str(hook), *args])
    start = time.monotonic()
    if where == "sandbox":
        from coder.errors import SandboxUnavailable
        from coder.sandbox.exec import run_sandboxed

        try:
            run = run_sandboxed(command, root, config or {}, timeout)
        except SandboxUnavailable as exc:
            raise VcsError(
                f"The {name} hook must run in the sandbox, which is unavailable: {exc}. Run hooks on the host "
                "or skip them explicitly."
            ) from exc
        return HookRun(name, run.exit_code, run.output, time.monotonic() - start, "sandbox", run.timed_out)
    env = hostgit.scrubbed_host_env()  # the user asked for host hooks, not for them to see provider keys
    env["GIT_INDEX_FILE"] = str(git_dir(root) / "index")
    try:
        proc = subprocess.run(
            [str(hook), *args], cwd=root, env=env, capture_output=True, text=True, timeout=timeout,
            errors="replace",
        )
        return HookRun(name, proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start, "host")
    except subprocess.TimeoutExpired as exc:
        parts = [p.decode(errors="replace") if isinstance(p, bytes) else p for p in (exc.stdout, exc.stderr) if p]
        return HookRun(name, -1, "".join(parts), time.monotonic() - start, "host", timed_out=True)


def _roll_back(
    root: Path, saved_index: bytes | None, index_path: Path, original: str | None, new_branch: str | None,
    head: str | None,
) -> None:
    """Put the user's index and branch back after a failed attempt (the work tree was never touched)."""
    if new_branch is not None:
        if head is None:
            if original:
                run_git(root, "symbolic-ref", "HEAD", f"refs/heads/{original}", check=False)
        elif original == head:
            run_git(root, "switch", "-q", "--detach", head, check=False)
        elif original:
            run_git(root, "switch", "-q", original, check=False)
        run_git(root, "branch", "-q", "-D", new_branch, check=False)
    if saved_index is not None:
        tmp = index_path.with_suffix(".coder-restore")
        tmp.write_bytes(saved_index)
        os.replace(tmp, index_path)
    elif index_path.exists():
        index_path.unlink()
