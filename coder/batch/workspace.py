"""Workspaces: one private checkout per instance at its base commit, and the patch taken from it.

A workspace is a fresh repository whose object store holds the base commit and its ancestry, and nothing else
(issue 44): the objects are packed from a local mirror (`--repos-dir DIR/owner__name`, bare or not) with
`git pack-objects --revs BASE`, written straight into the workspace's own pack, and the base is checked out
detached. No ref, tag, reflog, stash, note, remote or alternate comes along, so no git command the agent runs
(`git log --all`, `git fsck --lost-found`, `cat-file --batch-all-objects`, reading the pack files) finds a commit
after the base, while `git log` and `git blame` of the past work as in the harness's images, which keep the
history up to the base. Submodules the same, each at its gitlink commit. Without a mirror the repository is cloned
once from GitHub into a cache mirror (when the network allows). The user's own tree is never touched: even
`coder batch --repo .` packs from it into a fresh repository.
"""

from __future__ import annotations

import fcntl
import fnmatch
import hashlib
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from coder.base.errors import CoderError, UsageError
from coder.base.paths import cache_dir
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
        protocols: str = "", env: dict[str, str] | None = None) -> str:
    """Run host git quietly and hardened (coder/host/git.py: the agent worked in these workspaces); raise
    WorkspaceError with git's own message on failure. `protocols` is for the clones ("file", "https")."""
    try:
        proc = hostgit.run(cwd, args, env={**GIT_ENV, **(env or {})}, input=input, timeout=timeout,
                           protocols=protocols)
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
    """A fresh repository at `dest` holding `base_commit`'s past only, checked out there (detached), its GitHub
    submodules the same. An old one at `dest` is removed first."""
    if dest.exists():
        remove_workspace(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    commit = past_repository(mirror, base_commit, dest)
    missing = git(dest, "ls-files", "--deleted").splitlines()
    if missing:
        shutil.rmtree(dest, ignore_errors=True)
        raise IncompleteMirror(f"the mirror {mirror} lacks the content of {len(missing)} file(s) at "
                               f"{base_commit[:12]} (a partial snapshot): {', '.join(missing[:5])}"
                               f"{' ...' if len(missing) > 5 else ''}; fetch the full repository into it")
    unfilled = fill_submodules(dest, mirror)
    return Workspace(dest, commit, unfilled)


def _source_env(source: Path) -> dict[str, str]:
    """git's view of a bare mirror named exactly (a bare folder inside somebody's work tree would otherwise be
    taken for that work tree's repository); a repository with a `.git` entry is found by coder/host/git.py."""
    if (source / ".git").exists() or not (source / "HEAD").is_file():
        return {}
    where = str(source.resolve())
    return {"GIT_DIR": where, "GIT_COMMON_DIR": where, "GIT_WORK_TREE": where}


def resolve_commit(source: Path, rev: str) -> str:
    """The full id of the commit `rev` names in `source` (a mirror or the user's repository), or WorkspaceError."""
    out = git(source, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False,
              env=_source_env(source)).strip()
    if not re.fullmatch(r"[0-9a-f]{40}([0-9a-f]{24})?", out):
        raise WorkspaceError(f"base commit {rev[:40]} is not in the mirror {source} "
                             "(fetch it there: `git -C MIRROR fetch origin`)")
    return out


#: the identity of commits the agent might make (the patch is taken against the base anyway); never the user's
WORKSPACE_CONFIG = (("user.name", "coder-batch"), ("user.email", "coder-batch@localhost"))


#: first-parent commits between two checkpoints (see past_repository): a workspace packs at most about this much
#: of its own history, and borrows the rest from the checkpoint's store
CHECKPOINT_EVERY = 1000


def past_stores_dir() -> Path:
    """Where the checkpoints' object stores are kept (hidden from every sandbox but for the one a workspace uses)."""
    return cache_dir() / "past-stores"


def _checkpoint(source: Path, commit: str) -> str | None:
    """The ancestor of `commit` on its first-parent chain whose depth from the root is the last multiple of
    CHECKPOINT_EVERY (the same for every commit of that stretch of history), or None in the first stretch."""
    env = _source_env(source)
    depth = int(git(source, "rev-list", "--first-parent", "--count", commit, env=env).strip() or 0)
    if depth < CHECKPOINT_EVERY:
        return None
    return git(source, "rev-list", "--first-parent", f"--skip={depth % CHECKPOINT_EVERY}", "-n1", commit,
               env=env).strip() or None


def _locked(lock: Path) -> IO[str]:
    """An open lock file, held (fcntl) until the caller's `with` closes it: one maker per store and rung."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    handle = open(lock, "a+")
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _rung(source: Path, root: Path, checkpoint: str) -> list[Path]:
    """The pack of `checkpoint`'s history since the checkpoint before it (one rung of a ladder: `pack-objects
    --revs C ^PREVIOUS`), made once, then the rungs below it: together, `checkpoint` and all its ancestry."""
    previous = _checkpoint(source, f"{checkpoint}~1") if CHECKPOINT_EVERY > 1 else None
    rung = root / "rungs" / checkpoint
    with _locked(root / "rungs" / f".{checkpoint}.lock"):
        if not (rung / "ready").is_file():
            shutil.rmtree(rung, ignore_errors=True)
            rung.mkdir(parents=True)
            git(source, "pack-objects", "--revs", "--missing=allow-any", "-q", str(rung / "pack"),
                input=f"{checkpoint}\n" + (f"^{previous}\n" if previous else ""), env=_source_env(source))
            (rung / "ready").write_text(checkpoint + "\n", encoding="ascii")
    own = sorted(rung.glob("pack-*"))
    return own + (_rung(source, root, previous) if previous else [])


def past_store(source: Path, checkpoint: str) -> Path:
    """The object store of `checkpoint` and its ancestry, shared (read-only) by every workspace whose base
    descends from it: all it holds is in the past of each of them. It is a folder of hard links to the rungs of
    the ladder up to `checkpoint` (_rung), so the stores of all checkpoints hold one copy of the history."""
    root = past_stores_dir() / f"{source.name.removesuffix('.git')}-" \
        f"{hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:12]}"
    store = root / "stores" / checkpoint
    if (store / "ready").is_file():
        return store / "objects"
    with _locked(root / "stores" / f".{checkpoint}.lock"):
        if not (store / "ready").is_file():
            shutil.rmtree(store, ignore_errors=True)
            (store / "objects" / "pack").mkdir(parents=True)
            for pack in _rung(source, root, checkpoint):
                try:
                    os.link(pack, store / "objects" / "pack" / pack.name)
                except OSError:  # another file system
                    shutil.copy2(pack, store / "objects" / "pack" / pack.name)
            (store / "ready").write_text(checkpoint + "\n", encoding="ascii")
    return store / "objects"


def past_repository(source: Path, rev: str, dest: Path) -> str:
    """Make `dest` a new repository whose objects are `rev`'s commit and its ancestry, and nothing else, and check
    that commit out detached. Returns its full id.

    The history older than the commit's checkpoint (_checkpoint) comes from the checkpoint's shared store, named
    in `objects/info/alternates`: every object there is an ancestor's, so the store is as much the past as the
    workspace's own pack, and a hundred workspaces of one repository share a few stores instead of holding a
    hundred copies of its history. The rest is packed from `source` (`pack-objects --revs COMMIT ^CHECKPOINT`,
    deltas reused, the pack and its index written in place: no transport, no FETCH_HEAD, no ref).

    A partial mirror (the fetched snapshots lack blobs of 4 MiB and more) packs what it has
    (`--missing=allow-any`); a missing blob of the checked-out tree is then a deleted file, which create_workspace
    refuses by name."""
    commit = resolve_commit(source, rev)
    try:
        checkpoint = _checkpoint(source, commit)
        git(dest.parent, "init", "-q", str(dest))
        for key, value in WORKSPACE_CONFIG:
            git(dest, "config", key, value)
        if checkpoint is not None:
            (dest / ".git" / "objects" / "info" / "alternates").write_text(f"{past_store(source, checkpoint)}\n",
                                                                          encoding="utf-8")
        if checkpoint != commit:
            git(source, "pack-objects", "--revs", "--missing=allow-any", "-q",
                str(dest / ".git" / "objects" / "pack" / "pack"),
                input=f"{commit}\n" + (f"^{checkpoint}\n" if checkpoint else ""), env=_source_env(source))
        git(dest, "checkout", "-q", "--detach", commit)
    except WorkspaceError:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return commit


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
    network. A submodule without a mirror is left empty and named in the result, for the build's error. Like the
    workspace, the submodule's repository holds its commit's past only (`past_repository`), and its URL stays the
    one .gitmodules names: the mirror's path is nowhere in the workspace."""
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
        commit = git(ws, "ls-tree", "HEAD", "--", path).split()[2]
        shutil.rmtree(ws / path, ignore_errors=True)
        past_repository(source, commit, ws / path)
        git(ws, "submodule", "init", "--", path)  # the URL of .gitmodules (GitHub's), never the mirror's path
        git(ws, "submodule", "absorbgitdirs", "--", path)  # its git dir under .git/modules, as `update` makes it
    return tuple(unfilled)


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
    """The checkpoint stores a workspace borrows (`.git/objects/info/alternates`, past_repository), its own and
    its submodules': without them read-only in the sandbox, git there fails ("bad object HEAD"), and so does
    setuptools_scm's version. Each holds its base's past only."""
    found: list[str] = []
    for objects in [workspace / ".git" / "objects", *(workspace / ".git" / "modules").glob("*/objects")]:
        try:
            lines = (objects / "info" / "alternates").read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        found += [str((objects / line.strip()).resolve()) for line in lines
                  if line.strip() and not line.startswith("#")]
    return found


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


def head_commit(repo: Path, rev: str = "HEAD") -> str:
    """The commit `rev` names in the user's repository (`coder batch --hide-future REF`; HEAD by default)."""
    if not repo.is_dir():
        raise UsageError(f"--repo {repo}: not a directory")
    try:
        return resolve_commit(repo, rev)
    except WorkspaceError:
        what = "not a git repository with at least one commit" if rev == "HEAD" else f"no commit named {rev!r}"
        raise UsageError(f"--repo {repo}: {what}") from None
