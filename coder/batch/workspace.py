"""Workspaces: one private checkout per instance at its base commit, and the patch taken from it.

A workspace is a `git clone --shared` of a local mirror (`--repos-dir DIR/owner__name`, bare or not): the clone
borrows the mirror's objects through `.git/objects/info/alternates`, so a hundred instances of one repository cost
a hundred checkouts, not a hundred copies of its history. Without a mirror the repository is cloned once from
GitHub into a cache mirror (when the network allows) and shared from there. The user's own tree is never
touched: even `coder batch --repo .` clones it.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from coder.base.errors import CoderError, UsageError
from coder.host import git as hostgit


class WorkspaceError(CoderError):
    """A workspace could not be made (mirror missing, base commit unknown, git failed)."""


class IncompleteMirror(WorkspaceError):
    """The mirror lacks the content of files at the commit (a partial snapshot: large blobs left out, which git's
    checkout skips without failing). Such a workspace is not the instance's: the instance cannot be evaluated here."""


GIT_ENV = {"GIT_ADVICE": "0"}

#: Paths treated as tests when the patch should leave out tests the agent wrote for itself.
TEST_PATTERNS = ("test_*.py", "*_test.py", "tests.py", "conftest.py", "*/tests/*", "tests/*", "*/test/*",
                 "test/*", "*/testing/*", "reproduce*.py", "repro_*.py")


def git(cwd: Path, *args: str, check: bool = True, input: str | None = None, timeout: float = 600,
        protocols: str = "") -> str:
    """Run host git quietly and hardened (coder/host/git.py: the agent worked in these workspaces); raise
    WorkspaceError with git's own message on failure. `protocols` is for the clones ("file", "https")."""
    try:
        proc = hostgit.run(cwd, args, env=GIT_ENV, input=input, timeout=timeout, protocols=protocols)
    except OSError as exc:
        raise WorkspaceError(f"git {' '.join(args[:3])} could not run in {cwd}: {exc}") from None
    if check and proc.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args[:3])} failed in {cwd}: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def find_mirror(repos_dir: Path, repo: str) -> Path | None:
    """`DIR/owner__name`, `DIR/owner__name.git` or `DIR/owner/name`; bare or not."""
    name = repo.replace("/", "__")
    for cand in (repos_dir / name, repos_dir / f"{name}.git", repos_dir / repo):
        if (cand / ".git").exists() or (cand / "HEAD").is_file():
            return cand
    return None


def ensure_mirror(repo: str, repos_dir: Path | None, cache_dir: Path, allow_network: bool) -> Path:
    if repos_dir is not None:
        found = find_mirror(repos_dir, repo)
        if found:
            return found
    cached = find_mirror(cache_dir, repo)
    if cached:
        return cached
    if not allow_network:
        where = f"{repos_dir}/{repo.replace('/', '__')}" if repos_dir else "a --repos-dir mirror"
        raise WorkspaceError(f"no local mirror of {repo}: expected {where} (a git clone, bare or not); "
                             f"make one with `git clone --mirror https://github.com/{repo}.git {where}`, "
                             "or pass --allow-network to clone it")
    target = cache_dir / f"{repo.replace('/', '__')}.git"
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    git(cache_dir, "clone", "--mirror", "-q", f"https://github.com/{repo}.git", str(tmp), timeout=3600,
        protocols="https")
    tmp.rename(target)
    return target


@dataclass
class Workspace:
    path: Path
    base_commit: str
    #: GitHub submodules of the base commit left empty for want of a local mirror (`owner/name` each)
    unfilled: tuple[str, ...] = ()


def create_workspace(mirror: Path, base_commit: str, dest: Path) -> Workspace:
    """A fresh shared clone at `base_commit` (detached). An old one at `dest` is removed first."""
    if dest.exists():
        remove_workspace(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Commits the agent might make must not need the user's identity; the diff is taken against base anyway.
    git(dest.parent, "clone", "--shared", "--no-checkout", "-q", "-c", "user.name=coder-batch", "-c",
        "user.email=coder-batch@localhost", str(mirror.resolve()), str(dest), protocols="file")
    try:
        git(dest, "checkout", "-q", "--detach", base_commit)
    except WorkspaceError:
        shutil.rmtree(dest, ignore_errors=True)
        raise WorkspaceError(f"base commit {base_commit[:12]} is not in the mirror {mirror} "
                             "(fetch it there: `git -C MIRROR fetch origin`)") from None
    missing = git(dest, "ls-files", "--deleted").splitlines()
    if missing:
        shutil.rmtree(dest, ignore_errors=True)
        raise IncompleteMirror(f"the mirror {mirror} lacks the content of {len(missing)} file(s) at "
                               f"{base_commit[:12]} (a partial snapshot): {', '.join(missing[:5])}"
                               f"{' ...' if len(missing) > 5 else ''}; fetch the full repository into it")
    unfilled = fill_submodules(dest, mirror)
    return Workspace(dest, _detached_head(dest) or git(dest, "rev-parse", "HEAD").strip(), unfilled)


#: GitHub's own spelling of `owner/name` (no `..`, no other separators): the name picks a folder beside the
#: mirror, and .gitmodules is the repository's text, so nothing else may pass
_GITHUB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9_][A-Za-z0-9._-]*")
#: a submodule name git itself would accept for `submodule.<name>.url` without surprises
_SUBMODULE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")


def _github_repo(url: str) -> str | None:
    """`owner/name` of a GitHub URL (https, ssh or git protocol), else None."""
    for prefix in ("https://github.com/", "http://github.com/", "git://github.com/", "git@github.com:",
                   "ssh://git@github.com/"):
        if url.startswith(prefix):
            name = url[len(prefix):].rstrip("/").removesuffix(".git")
            return name if _GITHUB_NAME.fullmatch(name) and ".." not in name else None
    return None


def fill_submodules(ws: Path, mirror: Path) -> tuple[str, ...]:
    """Check out the base commit's GitHub submodules from local mirrors beside `mirror`; the repositories of
    those without one (`owner/name`).

    The harness's images clone with network, and a repository whose build initialises a submodule (astropy
    1.x: `astropy_helpers`, through ah_bootstrap's `git submodule update --init`) gets it from GitHub there. Here
    the same commit comes from a local mirror of the submodule's repository found as the main one is
    (`DIR/owner__name` beside `DIR/astropy__astropy`), so the build finds it initialised and never reaches for the
    network. A submodule without a mirror is left empty and named in the result, for the build's error. The
    submodule is cloned over `file://` (a pack, never hard links into the shared mirror, which the sandbox must
    not reach)."""
    if not (ws / ".gitmodules").is_file():  # most repositories: no git process spent
        return ()
    try:
        pairs = git(ws, "config", "-f", ".gitmodules", "--get-regexp", r"^submodule\..*\.(path|url)$",
                    check=False)
    except WorkspaceError:
        return ()
    modules: dict[str, dict[str, str]] = {}
    for line in pairs.splitlines():
        key, _, value = line.partition(" ")
        name, _, field = key.removeprefix("submodule.").rpartition(".")
        modules.setdefault(name, {})[field] = value
    unfilled = []
    for name, fields in modules.items():
        repo = _github_repo(fields.get("url", ""))
        path = fields.get("path", "")
        sane = repo and path and _SUBMODULE_NAME.fullmatch(name) and ".." not in name
        if not repo or not sane or not git(ws, "ls-tree", "HEAD", "--", path, check=False).startswith("160000"):
            continue
        source = find_mirror(mirror.parent, repo) or find_mirror(mirror.parent.parent, repo)
        if source is None:
            unfilled.append(repo)
            continue
        git(ws, "config", f"submodule.{name}.url", source.resolve().as_uri())
        git(ws, "submodule", "update", "--init", "--", path, protocols="file")
    return tuple(unfilled)


def _detached_head(dest: Path) -> str | None:
    """The commit our checkout just wrote into `.git/HEAD` (nobody else has touched the clone yet), or None."""
    try:
        head = (dest / ".git" / "HEAD").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return head if re.fullmatch(r"[0-9a-f]{40}", head) else None


#: how far back `settle_index` dates a fresh checkout's files
SETTLE_AGE_S = 2.0


def settle_index(ws: Path) -> None:
    """Make a fresh checkout's index say "clean" by its stat data alone, so that the first `git add -A` after
    the agent (workspace_patch) compares stat data instead of hashing every file of the repository again.

    A checkout writes the files and then the index within the same second, and git (built without nanosecond
    timestamps) treats an entry whose mtime is not older than the index as "racily clean": it must read and hash
    the file to know. That made the patch of a 500-file repository cost 0.02-0.09 s, and of a large one
    (django's 6,000 files) much more. Here the files are dated SETTLE_AGE_S back and the index refreshed (one
    hashing, done while an earlier instance runs: coder/batch/ahead.py); every later write, the agent's
    included, gives a file a newer mtime than its entry, so no change can be missed."""
    past = time.time() - SETTLE_AGE_S
    for root, dirs, files in os.walk(ws):
        if root == str(ws) and ".git" in dirs:
            dirs.remove(".git")
        for name in (*files, *dirs):
            os.utime(os.path.join(root, name), (past, past), follow_symlinks=False)
    git(ws, "update-index", "-q", "--refresh", check=False)


def borrowed_objects(workspace: Path) -> list[str]:
    """The object folders a shared clone borrows (`.git/objects/info/alternates`: the mirror's): without them
    read-only in the sandbox, git there fails ("bad object HEAD"), and so does setuptools_scm's version."""
    objects = workspace / ".git" / "objects"
    try:
        lines = (objects / "info" / "alternates").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    return [str((objects / line.strip()).resolve()) for line in lines if line.strip() and not line.startswith("#")]


def remove_workspace(path: Path) -> None:
    """The workspace and its instance layer (`<workspace>.testbed`, coder/batch/testbed.py)."""
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(path.with_name(path.name + ".testbed"), ignore_errors=True)


def is_test_path(path: str) -> bool:
    return any(fnmatch.fnmatch(path, pat) or fnmatch.fnmatch(os.path.basename(path), pat) for pat in TEST_PATTERNS)


def workspace_patch(ws: Path, base_commit: str, exclude_new_tests: bool = False) -> str:
    """The diff of the whole workspace (tracked, untracked, committed) against the base commit.

    `git add -A` makes new files visible to `git diff --cached`; commits the agent made are included because
    the diff is against `base_commit`, not HEAD. With `exclude_new_tests`, files the agent *added* that look
    like tests or reproduction scripts are left out (changes to existing tests stay: they may be the fix)."""
    git(ws, "add", "-A")
    args = ["diff", "--cached", "--no-color", "--no-ext-diff", "--binary", base_commit]
    if exclude_new_tests:
        added = git(ws, "diff", "--cached", "--name-only", "--diff-filter=A", base_commit).splitlines()
        excluded = [p for p in added if is_test_path(p)]
        if excluded:
            args += ["--", "."] + [f":(exclude,literal){p}" for p in excluded]
    return git(ws, *args)


def changed_files(patch: str) -> list[str]:
    files = []
    for line in patch.splitlines():
        if line.startswith("diff --git a/"):
            files.append(line.split(" b/", 1)[-1])
    return files


def head_commit(repo: Path) -> str:
    if not repo.is_dir():
        raise UsageError(f"--repo {repo}: not a directory")
    try:
        return git(repo, "rev-parse", "HEAD").strip()
    except WorkspaceError:
        raise UsageError(f"--repo {repo}: not a git repository with at least one commit") from None
