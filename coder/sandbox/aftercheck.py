"""After a sandboxed command: did it leave something that the user's own git would run later?

coder's host git cannot be steered (coder/host/git.py), but the user's can. A command in the sandbox can add a
gitlink to the index (`git add sub` of an embedded repository, or `update-index --cacheinfo 160000,...`) and give
that nested repository a config with `core.fsmonitor`; or move a submodule aside and plant a repository in its
place. The user's next `git status` (or a prompt that shows the branch) recurses into it and runs that program,
with the user's environment. So after every sandboxed command, and before the next one (a background job may have
planted meanwhile), the session looks for:

- new gitlinks in the top-level index (compared with the index before the command; only when the index file
  changed): removed from the index (`update-index --force-remove`, no work-tree file is touched), unless the
  submodule's `.git` is a file naming a git dir in the top repository's `.git/modules/`, which only host git (the
  user's `git submodule add`) can make: the sandbox cannot write there;
- nested repositories (`.git` folders, files or links below the top, coder/sandbox/nested.py) whose git dir holds
  executable configuration (fsmonitor, hooksPath, filters, external diff and textconv, ssh and askpass commands,
  pagers, editors, credential helpers, `!` aliases, includes: `DANGEROUS_KEYS`), active hooks, or a config that is
  not a regular file: the nested `.git` is renamed to `.git-disabled-by-coder` (the repository's files stay; the
  user can rename it back);

- a `commondir` in the top-level `.git` folder (where git never writes one: it would send the user's git to
  another git dir's config) or a `config.worktree` there with executable keys: renamed aside;

and says what it found and did. The index stays writable in the sandbox (docs/decisions/29-host-safety.md says
why): the model's `git add`, `commit`, `stash` and `checkout` keep working.

Cost when nothing changed: one stat of the index and the nested walk the shell runs anyway (cached); a git dir's
config is read again only when its stat changed.
"""

from __future__ import annotations

import logging
import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

from coder.fs.beneath import EscapeError, WorkspaceFS
from coder.host import TimeoutExpired
from coder.host import git as hostgit
from coder.host.gitdir import gitfile_path
from coder.sandbox.findings import DANGEROUS_KEYS, AfterHooks, Finding, dangerous_config, report
from coder.sandbox.leftovers import Leftovers
from coder.sandbox.nested import nested_entries, read_regular

#: the name a neutralised nested `.git` gets
DISABLED = ".git-disabled-by-coder"
CONFIG_LIMIT = 1 << 20
__all__ = ["DANGEROUS_KEYS", "DISABLED", "AfterCheck", "accept", "after_command", "before_command",
           "checker", "dangerous_config"]


def _git_dir_of(entry: Path, workspace: Path) -> Path | None:
    """The git dir a nested `.git` entry stands for, when it lies in the workspace (one outside, the sandbox
    cannot write)."""
    if entry.is_symlink() or entry.is_file():
        if entry.is_symlink():
            target = Path(os.path.realpath(entry))
        else:
            named = gitfile_path(read_regular(entry, 65536) or b"")
            if named is None:
                return None
            target = Path(os.path.realpath(entry.parent / named))
        inside = target == workspace or workspace in target.parents
        return target if inside and target.is_dir() else None
    return entry if entry.is_dir() else None


def _stat_key(path: Path) -> tuple[int, ...] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def _active_hooks(hooks: Path) -> list[str]:
    try:
        with os.scandir(hooks) as it:
            return sorted(e.name for e in it if not e.name.endswith(".sample") and not e.is_dir(follow_symlinks=False)
                          and (e.is_symlink() or e.stat(follow_symlinks=False).st_mode & 0o111))
    except OSError:
        return []


def _git_dirs(gitdir: Path, workspace: Path) -> list[Path]:
    """`gitdir`, and the common dir its `commondir` names (read as git reads it: trailing newlines off, nothing
    else) when that lies in the workspace: git takes config and hooks from there too."""
    dirs = [gitdir]
    common = read_regular(gitdir / "commondir", 65536)
    if common is not None and common.rstrip(b"\r\n"):
        target = Path(os.path.realpath(gitdir / common.rstrip(b"\r\n").decode("utf-8", "surrogateescape")))
        if target == workspace or workspace in target.parents:
            dirs.append(target)
    return dirs


def _watched(entry: Path, dirs: list[Path]) -> tuple:
    """The stats of everything `_git_dir_problems` reads (a hook made executable changes no folder's stat, so each
    hook counts), to skip a git dir seen clean until one of them changes."""
    keys: list = [_stat_key(entry)]
    for folder in dirs:
        keys += [_stat_key(folder / name) for name in ("config", "config.worktree", "commondir", "hooks")]
        try:
            with os.scandir(folder / "hooks") as it:
                keys += sorted((e.name, _stat_key(Path(e.path))) for e in it)
        except OSError:
            pass
    return tuple(keys)


def _git_dir_problems(dirs: list[Path]) -> list[str]:
    """What in one nested repository's git dirs (`_git_dirs`) the user's git would run (empty: nothing)."""
    problems: list[str] = []
    for folder in dirs:
        for name in ("config", "config.worktree"):
            path = folder / name
            if not os.path.lexists(path):
                continue
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                problems.append(f"{name} is not a regular file")
                continue
            if st.st_size > CONFIG_LIMIT:
                problems.append(f"{name} is larger than {CONFIG_LIMIT >> 20} MiB")
                continue
            keys = dangerous_config(read_regular(path, CONFIG_LIMIT) or b"")
            problems += [f"{name} sets {key}" for key in keys]
        hooks = _active_hooks(folder / "hooks")
        if hooks:
            problems.append("active hooks " + ", ".join(hooks))
    return problems


@dataclass
class AfterCheck:
    """One workspace's checks, remembering what was seen clean."""

    workspace: Path
    index_key: tuple[int, ...] | None = None
    gitlinks: dict[str, str] | None = None
    hidden: set[str] = field(default_factory=set)  # index entries assume-unchanged or skip-worktree (the user's)
    clean: dict[str, tuple] = field(default_factory=dict)  # nested .git entry -> the stat keys seen clean
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: what else runs later (bytecode, programs on PATH, instruction files, included git config: leftovers.py)
    leftovers: Leftovers | None = None

    def __post_init__(self) -> None:
        self.leftovers = Leftovers(self.workspace)

    def close(self) -> None:
        """Stop watching (the record stays: the next look walks the tree once and compares)."""
        with self.lock:
            if self.leftovers is not None:
                self.leftovers.close()

    def config_files(self) -> list[str]:
        """The workspace files the repository's git config includes (coder/sandbox/leftovers.py)."""
        with self.lock:
            assert self.leftovers is not None  # made with the check
            return self.leftovers.config_files()

    def _index(self) -> Path:
        return self.workspace / ".git" / "index"

    def _read_gitlinks(self) -> dict[str, str]:
        try:
            proc = hostgit.run(self.workspace, ["ls-files", "--stage", "-z"], text=False, timeout=120)
        except (OSError, TimeoutExpired):
            return dict(self.gitlinks or {})
        if proc.returncode != 0:
            return {}
        return hostgit.parse_gitlinks(proc.stdout.decode("utf-8", "surrogateescape"))

    def _committed_gitlinks(self) -> dict[str, str]:
        """The gitlinks of HEAD: the repository's own submodules."""
        try:
            proc = hostgit.run(self.workspace, ["ls-tree", "-r", "-z", "HEAD"], text=False, timeout=120)
        except (OSError, TimeoutExpired):
            return {}
        links = {}
        for record in filter(None, proc.stdout.decode("utf-8", "surrogateescape").split("\0")):
            meta, _, path = record.partition("\t")
            parts = meta.split()
            if len(parts) == 3 and parts[0] == hostgit.GITLINK_MODE:
                links[path] = parts[2]
        return links

    def before(self, hooks: AfterHooks | None = None) -> list[Finding]:
        """Before a command: what a background job left since the last check. The first time, the baseline is
        HEAD's gitlinks (and submodules host git made): a gitlink staged by a session that was killed before its
        last check, or by anything else in the sandbox, is new."""
        with self.lock:
            if self.gitlinks is None:
                self.index_key = _stat_key(self._index())
                staged = self._read_gitlinks() if self.index_key is not None else {}
                # HEAD is read only when the index holds gitlinks at all (most repositories hold none)
                self.gitlinks = self._committed_gitlinks() if staged else {}
                self.hidden = self._read_hidden() if self.index_key is not None else set()
                if set(staged) - set(self.gitlinks):
                    self.index_key = None  # so that the check below takes the rest out
        return self.after(hooks)

    def after(self, hooks: AfterHooks | None = None) -> list[Finding]:
        """After a command: new gitlinks and dangerous nested repositories neutralised, and the leftovers."""
        with self.lock:
            assert self.leftovers is not None  # made with the check
            return (self._top_found() + self._index_found() + self._nested_found()
                    + self.leftovers.check(hooks))

    def _read_hidden(self) -> set[str]:
        try:
            proc = hostgit.run(self.workspace, ["ls-files", "-v", "-z"], text=False, timeout=120)
        except (OSError, TimeoutExpired):
            return set(self.hidden)
        return set(hostgit.parse_hidden(proc.stdout.decode("utf-8", "surrogateescape")))

    def _index_found(self) -> list[Finding]:
        """What a command did to the index: new gitlinks, and assume-unchanged / skip-worktree bits."""
        key = _stat_key(self._index())
        if self.gitlinks is None or key == self.index_key:
            return []
        found = self._gitlinks_found(key) + self._hidden_found(key)
        self.index_key = _stat_key(self._index())
        return found

    def _hidden_found(self, key: tuple[int, ...] | None) -> list[Finding]:
        """Bits the command set that make git take a tracked file as unchanged (`update-index --assume-unchanged`
        or `--skip-worktree`): git status, /diff, the review and the commit would not show its change. Cleared."""
        now = self._read_hidden() if key is not None else set()
        new = sorted(now - self.hidden)
        self.hidden = now
        if not new:
            return []
        for flag in ("--no-assume-unchanged", "--no-skip-worktree"):  # git applies one such flag a command
            proc = hostgit.run(self.workspace, ["update-index", flag, "-z", "--stdin"],
                               input="".join(p + "\0" for p in new), timeout=120)
            if proc.returncode != 0:
                break
        if proc.returncode == 0:
            self.hidden -= set(new)
            done = "the bit cleared (git shows the file's changes again)"
        else:
            done = f"could not be cleared: {proc.stderr.strip()[:200]}"
        return [Finding(path, "a tracked file marked assume-unchanged or skip-worktree in the index (your git "
                        "status, /diff and the review would not show its changes)", done) for path in new]

    def _gitlinks_found(self, key: tuple[int, ...] | None) -> list[Finding]:
        assert self.gitlinks is not None  # read by `before`
        now = self._read_gitlinks() if key is not None else {}
        new = [path for path in sorted(set(now) - set(self.gitlinks)) if not self._host_made(path)]
        if not new:
            self.gitlinks = now
            return []
        proc = hostgit.run(self.workspace, ["update-index", "--force-remove", "--", *new], timeout=120)
        if proc.returncode == 0:
            for path in new:
                now.pop(path)
            done = "removed from the index (the folder's files are untouched)"
        else:
            done = f"could not be removed from the index: {proc.stderr.strip()[:200]}"
        found = [Finding(path, "a new gitlink in the index (your git would run git inside it)", done)
                 for path in new]
        self.gitlinks = now
        return found

    def _host_made(self, path: str) -> bool:
        """Whether the submodule at `path` has its git dir in the top `.git/modules/` (made by host git)."""
        dot_git = self.workspace / path / ".git"
        if dot_git.is_symlink() or not dot_git.is_file():
            return False
        named = gitfile_path(read_regular(dot_git, 65536) or b"")
        if named is None:
            return False
        modules = Path(os.path.realpath(self.workspace / ".git" / "modules"))
        return modules in Path(os.path.realpath(dot_git.parent / named)).parents

    def _top_found(self) -> list[Finding]:
        """A `commondir` in the top-level `.git` folder sends the user's git to another git dir's config (git
        writes that file only in `.git/worktrees/<name>/`), and a `config.worktree` is read when the config turns
        worktree config on; the sandbox can create either where none was. Renamed aside."""
        git = self.workspace / ".git"
        if git.is_symlink() or not git.is_dir():
            return []
        found = []
        for name in ("commondir", "config.worktree"):
            path = git / name
            if not os.path.lexists(path):
                continue
            if name == "config.worktree":
                st = os.lstat(path)
                keys = dangerous_config(read_regular(path, CONFIG_LIMIT) or b"") if stat.S_ISREG(st.st_mode) \
                    and st.st_size <= CONFIG_LIMIT else ["not a regular file of at most 1 MiB"]
                if not keys:
                    continue
                what = f"the top-level config.worktree sets {', '.join(keys[:4])}"
            else:
                what = "a commondir in the top-level git dir (it sends your git to another git dir's config)"
            found.append(Finding(f".git/{name}", what, self._disable(f".git/{name}", f"{name}-disabled-by-coder")))
        return found

    def _nested_found(self) -> list[Finding]:
        found = []
        own = [Path(os.path.realpath(self.workspace / ".git" / name)) for name in ("modules", "worktrees")]
        for entry in nested_entries(self.workspace):
            if entry.name != ".git":
                continue
            gitdir = _git_dir_of(entry, self.workspace)
            if gitdir is None or any(folder in gitdir.parents for folder in own):
                continue  # a submodule's or worktree's git dir made by host git: read-only to the sandbox
            dirs = _git_dirs(gitdir, self.workspace)
            keys = _watched(entry, dirs)
            if self.clean.get(str(entry)) == keys:
                continue
            problems = _git_dir_problems(dirs)
            if not problems:
                self.clean[str(entry)] = keys
                continue
            self.clean.pop(str(entry), None)
            rel = entry.relative_to(self.workspace).as_posix()
            found.append(Finding(rel, "a nested repository whose git dir your git would run code from ("
                                 + "; ".join(problems[:4]) + ")", self._disable(rel)))
        return found

    def _disable(self, rel: str, new_name: str = DISABLED) -> str:
        parent = rel.rsplit("/", 1)[0]
        try:
            with WorkspaceFS(self.workspace) as fs:
                names = {name for name, _ in fs.listdir(parent)}
                target = next(f"{parent}/{new_name}{'' if n == 0 else f'-{n}'}" for n in range(1000)
                              if f"{new_name}{'' if n == 0 else f'-{n}'}" not in names)
                try:
                    fs.rename(rel, target)
                except PermissionError:  # the command took the write bit off the folder (same user: put it back)
                    fd = fs.open(parent, os.O_RDONLY | os.O_DIRECTORY)
                    try:
                        os.fchmod(fd, stat.S_IMODE(os.fstat(fd).st_mode) | stat.S_IRWXU)
                    finally:
                        os.close(fd)
                    fs.rename(rel, target)
        except (OSError, EscapeError, StopIteration) as exc:
            return f"coder could not disable it ({exc}): do not run git in {parent} before checking it"
        return f"renamed to {target} (rename it back once you have checked it)"


_CHECKS: dict[str, AfterCheck] = {}
#: workspaces whose checks (each an inotify instance) a process keeps: a session serves one, a process of tests
#: many one after another; the user's instances are 128 in all (max_user_instances), shared by every process
MAX_CHECKS = 8
_CHECKS_LOCK = threading.Lock()


def checker(workspace: Path) -> AfterCheck:
    """The workspace's AfterCheck, kept for the process."""
    key = os.path.realpath(workspace)
    with _CHECKS_LOCK:
        check = _CHECKS.get(key)
        if check is None:
            if len(_CHECKS) >= MAX_CHECKS:
                _CHECKS.pop(next(iter(_CHECKS))).close()
            check = _CHECKS[key] = AfterCheck(Path(key))
        return check


def _notes(workspace: Path, when: str, hooks: AfterHooks | None) -> list[str]:
    check = checker(workspace)
    try:
        found = check.before(hooks) if when == "before" else check.after(hooks)
    except Exception as exc:  # noqa: BLE001 - a check that fails must say so, never take the command down
        return [f"coder could not check the repository for what would run later outside the sandbox ({exc})"]
    if found and hooks is not None and hooks.report is not None:
        hooks.report(found)
    return [report(found)] if found else []


def before_command(workspace: Path, hooks: AfterHooks | None = None) -> list[str]:
    """Notes for the model and the user before a sandboxed command (what a background job left)."""
    return _notes(workspace, "before", hooks)


def after_command(workspace: Path, hooks: AfterHooks | None = None) -> list[str]:
    """Notes after a sandboxed command; `hooks` asks the user and tells the frontends (None: nobody to ask)."""
    return _notes(workspace, "after", hooks)


def at_close(workspace: Path) -> None:
    """When a shell ends (its background jobs with it): the check once more; findings go to the log. The inotify
    instance is closed (they are limited per user: 128 by default); a later shell here walks once, then watches."""
    for note in _notes(workspace, "after", None):
        logging.getLogger("coder").warning("%s: %s", workspace, note)
    checker(workspace).close()


def accept(workspace: Path, rels: list[str]) -> None:
    """Files coder wrote itself with the user's say (the editor): not leftovers of a command."""
    check = checker(workspace)
    with check.lock:
        if check.leftovers is not None and check.leftovers.started:
            check.leftovers.accept(rels)
