"""Host git that sandboxed code cannot steer: the one way coder runs `git` outside the sandbox.

The sandbox can write almost all of the work tree: nested repositories (`sub/.git/config`, or a `.git` file
pointing at a git dir it wrote), `.gitattributes`, and everything under the top-level `.git` but its `hooks` and
`config`. Git executes programs named in configuration (fsmonitor, hooks, filters, diff and merge drivers,
pagers, ssh, credential helpers), and coder runs git on the host after every turn (checkpoints), for `/undo`,
review, commits and batch workspaces. So every host git command gets:

- a scrubbed environment built from an allow-list (no provider keys or other secret-named variables, none of
  the caller's GIT_DIR/GIT_INDEX_FILE leaking in), LC_ALL=C, no prompts, no network transport;
- `FORCED_CONFIG`, passed as command-line config (the highest precedence, and handed on to any child git);
- every filter, diff and merge driver that the repository's own configuration defines, neutralised
  (`driver_overrides`; drivers from the user's global or system config, which the sandbox cannot write, stay);
- submodules ignored, and `--no-ext-diff --no-textconv` on the commands that diff;
- the git dir and work tree pinned when the directory is a repository's top, so a planted `.git/commondir` or a
  `core.worktree` cannot move git's idea of either.

This module imports nothing of coder's but the secret-name test, so every layer can use it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coder.sandbox.env import ALLOW_PREFIXES, BASE_ALLOW, looks_secret

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

#: host variables passed through besides the sandbox's BASE_ALLOW: what the user's own git (and a host hook)
#: needs to find its configuration and identity
HOST_ALLOW: tuple[str, ...] = (
    "HOME", "TMPDIR", "SHELL", "TERM", "EMAIL", "GNUPGHOME",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE",
)

#: config keys naming programs that attributes select (`filter=`, `diff=`, `merge=` in .gitattributes)
DRIVER_KEYS = r"^(filter\..+\.(clean|smudge|process)|diff\..+\.(command|textconv)|merge\..+\.driver)$"
#: config scopes the sandbox cannot write; drivers defined there are the user's own and stay
TRUSTED_SCOPES = frozenset({"system", "global"})
#: subcommands that neither read the work tree nor write an index, so never run a driver (everything else gets
#: the repository's drivers neutralised: even `write-tree` re-hashes racily clean entries through the clean filter)
NO_DRIVER_COMMANDS = frozenset({
    "rev-parse", "for-each-ref", "update-ref", "ls-tree", "commit-tree", "symbolic-ref", "config",
    "check-ref-format", "version", "--version", "show-ref", "merge-base", "cat-file",
})
#: the index mode of a gitlink (a submodule or an embedded repository)
GITLINK_MODE = "160000"
#: flags added right after these subcommands
COMMAND_FLAGS: dict[str, tuple[str, ...]] = {
    "diff": ("--no-ext-diff", "--no-textconv", "--ignore-submodules=all"),
    "status": ("--ignore-submodules=all",),
    "log": ("--no-ext-diff", "--no-textconv"),
    "show": ("--no-ext-diff", "--no-textconv"),
}


def scrubbed_host_env(host: Mapping[str, str] | None = None) -> dict[str, str]:
    """The host environment minus everything not allow-listed and everything secret-named.

    Used for host git and for `sandbox = false` user hooks: both run code the user chose, but neither needs the
    model provider's keys, and both may end up running something a repository planted."""
    host = os.environ if host is None else host
    allow = set(BASE_ALLOW) | set(HOST_ALLOW)
    env = {name: value for name, value in host.items()
           if (name in allow or name.startswith(ALLOW_PREFIXES)) and not looks_secret(name)}
    env.setdefault("PATH", os.defpath)
    return env


def host_git_env(extra: Mapping[str, str] | None = None, protocols: str = "") -> dict[str, str]:
    """The environment of one host git command: scrubbed, `FORCED_ENV`, `FORCED_CONFIG` as GIT_CONFIG_*
    variables, then the caller's `extra` (e.g. a private GIT_INDEX_FILE). `protocols` ("file", "file:https")
    lets a batch workspace clone; nothing else may use a transport."""
    env = scrubbed_host_env()
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
    """The git executable (raises FileNotFoundError, an OSError, when there is none)."""
    exe = shutil.which("git")
    if exe is None:
        raise FileNotFoundError("git is not installed or not on PATH (install it: apt-get install git)")
    return exe


class PlantedGitDir(OSError):
    """The repository's `.git` holds a file git itself never writes there; nothing is run until it is removed."""


def pinned_repo(cwd: Path) -> dict[str, str]:
    """GIT_DIR/GIT_COMMON_DIR/GIT_WORK_TREE when `cwd` is the top of a repository with a `.git` directory.

    A `core.worktree` in config could otherwise move the work tree out of the workspace. A `.git/commondir`
    (which git writes only for linked worktrees, in `.git/worktrees/<name>/`) would move config, refs and
    objects to a directory the sandbox wrote; git reads it for refs even when GIT_COMMON_DIR says otherwise, so
    it is refused outright. A `.git` file (linked worktree, submodule) is left to git's discovery."""
    dot_git = cwd / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink():
        if os.path.lexists(dot_git / "commondir"):
            raise PlantedGitDir(
                f"{dot_git / 'commondir'} exists: git only writes that file for linked worktrees, so something "
                "(a command in the sandbox?) planted it to redirect the repository. coder runs no git here until "
                "you have checked and removed it.")
        top = str(cwd.resolve())
        gdir = str(dot_git.resolve())
        return {"GIT_DIR": gdir, "GIT_COMMON_DIR": gdir, "GIT_WORK_TREE": top}
    return {}


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


def driver_overrides(cwd: Path, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """Empty values for every filter/diff/merge driver defined outside the user's own config.

    An empty `filter.X.clean`/`smudge`/`process` with `required=false` stores and checks out bytes as they are;
    an empty `merge.X.driver` makes git fall back to its own merge. Tested in tests/security/test_security_git.py.
    """
    proc = subprocess.run(
        [git_path(), "config", "-z", "--show-scope", "--name-only", "--get-regexp", DRIVER_KEYS],
        cwd=cwd, env=dict(env), capture_output=True, stdin=subprocess.DEVNULL, timeout=60,
    )
    if proc.returncode not in (0, 1):  # 1: nothing matched
        raise OSError(f"cannot read the git configuration in {cwd}: {proc.stderr.decode(errors='replace').strip()}")
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    pairs: list[tuple[str, str]] = []
    for scope, name in zip(fields[0::2], fields[1::2], strict=False):
        if scope in TRUSTED_SCOPES or scope == "command":
            continue
        pairs.append((name, ""))
        if name.startswith("filter."):
            pairs.append((name.rsplit(".", 1)[0] + ".required", "false"))
    return pairs


def untrusted_drivers(cwd: Path) -> list[str]:
    """Names of the drivers (`filter.lfs`, `diff.x`) the repository's own config defines: coder does not run them."""
    env = host_git_env(pinned_repo(cwd))
    names = {key.rsplit(".", 1)[0] for key, value in driver_overrides(cwd, env) if not key.endswith(".required")}
    return sorted(names)


def _gitlink_paths(cwd: Path, env: Mapping[str, str]) -> list[str]:
    """Gitlinks in the index `env` names. `git add` runs `git status` inside each one it is given, and that child
    reads the submodule's own config (its drivers are not among our overrides), whatever diff.ignoreSubmodules
    says; so `add` never gets them (an existing submodule is never moved by coder's add)."""
    proc = subprocess.run([git_path(), "ls-files", "--stage", "-z"], cwd=cwd, env=dict(env), capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    return list(parse_gitlinks(proc.stdout.decode("utf-8", "surrogateescape")))


def parse_gitlinks(stage_listing: str) -> dict[str, str]:
    """path -> commit for the gitlinks in `git ls-files --stage -z` output."""
    links = {}
    for record in filter(None, stage_listing.split("\0")):
        meta, _, path = record.partition("\t")
        mode, sha = (meta.split() + ["", ""])[:2]
        if mode == GITLINK_MODE:
            links[path] = sha
    return links


def run(
    cwd: Path,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    input: bytes | str | None = None,
    text: bool = True,
    timeout: float | None = None,
    protocols: str = "",
) -> subprocess.CompletedProcess:
    """Run `git *args` in `cwd`, hardened as the module docstring says. Never raises for git's own failure (the
    caller reads returncode); OSError when git cannot start, subprocess.TimeoutExpired after `timeout`."""
    cwd = Path(cwd)
    full_env = host_git_env({**pinned_repo(cwd), **(env or {})}, protocols)
    args = list(args)
    at, sub = subcommand(args)
    if sub not in NO_DRIVER_COMMANDS or any(a in ("--filters", "--textconv") for a in args):
        _add_config(full_env, driver_overrides(cwd, full_env))
    if sub in COMMAND_FLAGS:
        args[at + 1:at + 1] = [f for f in COMMAND_FLAGS[sub] if f not in args]
    if sub == "add":
        excludes = [f":(exclude,literal){path}" for path in _gitlink_paths(cwd, full_env)]
        if excludes:
            args += excludes if "--" in args else ["--", *excludes]
    if isinstance(input, str) and not text:
        input = input.encode()
    extra: dict[str, Any] = {"input": input} if input is not None else {"stdin": subprocess.DEVNULL}
    return subprocess.run(  # stdin is closed unless we feed it: git must never wait on ours
        [git_path(), *args], cwd=cwd, env=full_env, capture_output=True, text=text,
        errors="surrogateescape" if text else None, timeout=timeout, **extra,
    )
