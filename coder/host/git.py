"""Host git that sandboxed code cannot steer: the one way coder runs `git` outside the sandbox, on the door.

The sandbox can write almost all of the work tree: nested repositories (`sub/.git/config`, or a `.git` file
pointing at a git dir it wrote), `.gitattributes`, and everything under the top-level `.git` but its `hooks` and
`config`. Git executes programs named in configuration (fsmonitor, hooks, filters, diff and merge drivers,
pagers, ssh, credential helpers), and coder runs git on the host after every turn (checkpoints), for `/undo`,
review, commits and batch workspaces. So every host git command gets:

- a scrubbed environment built from an allow-list (no provider keys or other secret-named variables, none of
  the caller's GIT_DIR/GIT_INDEX_FILE leaking in), LC_ALL=C, no prompts, no network transport;
- `FORCED_CONFIG`, passed as command-line config (the highest precedence, and handed on to any child git);
- every key that names a program (the signing program and its switches, filter, diff and merge drivers, upload
  and receive packs, ...: coder/host/gitconfig.py) taken from the user's own config only: where the repository's
  configuration (`.git/config`, `config.worktree`, whatever they include) would decide, git is given the user's
  value or a neutral one (`program_overrides`);
- submodules ignored, and `--no-ext-diff --no-textconv` on the commands that diff;
- the git dir and work tree pinned to the nearest `.git` entry (directory, file or link) at or above the
  directory, found here rather than by git, so a planted `.git` file, `.git/commondir` or `core.worktree` cannot
  move the work tree (and with it coder's workspace) away from the directory the user started in or its ancestors;
- a refusal to run at all when the git dir holds a symlink git would write through (refs, logs, objects, index),
  so no host git command of coder's appends a reflog line or writes an object outside the repository (the git
  dir is read for that, and a `.git` file's path, in coder/host/gitdir.py).

Every git process starts through the door (coder/host/spawn.py: program found outside the workspace, stdin
closed, a timeout, its own process group), with the work tree as its working directory: git's job is that tree,
and with GIT_DIR and GIT_WORK_TREE pinned the directory decides nothing else.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from coder.host import gitconfig
from coder.host.gitdir import PlantedGitDir, check_git_dir_links, gitfile_target, read_small
from coder.host.spawn import CompletedProcess, Text, safe_env, which, workspaces
from coder.host.spawn import run as door_run

#: (key, value, what it stops); given to every host git command, overriding every config file
FORCED_CONFIG: tuple[tuple[str, str, str], ...] = (
    ("core.fsmonitor", "false", "an fsmonitor program, run by status/add/diff on every index refresh"),
    ("core.hooksPath", "/dev/null", "every hook, reference-transaction and post-index-change included "
                                    "(commit.py runs the user's commit hooks itself, in the sandbox)"),
    ("core.pager", "cat", "a pager program (we never have a terminal, but a stray `-p` must not matter)"),
    ("diff.external", "", "an external diff program for porcelain diffs"),
    ("core.sshCommand", "false", "an ssh program named in config"),
    ("core.askPass", "", "a password prompt program"),
    ("credential.helper", "", "credential helper programs (an empty value clears the list)"),
    ("core.editor", ":", "an editor (`:` is git's own 'do not launch')"),
    ("sequence.editor", ":", "a rebase todo editor"),
    ("protocol.allow", "never", "every transport: nothing reaches the network or another repository"),
    ("diff.ignoreSubmodules", "all", "a git child process run inside each submodule (with its own config)"),
    ("submodule.recurse", "false", "commands recursing into submodules"),
    ("status.submoduleSummary", "false", "status running log inside submodules"),
    ("fetch.recurseSubmodules", "false", "fetches recursing into submodules"),
    ("log.showSignature", "false", "a signature verification program when a commit is shown"),
    ("gc.auto", "0", "a background `git gc --auto` (and its pre-auto-gc hook) after our writes"),
    ("maintenance.auto", "false", "background maintenance after our writes"),
    ("advice.addEmbeddedRepo", "false", "a hint on stderr when an embedded repository is seen"),
)

#: forced environment: no prompts, stable messages, no replace refs, no index writes by read-only commands
FORCED_ENV: dict[str, str] = {
    "LC_ALL": "C",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "GIT_NO_REPLACE_OBJECTS": "1",  # refs/replace is sandbox-writable: it would swap what review and commit read
    "GIT_OPTIONAL_LOCKS": "0",  # `git status` must not rewrite the user's index
}

#: config keys naming programs that attributes select (`filter=`, `diff=`, `merge=` in .gitattributes)
DRIVER_KEYS = re.compile(r"(filter\..+\.(clean|smudge|process)|diff\..+\.(command|textconv)|merge\..+\.driver)",
                         re.IGNORECASE)
#: subcommands that run no program a key of gitconfig.PROGRAM_KEYS names: they neither read the work tree nor
#: write an index (so no driver: even `write-tree` re-hashes racily clean entries through the clean filter), sign
#: nothing and reach no other repository. Everything else gets `program_overrides` first (one `git config` listing):
#: `commit-tree` signs with `-S`, and `config` must read the values the overrides give (commit.py asks it whether
#: the user signs)
NO_PROGRAM_COMMANDS = frozenset({
    "rev-parse", "for-each-ref", "update-ref", "ls-tree", "symbolic-ref", "check-ref-format", "version",
    "--version", "show-ref", "merge-base", "cat-file", "stripspace",
    "check-ignore",  # matches names against ignore rules; never reads file content
})
#: subcommands that make a repository: a pinned GIT_DIR would make them write into the enclosing one
CREATING_COMMANDS = frozenset({"clone", "init"})
#: the index mode of a gitlink (a submodule or an embedded repository)
GITLINK_MODE = "160000"
#: flags added right after these subcommands
COMMAND_FLAGS: dict[str, tuple[str, ...]] = {
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=all"),
    "status": ("--ignore-submodules=all",),
    "log": ("--no-ext-diff", "--no-textconv"),
    "show": ("--no-ext-diff", "--no-textconv"),
}


def host_git_env(extra: Mapping[str, str] | None = None, protocols: str = "") -> dict[str, str]:
    """The environment of one host git command: scrubbed, `FORCED_ENV`, `FORCED_CONFIG` as GIT_CONFIG_*
    variables, then the caller's `extra` (e.g. a private GIT_INDEX_FILE). `protocols` ("file", "file:https")
    lets a batch workspace clone; nothing else may use a transport."""
    env = safe_env()
    env.update(FORCED_ENV)
    env["GIT_ALLOW_PROTOCOL"] = protocols
    _add_config(env, [(key, value) for key, value, _ in FORCED_CONFIG])
    if extra:
        env.update(extra)
    return env


def _add_config(env: dict[str, str], pairs: Sequence[tuple[str, str]]) -> None:
    """Append config to env as GIT_CONFIG_COUNT/KEY/VALUE (no quoting problems, unlike `-c k=v` with a `=` in a
    driver's name)."""
    count = int(env.get("GIT_CONFIG_COUNT", "0"))
    for key, value in pairs:
        env[f"GIT_CONFIG_KEY_{count}"] = key
        env[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    env["GIT_CONFIG_COUNT"] = str(count)


def git_path() -> str:
    """The git executable, found outside every workspace (raises FileNotFoundError, an OSError, when there is
    none)."""
    try:
        return which("git")
    except FileNotFoundError:
        raise FileNotFoundError("git is not installed or not on PATH (install it: apt-get install git)") from None


#: the timeout of a host git command whose caller names none: long enough for a clone of a big repository
DEFAULT_TIMEOUT = 900.0


def _git(cwd: Path, args: Sequence[str], env: Mapping[str, str], timeout: float, input: bytes | str | None = None,
         text: bool = False) -> CompletedProcess:
    """One git process through the door. What follows `--` are pathspecs, matched against the index and the tree
    (git lstats work-tree files and opens regular ones only), so they are text to the door's operand check."""
    words = list(args)
    if "--" in words:
        at = words.index("--")
        words[at + 1:] = [Text(w) for w in words[at + 1:]]
    return door_run([git_path(), *words], purpose="host git", workdir=cwd, env=env, timeout=timeout, input=input,
                    text=text, errors="surrogateescape" if text else None)


def repo_top(cwd: Path) -> Path | None:
    """The nearest directory at or above `cwd` that holds a `.git` entry (a directory, a gitdir file or a link),
    as git's own discovery would find it (stopping at a file system boundary), or None.

    Found here, not by asking git, because git's answer comes from configuration (`core.worktree` in the git dir
    a `.git` file names), which a sandboxed command may have written: the top must be `cwd` or an ancestor."""
    here = Path(os.path.realpath(cwd))
    try:
        device = os.stat(here).st_dev
    except OSError:
        return None
    for folder in (here, *here.parents):
        try:
            st = os.stat(folder)
        except OSError:
            return None
        if st.st_dev != device:
            return None
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def pinned_repo(cwd: Path) -> dict[str, str]:
    """GIT_DIR/GIT_WORK_TREE (and GIT_COMMON_DIR for a `.git` directory) of the repository `cwd` is in.

    The work tree is always the folder holding the nearest `.git` entry (`repo_top`), so a `core.worktree` in
    config cannot move it. A `.git` file or link is handed to git as GIT_DIR (git reads the gitdir it names; a
    linked worktree's `commondir` there is legitimate). A `.git/commondir` in a `.git` directory (git writes that
    file only in `.git/worktrees/<name>/`) would move config, refs and objects to a directory the sandbox wrote,
    and git reads it for refs even when GIT_COMMON_DIR says otherwise, so it is refused outright, as is a symlink
    in the git dir that git writes through (`check_git_dir_links`)."""
    top = repo_top(cwd)
    if top is None:
        return {}
    dot_git = top / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink():
        if os.path.lexists(dot_git / "commondir"):
            raise PlantedGitDir(
                f"{dot_git / 'commondir'} exists: git only writes that file for linked worktrees, so something "
                "(a command in the sandbox?) planted it to redirect the repository. coder runs no git here until "
                "you have checked and removed it.")
        check_git_dir_links(dot_git)
        gdir = str(dot_git)
        return {"GIT_DIR": gdir, "GIT_COMMON_DIR": gdir, "GIT_WORK_TREE": str(top)}
    target = gitfile_target(dot_git)
    if target is not None and target.is_dir():
        _check_points_back(dot_git, target, top)
        check_git_dir_links(target)
    return {"GIT_DIR": str(dot_git), "GIT_WORK_TREE": str(top)}


def _check_points_back(dot_git: Path, target: Path, top: Path) -> None:
    """A `.git` file or link naming a git dir outside the work tree must be one git made: a linked worktree's
    (its `gitdir` file names this `.git` back) or an absorbed submodule's (its `core.worktree` names this tree).
    Anything else was planted (the sandbox can write a `.git` file, not the far side), and following it would
    make coder's checkpoints write refs and objects into somebody else's git dir, anywhere on the host."""
    if target == top or top in target.parents:
        return
    back = read_small(target / "gitdir")
    if back is not None and os.path.realpath(back.strip() or "/nonexistent") == os.path.realpath(dot_git):
        return
    proc = _git(top, ["config", "--file", str(target / "config"), "--get", "core.worktree"], host_git_env(), 30,
                text=True)
    worktree = proc.stdout.strip()
    if proc.returncode == 0 and worktree and os.path.realpath(target / worktree) == str(top):
        return
    raise PlantedGitDir(
        f"{dot_git} names the git dir {target}, outside {top}, and that git dir does not name this work tree "
        "back (as a linked worktree or a submodule would): something (a command in the sandbox?) planted it. "
        "coder runs no git here until you have checked and removed it.")


def subcommand(args: Sequence[str]) -> tuple[int, str]:
    """Where the git subcommand is in `args`, and its name (global options such as `-c k=v` skipped)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-c", "-C", "--git-dir", "--work-tree"):
            i += 2
        elif arg.startswith("-") and arg != "--version":
            i += 1
        else:
            return i, arg
    return len(args), ""


def config_entries(cwd: Path, env: Mapping[str, str]) -> list[gitconfig.Entry]:
    """Every configuration entry git would read in `cwd` with `env`, includes followed, with its scope and file
    (`git config --list` runs no program)."""
    proc = _git(cwd, ["config", "--list", "--show-origin", "--show-scope", "-z"], env, 60)
    if proc.returncode != 0:
        raise OSError(f"cannot read the git configuration in {cwd}: {proc.stderr.decode(errors='replace').strip()}")
    return gitconfig.parse_listing(proc.stdout, cwd)


def repo_roots(cwd: Path, env: Mapping[str, str]) -> list[str]:
    """Real paths a sandbox may write that hold this repository's files: the registered workspaces, the work tree
    and the git dirs `env` pins. A config file inside one of them is never the user's, whatever its scope."""
    roots = list(workspaces())
    for name in ("GIT_WORK_TREE", "GIT_DIR", "GIT_COMMON_DIR"):
        if env.get(name):
            roots.append(os.path.realpath(env[name]))
    gdir = env.get("GIT_DIR")
    if gdir and not os.path.isdir(gdir):  # a `.git` file: the git dir it names
        target = gitfile_target(Path(gdir))
        if target is not None:
            roots.append(str(target))
    top = repo_top(cwd)
    roots.append(os.path.realpath(top if top is not None else cwd))
    return list(dict.fromkeys(roots))


def program_overrides(cwd: Path, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """The `GIT_CONFIG_*` pairs that give every program-naming key the user's value (coder/host/gitconfig.py).
    Tested in tests/security/test_security_git.py and test_security_git_programs.py."""
    return gitconfig.overrides(config_entries(cwd, env), repo_roots(cwd, env))


def untrusted_drivers(cwd: Path) -> list[str]:
    """Names of the drivers (`filter.lfs`, `diff.x`) the repository's own config defines: coder does not run them."""
    env = host_git_env(pinned_repo(cwd))
    roots = repo_roots(cwd, env)
    names = {entry.key.rsplit(".", 1)[0] for entry in config_entries(cwd, env)
             if DRIVER_KEYS.fullmatch(entry.key) and not gitconfig.is_users(entry, roots)}
    return sorted(names)


def _gitlink_paths(cwd: Path, env: Mapping[str, str]) -> list[str]:
    """Gitlinks in the index `env` names. `git add` runs `git status` inside each one it is given, and that child
    reads the submodule's own config (its drivers are not among our overrides), whatever diff.ignoreSubmodules
    says; so `add` never gets them (an existing submodule is never moved by coder's add)."""
    proc = _git(cwd, ["ls-files", "--stage", "-z"], env, 120)
    return list(parse_gitlinks(proc.stdout.decode("utf-8", "surrogateescape")))


def _may_run_programs(sub: str, args: Sequence[str]) -> bool:
    """Whether the command can run a program a config key names (then the repository's are overridden first, at
    the cost of one `git config` listing). `ls-files` reads content only for
    `-m`/`--modified` (a racily clean entry is re-hashed through the clean filter); its other listings
    (`--stage`, `--others`, `--cached`) read names and the index only."""
    if any(a in ("--filters", "--textconv") for a in args):
        return True
    if sub == "ls-files":
        return any(a == "--modified" or (a.startswith("-") and not a.startswith("--") and "m" in a) for a in args)
    return sub not in NO_PROGRAM_COMMANDS


def parse_gitlinks(stage_listing: str) -> dict[str, str]:
    """path -> commit for the gitlinks in `git ls-files --stage -z` output."""
    links = {}
    for record in filter(None, stage_listing.split("\0")):
        meta, _, path = record.partition("\t")
        mode, sha = (meta.split() + ["", ""])[:2]
        if mode == GITLINK_MODE:
            links[path] = sha
    return links


def parse_hidden(tagged_listing: str) -> list[str]:
    """The paths `git ls-files -v -z` marks assume-unchanged (a lowercase tag) or skip-worktree (`S`): git status,
    diff and `add -A` take their work-tree file as unchanged, whatever it holds."""
    return [path for tag, _, path in (r.partition(" ") for r in tagged_listing.split("\0") if r)
            if tag.islower() or tag == "S"]


def run(
    cwd: Path,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    input: bytes | str | None = None,
    text: bool = True,
    timeout: float | None = None,
    protocols: str = "",
) -> CompletedProcess:
    """Run `git *args` in `cwd`, hardened as the module docstring says. Never raises for git's own failure (the
    caller reads returncode); OSError when git cannot start, coder.host.TimeoutExpired after `timeout` (default
    DEFAULT_TIMEOUT)."""
    cwd = Path(cwd)
    args = list(args)
    at, sub = subcommand(args)
    pinned = {} if sub in CREATING_COMMANDS else pinned_repo(cwd)
    full_env = host_git_env({**pinned, **(env or {})}, protocols)
    if _may_run_programs(sub, args):
        _add_config(full_env, program_overrides(cwd, full_env))
    if sub in COMMAND_FLAGS:
        args[at + 1:at + 1] = [f for f in COMMAND_FLAGS[sub] if f not in args]
    if sub == "add":
        excludes = [f":(exclude,literal){path}" for path in _gitlink_paths(cwd, full_env)]
        if excludes:
            args += excludes if "--" in args else ["--", *excludes]
    if isinstance(input, str) and not text:
        input = input.encode()
    return _git(cwd, args, full_env, DEFAULT_TIMEOUT if timeout is None else timeout, input, text)
