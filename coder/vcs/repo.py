"""The repository as one object (`Repo`), opened once where a path enters and shared by review, commit,
checkpoints and isolated trees: each method is one thing they do with git, and all run host git through
`coder/host/git.py` (`Repo._git` is the one call). Resolved once: what a sandboxed command cannot move (the work
tree's top, never what a `core.worktree` says; the git dir; the common dir). Read again by the door at every
command: what it can (the git dir's links, the config whose program keys come from the user only), so a config
include written after the Repo was opened is overridden too. Why not GitPython: docs/decisions/48-typed-doors.md.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from coder.host import CompletedProcess
from coder.host import git as hostgit
from coder.vcs.errors import GitCommandError, NotARepository, UnknownRevision, VcsError

#: the tree every repository knows: what `git hash-object -t tree /dev/null` gives
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
#: the folder of coder's own project files, left out of every snapshot of the work tree
OWN_FOLDER = ".coder"
#: the identity of the commits coder writes for itself (checkpoints, an isolated tree's base and result)
CODER_IDENTITY = {"GIT_AUTHOR_NAME": "coder", "GIT_AUTHOR_EMAIL": "coder@localhost",
                  "GIT_COMMITTER_NAME": "coder", "GIT_COMMITTER_EMAIL": "coder@localhost"}
_DIFF_FLAGS = ("--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "-U3")


def _paths(paths: Sequence[str] | None) -> list[str]:
    return ["--", *paths] if paths else []


@dataclass(frozen=True)
class TreeEntry:
    """One line of `git ls-tree`."""

    mode: str
    kind: str  # blob | tree | commit
    sha: str
    path: str


@dataclass(frozen=True)
class Repo:
    """One repository: its work tree `root`, its git dir (per worktree) and common dir (objects, refs, config).
    `env` pins another work tree to this git dir (`borrowing`); empty otherwise."""

    root: Path
    git_dir: Path
    common_dir: Path
    env: tuple[tuple[str, str], ...] = ()

    # --- opening -------------------------------------------------------------------------------------------
    @classmethod
    def find(cls, path: Path | str) -> Repo | None:
        """The repository whose work tree contains `path`, None when it is in none (bare repositories too). The top
        is the nearest folder at or above `path` holding a `.git` entry (`hostgit.repo_top`), never what a
        `core.worktree` says (any host folder, which would become the workspace the sandbox writes); host git
        runs pinned there, so git agrees, and if it ever did not, that is refused rather than guessed."""
        start = Path(path)
        if not start.exists():
            return None
        top = hostgit.repo_top(start.parent if start.is_file() else start)
        if top is None:
            return None
        proc = cls(top, top, top)._git("rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir",
                                       check=False)
        lines = proc.stdout.splitlines()
        if proc.returncode != 0 or len(lines) != 3 or not lines[0].strip():
            return None
        found = Path(lines[0]).resolve()
        if found != top:
            raise VcsError(f"git puts the work tree of the repository at {top} in {found}, which is not {start} or a "
                           "folder above it (a `core.worktree` setting?). coder will not work there; check its config.")
        return cls(top, Path(lines[1]), Path(os.path.normpath(top / lines[2])))

    @classmethod
    def open(cls, path: Path | str) -> Repo:
        """`find`, or NotARepository saying what to do."""
        repo = cls.find(path)
        if repo is None:
            raise NotARepository(f"{path} is not inside a git repository. Run `git init` there first (coder needs "
                                 "git for checkpoints, review and commits).")
        return repo

    @classmethod
    def init(cls, folder: Path) -> Repo:
        """A new, empty repository in `folder` (no template: no sample hooks)."""
        cls(folder, folder, folder)._git("init", "-q", "--template=", str(folder))  # `init` is never pinned
        return cls(folder, folder / ".git", folder / ".git")

    def borrowing(self, work_tree: Path) -> Repo:
        """This repository's git dir with `work_tree` as its work tree: files of another folder hashed into this
        object store, nothing read from that folder's own git dir (coder/vcs/worktrees.py)."""
        pinned = {**hostgit.pinned_repo(self.root), "GIT_WORK_TREE": str(work_tree)}
        return Repo(work_tree, self.git_dir, self.common_dir, tuple(pinned.items()))

    def objects_dir(self) -> Path:
        """The object store: what an isolated tree borrows (and its sandbox reads)."""
        return Path(os.path.realpath(self.common_dir / "objects"))

    def _git(self, *args: str, env: Mapping[str, str] | None = None, input: bytes | str | None = None,
             check: bool = True, text: bool = True) -> CompletedProcess:
        """Host git in the work tree (coder/host/git.py) with `env` added; GitCommandError on failure if `check`."""
        try:
            hostgit.git_path()
        except FileNotFoundError as exc:
            raise VcsError(str(exc)) from None
        try:
            proc = hostgit.run(self.root, args, env={**dict(self.env), **(env or {})}, input=input, text=text)
        except hostgit.PlantedGitDir as exc:
            raise VcsError(str(exc)) from None
        if check and proc.returncode != 0:
            stderr = proc.stderr if text else proc.stderr.decode(errors="replace")
            raise GitCommandError(f"git {' '.join(args[:3])} failed (exit {proc.returncode}): {stderr.strip()}")
        return proc

    # --- configuration and state ---------------------------------------------------------------------------
    def has_changes(self) -> bool:
        """Whether the work tree or index differs from HEAD, counting untracked files that are not ignored."""
        return bool(self._git("status", "--porcelain=v1", "--untracked-files=all").stdout.strip())

    def signs_commits(self) -> bool:
        """Whether the user signs commits (`commit.gpgSign` as host git reads it: a repository cannot turn it on)."""
        return self._git("config", "--type=bool", "commit.gpgSign", check=False).stdout.strip() == "true"

    def hooks_dir(self) -> Path:
        """Where the repository's hooks are: the user's `core.hooksPath` (read from the config files, leaving out
        the command-line scope where host git's `/dev/null` override lives), else the common dir's `hooks`."""
        proc = self._git("config", "--show-scope", "--type=path", "--get-all", "core.hooksPath", check=False)
        own = [line.split("\t", 1)[1] for line in proc.stdout.splitlines()
               if "\t" in line and not line.startswith("command\t")]
        hooks = Path(own[-1]) if own and own[-1] else self.common_dir / "hooks"
        return hooks if hooks.is_absolute() else self.root / hooks

    def untrusted_filters(self) -> list[str]:
        """The filter drivers (`filter.lfs`) the repository's own config defines: host git does not run them."""
        return [name for name in hostgit.untrusted_drivers(self.root) if name.startswith("filter.")]

    # --- revisions and objects -----------------------------------------------------------------------------
    def branch(self) -> str | None:
        """The branch HEAD is on; None when HEAD is detached."""
        proc = self._git("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def resolve(self, spec: str) -> str | None:
        """The object `spec` names (`rev-parse --verify`), or None."""
        proc = self._git("rev-parse", "--verify", "--quiet", spec, check=False)
        return (proc.stdout.strip() or None) if proc.returncode == 0 else None

    def resolve_tree(self, rev: str | None) -> str:
        """The tree of `rev` (a commit, tag or tree); the empty tree for none ("", None) or an unborn HEAD."""
        tree = self.resolve(f"{rev}^{{tree}}") if rev else EMPTY_TREE
        if tree is None and rev != "HEAD":
            raise UnknownRevision(f"{rev!r} is not a commit or tree in {self.root} (check the name with `git log "
                                  "--oneline`).")
        return tree or EMPTY_TREE

    def resolve_commit(self, rev: str) -> str:
        sha = self.resolve(f"{rev}^{{commit}}")
        if sha is None:
            raise UnknownRevision(f"{rev!r} is not a commit in {self.root} (check the name with `git log --oneline`).")
        return sha

    def entry(self, tree: str, path: str) -> str:
        """The object id of `path` in `tree` ("" when it has none)."""
        return self.resolve(f"{tree}:{path}") or ""

    def blob_sizes(self, tree: str, paths: Sequence[str]) -> dict[str, int]:
        """The sizes of the blobs `paths` of `tree` (others left out), by one `git cat-file --batch-check`."""
        specs = [p for p in paths if "\n" not in p]
        out = self._git("cat-file", "--batch-check", input="".join(f"{tree}:{p}\n" for p in specs)) if specs else None
        fields = [line.split() for line in out.stdout.splitlines()] if out else []
        return {p: int(f[2]) for p, f in zip(specs, fields, strict=False) if len(f) == 3 and f[1] == "blob"}

    def blobs(self, tree: str, paths: Sequence[str]) -> dict[str, bytes]:
        """The contents of the blobs `paths` of `tree` (others left out), read by one `git cat-file --batch`."""
        specs = [p for p in paths if "\n" not in p]
        if not specs:
            return {}
        out = self._git("cat-file", "--batch", input="".join(f"{tree}:{p}\n" for p in specs).encode(),
                        text=False).stdout
        found: dict[str, bytes] = {}
        pos = 0
        for path in specs:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            pos = end + 1
            if len(header) == 3:  # an object (else "missing"): its content follows, whatever its type
                if header[1] == b"blob":
                    found[path] = out[pos:pos + int(header[2])]
                pos += int(header[2]) + 1
        return found

    def tree_entries(self, tree: str, paths: Sequence[str] = (), recursive: bool = False) -> list[TreeEntry]:
        """`git ls-tree` of `tree` (`paths` limit it; `recursive` lists files, not folders)."""
        out = self._git("ls-tree", "-z", *(["-r"] if recursive else []), tree, *_paths(paths)).stdout
        entries = []
        for record in filter(None, out.split("\0")):
            meta, _, path = record.partition("\t")
            mode, kind, sha = meta.split()[:3]
            entries.append(TreeEntry(mode, kind, sha, path))
        return entries

    def grep(self, tree: str, pattern: str, paths: Sequence[str] | None = None, *, fixed: bool = False,
             word: bool = False, text_only: bool = False) -> list[str] | None:
        """Files of `tree` (within `paths`) matching `pattern` (an extended regex, or `fixed` text; `text_only`:
        binary files skipped); None when git grep failed."""
        flags = ["-F" if fixed else "-E", *(["-w"] if word else []), *(["-I"] if text_only else [])]
        proc = self._git("grep", "-l", *flags, "-e", pattern, tree, *(["--", *paths] if paths is not None else []),
                         check=False)
        if proc.returncode not in (0, 1):
            return None
        return [line.split(":", 1)[1] if ":" in line else line for line in proc.stdout.splitlines()]

    def archive(self, tree: str) -> bytes:
        """`tree` as a tar archive (`git archive`)."""
        return self._git("archive", "--format=tar", tree, text=False).stdout

    def last_commit(self, path: str) -> str:
        """"abc1234 subject" of the last commit that touched `path`, "" when none did."""
        return self._git("log", "-1", "--format=%h %s", "--", path, check=False).stdout.strip()

    def commit_tree(self, tree: str, parents: Sequence[str], message: str, *,
                    identity: Mapping[str, str] | None = None, sign: bool = False) -> str:
        """A commit of `tree` on `parents` with `message` as given (`stripspace` first for a user's message)."""
        args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p)), *(["-S"] if sign else [])]
        return self._git(*args, input=message, env=identity).stdout.strip()

    def stripspace(self, message: str) -> str:
        return self._git("stripspace", input=message).stdout

    # --- refs ----------------------------------------------------------------------------------------------
    def refs(self, prefix: str, *fields: str) -> list[list[str]]:
        """The `fields` (for-each-ref atoms: refname, objectname, tree, contents, ...) of each ref under `prefix`."""
        fmt = "%00".join(f"%({name})" for name in fields) + "%00%1e"
        out = self._git("for-each-ref", f"--format={fmt}", prefix).stdout
        records = [r.lstrip("\n").split("\0", len(fields) - 1) for r in out.split("\0\x1e") if r.strip("\n")]
        return [r + [""] * (len(fields) - len(r)) for r in records]  # the last field may hold anything (a NUL)

    def update_ref(self, ref: str, new: str, old: str | None = None, *, message: str | None = None,
                   no_deref: bool = False, check: bool = True) -> None:
        """Point `ref` at `new` (only if it is `old` when given; "" for "must not exist")."""
        self._git("update-ref", *(["-m", message] if message else []), *(["--no-deref"] if no_deref else []), ref,
                  new, *([old] if old is not None else []), check=check)

    def delete_refs(self, refs: Sequence[str], check: bool = True) -> None:
        if refs:
            self._git("update-ref", "--stdin", input="".join(f"delete {r}\n" for r in refs), check=check)

    def point_head(self, ref: str, message: str | None = None, check: bool = True) -> None:
        """HEAD as a symbolic ref to `ref` (a branch checked out by refs alone)."""
        self._git("symbolic-ref", *(["-m", message] if message else []), "HEAD", ref, check=check)

    def valid_branch_name(self, name: str) -> bool:
        return self._git("check-ref-format", "--branch", name, check=False).returncode == 0

    # --- the index and the work tree -----------------------------------------------------------------------
    @contextmanager
    def private_index(self, seed_from_user_index: bool = False) -> Iterator[PrivateIndex]:
        """An index of coder's own in a temp folder: the user's (stat cache, staged work, conflicts) is never
        written. Seeding copies the user's index bytes (for `add -A` speed)."""
        with tempfile.TemporaryDirectory(prefix="coder-index-") as tmp:
            path = Path(tmp) / "index"
            if seed_from_user_index:
                copy_index(self.git_dir / "index", path)
            yield PrivateIndex(self, path)

    def gitlinks(self, index: PrivateIndex | None = None) -> dict[str, str]:
        """Submodules and embedded repositories in `index` (default: the user's): path -> commit."""
        out = self._git("ls-files", "--stage", "-z", env=index.env if index else None).stdout
        return hostgit.parse_gitlinks(out)

    def large_untracked(self, max_bytes: int, index: PrivateIndex | None = None) -> list[str]:
        """Untracked, not ignored files (against `index`, or the user's) over `max_bytes` by lstat (datasets,
        downloads: not worth snapshotting; a link is its own size, never its target's)."""
        out = self._git("ls-files", "--others", "--exclude-standard", "-z", env=index.env if index else None).stdout
        big = []
        for rel in filter(None, out.split("\0")):
            try:
                if os.lstat(self.root / rel).st_size > max_bytes:
                    big.append(rel)
            except OSError:
                continue
        return big

    def worktree_tree(self, exclude: Sequence[str] = ()) -> str:
        """The tree of the work tree now (tracked and untracked-not-ignored files, deletions applied; `exclude`
        left out), written with a private index: no index or ref of the user's changes."""
        with self.private_index(seed_from_user_index=True) as index:
            head = None if (self.git_dir / "index").exists() else self.resolve("HEAD^{tree}")
            if head is not None:  # no index yet (a fresh clone's checkout never ran): start from HEAD
                index.read_tree(head)
            else:
                index.unhide()
            return index.snapshot(exclude)

    def snapshot_tree(self, max_file_bytes: int) -> str:
        """`worktree_tree` without coder's own folder (its config and remembered permissions are not the agent's
        work: never snapshotted, so never reverted by /undo) and untracked files over `max_file_bytes`."""
        return self.worktree_tree([*self.large_untracked(max_file_bytes), OWN_FOLDER])

    def reset_paths(self, commit: str, paths: Sequence[str]) -> str:
        """`paths` of the user's index to `commit` (git writes it, through its lock); "" or git's complaint."""
        proc = self._git("reset", "-q", commit, "--pathspec-from-file=-", "--pathspec-file-nul",
                         env={"GIT_LITERAL_PATHSPECS": "1"}, input="".join(p + "\0" for p in paths), check=False)
        return "" if proc.returncode == 0 else proc.stderr.strip() or f"exit {proc.returncode}"

    def checkout_hard(self, commit: str) -> None:
        """Index and work tree at `commit` (an isolated tree's, which coder made)."""
        self._git("reset", "-q", "--hard", commit)

    # --- diffs ---------------------------------------------------------------------------------------------
    def diff_trees(self, old_tree: str, new_tree: str, paths: Sequence[str] | None = None) -> str:
        return self._git("diff", *_DIFF_FLAGS, old_tree, new_tree, *_paths(paths)).stdout

    def changed_paths(self, old_tree: str, new_tree: str) -> list[str]:
        out = self._git("diff", "--name-only", "--no-renames", "-z", old_tree, new_tree).stdout
        return [p for p in out.split("\0") if p]

    def diff(self, base: str | None = None, staged: bool = False, commit: str | None = None,
             include_untracked: bool = True, paths: Sequence[str] | None = None) -> str:
        """The unified diff to review or commit: what `commit` changed (against its first parent); with `staged`
        the index against `base` (default HEAD); else the work tree against `base` within `paths`, new untracked
        files included (plain `git diff` leaves out an agent's new files, what a review must see)."""
        if commit is not None:
            sha = self.resolve_commit(commit)
            return self.diff_trees(self.resolve_tree(self.resolve(f"{sha}^1")), self.resolve_tree(sha))
        base_tree = self.resolve_tree(base or "HEAD")
        if staged:
            index_tree = self._git("write-tree", check=False)
            if index_tree.returncode != 0:
                raise VcsError(f"The index of {self.root} has unresolved conflicts; resolve them before reviewing it.")
            return self.diff_trees(base_tree, index_tree.stdout.strip())
        if include_untracked:
            return self.diff_trees(base_tree, self.worktree_tree(), paths)
        return self._git("diff", *_DIFF_FLAGS, base_tree, *_paths(paths)).stdout

    def merge_tree(self, ours: str, theirs: str, messages: bool = False) -> tuple[bool, list[str]]:
        """`git merge-tree --write-tree` of two commits: (clean, the NUL-separated fields of its answer: the tree,
        the conflicting paths, and with `messages` git's informational messages)."""
        proc = self._git("merge-tree", "--write-tree", "--name-only", "-z", *([] if messages else ["--no-messages"]),
                         ours, theirs, check=False)
        if proc.returncode not in (0, 1):
            raise GitCommandError(f"git merge-tree failed (exit {proc.returncode}): {proc.stderr.strip()}")
        return proc.returncode == 0, proc.stdout.split("\0")


class PrivateIndex:
    """An index file of coder's own (`Repo.private_index`); `env` names it to git, and to the commit hooks."""

    def __init__(self, repo: Repo, path: Path) -> None:
        self.repo, self.path, self.env = repo, path, {"GIT_INDEX_FILE": str(path)}

    def _git(self, *args: str, input: str | None = None, check: bool = True) -> CompletedProcess:
        return self.repo._git(*args, env=self.env, input=input, check=check)

    def read_tree(self, tree: str | None, keep_stat: bool = False) -> bool:
        """Make the index `tree` (None: empty); `keep_stat` keeps unchanged entries' stat data (`-m`: False on an
        index with conflicts)."""
        args = ["--empty"] if tree is None else [*(["-m"] if keep_stat else []), tree]
        return self._git("read-tree", *args, check=not keep_stat).returncode == 0

    def add(self, paths: Sequence[str], force: bool = False) -> None:
        """`git add -A` of `paths` (`force`: ignored files too); host git adds no gitlink the index has."""
        self._git("add", "-f" if force else "-A", "--", *paths)

    def remove(self, paths: Sequence[str]) -> None:
        """Drop `paths` from the index (never touching the work tree)."""
        if paths:
            self._git("update-index", "--force-remove", "-z", "--stdin", input="".join(p + "\0" for p in paths))

    def write_tree(self) -> str:
        return self._git("write-tree").stdout.strip()

    def unhide(self) -> None:
        """Clear the assume-unchanged bits, and the skip-worktree bits of files the work tree has (a sparse
        checkout's absent files keep theirs): `add -A` then reads what those files hold. A sandboxed command can
        set either bit on the user's index, which this index is copied from."""
        out = self._git("ls-files", "-v", "-z").stdout
        paths = [p for p in hostgit.parse_hidden(out) if os.path.lexists(self.repo.root / p)]
        for flag in ("--no-assume-unchanged", "--no-skip-worktree") if paths else ():  # one such flag a command
            self._git("update-index", flag, "-z", "--stdin", input="".join(p + "\0" for p in paths))

    def staged(self) -> list[str]:
        """The paths this index changes against HEAD."""
        return [p for p in self._git("diff", "--cached", "--name-only", "-z").stdout.split("\0") if p]

    def apply(self, diff: str, exclude: Sequence[str] = ()) -> str:
        """Apply `diff` to the index only (`exclude`: paths left out); "" when it applied, else git's complaint."""
        proc = self._git("apply", "--cached", "--whitespace=nowarn", *(f"--exclude={p}" for p in exclude), "-",
                         input=diff if diff.endswith("\n") else diff + "\n", check=False)
        return "" if proc.returncode == 0 else proc.stderr.strip() or "git apply failed"

    def checkout(self, paths: Sequence[str], into: Path) -> None:
        """Write the index's `paths` under the folder `into` (git's conversions applied there), not the work tree."""
        if paths:
            self._git("checkout-index", "-f", "-z", "--stdin", f"--prefix={into}/",
                      input="".join(p + "\0" for p in sorted(paths)))

    def snapshot(self, exclude: Sequence[str] = ()) -> str:
        """Add the work tree (but the literal paths `exclude`) and write its tree. Gitlinks stay as the index has
        them; an embedded repository the add found is left out (a checkpoint could not restore its commit)."""
        known = set(self.repo.gitlinks(self))
        self.add([".", *(f":(exclude,literal){p}" for p in exclude)])
        self.remove(sorted(set(self.repo.gitlinks(self)) - known))
        return self.write_tree()


def copy_index(user_index: Path, dest: Path) -> bool:
    """Copy the user's index to `dest` with its mtime (git's racy-entry check reads it); False when there is none.
    No link followed, no blocking: the sandbox writes the git dir (a link to a host file, a FIFO)."""
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
