"""Which git configuration coder's host git honours: a program comes from the user, never from the repository.

Git runs programs that its configuration names (a signing program, drivers, helpers, proxies), and it reads
configuration from the repository too: `.git/config`, `.git/config.worktree`, and every file those include
(`include.path`, `includeIf.*.path`), which may lie in the work tree (the common `git config include.path
../.gitconfig` step). A repository that arrives with its `.git` (an archive, a shared folder) or a work-tree file
the sandbox wrote must not choose what coder's host git runs. So before a host git command, coder lists the
configuration git would read (`git config --list --show-origin --show-scope`, which runs nothing) and, for every
key of `PROGRAM_KEYS` whose value would come from the repository, gives git the user's own value instead (the last
one the user's global or system config sets), or a neutral one when the user sets none. The user's own signing
(`commit.gpgSign` and `gpg.program` in `~/.gitconfig`) keeps working; a repository can neither name the program nor
turn signing on (it may turn it off: `HARMLESS` values are honoured from anywhere).

An entry is the user's when git read it from the system or global config *and* its file lies outside every
workspace and git dir (a global `include.path` into the work tree is the sandbox's to write). Keys coder never
needs at all (fsmonitor, hooks, pagers, editors, ssh and askpass programs, credential helpers, external diff) are
forced off for every scope by coder/host/git.py `FORCED_CONFIG`; this module covers those the user may rely on.

Keys no command of coder's reads, so never overridden (docs/decisions/43-host-safety-round-3.md lists them):
`alias.*` (git never expands an alias named like the builtins coder runs), difftool/mergetool/man/browser/web/
guitool/instaweb commands, `sendemail.*`, `imap.tunnel`, `interactive.diffFilter` (interactive commands),
`trailer.*.cmd` (no `--trailer`, no `interpret-trailers`), `submodule.*.update` (no `submodule update`),
`tar.*.command` (only `archive --format=tar`), `core.gitProxy` and `remote.*.vcs` (no transport but file and https
is ever allowed), `uploadpack.packObjectsHook` (git itself reads it only from protected config), `http.*` (an
existing repository is never fetched over https by coder).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: config scopes the sandbox cannot write (and "command": coder's own `GIT_CONFIG_*`)
USER_SCOPES = frozenset({"system", "global", "command"})
#: boolean spellings git reads as false: a repository may turn a signing switch off
FALSE = frozenset({"false", "no", "off", "0", ""})


@dataclass(frozen=True)
class Entry:
    """One line of `git config --list --show-origin --show-scope`: where git read it, and what."""

    scope: str  # system | global | local | worktree | command
    origin: str  # the file's absolute path; "" for the command line, standard input or a blob
    key: str  # lower-case section and name, the subsection as written (`filter.LFS.smudge` stays)
    value: str


@dataclass(frozen=True)
class ProgramKey:
    """A key that names a program git runs, or decides whether one runs."""

    pattern: re.Pattern[str]
    #: the value git gets when the repository's would apply and the user sets none
    neutral: str
    #: values honoured from anywhere (they run nothing)
    harmless: frozenset[str]
    why: str


def _key(pattern: str, neutral: str, why: str, harmless: frozenset[str] = frozenset()) -> ProgramKey:
    return ProgramKey(re.compile(pattern), neutral, harmless, why)


#: what coder's host git honours only from the user's own config (matched on the lower-cased key)
PROGRAM_KEYS: tuple[ProgramKey, ...] = (
    _key(r"gpg\.program|gpg\.openpgp\.program", "gpg", "the OpenPGP signing and verifying program"),
    _key(r"gpg\.x509\.program", "gpgsm", "the X.509 signing program"),
    _key(r"gpg\.ssh\.program", "ssh-keygen", "the SSH signing program"),
    _key(r"gpg\.format", "openpgp", "which of the signing programs runs", frozenset({"openpgp"})),
    _key(r"gpg\.ssh\.defaultkeycommand", "false", "a program run to find the SSH signing key"),
    _key(r"commit\.gpgsign|tag\.gpgsign|tag\.forcesignannotated|push\.gpgsign|merge\.verifysignatures",
         "false", "a switch that runs the signing program on every commit, tag or merge", FALSE),
    _key(r"filter\..+\.(clean|smudge|process)", "", "a filter driver, run on content by add, status, diff, "
         "checkout and write-tree (the attributes name it)"),
    _key(r"diff\..+\.(command|textconv)", "", "a diff driver or text converter"),
    _key(r"merge\..+\.driver", "", "a merge driver (an empty one: git's own merge)"),
    _key(r"core\.alternaterefscommand", "true", "a program run to list an alternate's refs during fetches"),
    _key(r"remote\..+\.uploadpack", "git-upload-pack", "the program a fetch runs on the other side"),
    _key(r"remote\..+\.receivepack", "git-receive-pack", "the program a push runs on the other side"),
    _key(r"pager\..+", "false", "a pager for one command"),
    _key(r"lfs\.customtransfer\..+\.path|lfs\.extension\..+\.(clean|smudge)|lfs\.standalonetransferagent", "",
         "a program git-lfs runs (it reads git's configuration, these overrides included)"),
)


def program_key(key: str) -> ProgramKey | None:
    low = key.lower()
    return next((k for k in PROGRAM_KEYS if k.pattern.fullmatch(low)), None)


def parse_listing(data: bytes, cwd: Path) -> list[Entry]:
    """The entries of `git config --list --show-origin --show-scope -z` output, in git's order (later wins).
    Relative origins (git prints `.git/config` when the git dir is relative) are made absolute against `cwd`."""
    fields = data.decode("utf-8", "surrogateescape").split("\0")
    entries: list[Entry] = []
    for scope, origin, record in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
        key, _, value = record.partition("\n")
        path = ""
        if origin.startswith("file:"):
            path = os.path.normpath(os.path.join(cwd, origin[len("file:"):]))
        entries.append(Entry(scope, path, key, value))
    return entries


def _inside(path: str, roots: Sequence[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots)


def is_users(entry: Entry, roots: Sequence[str]) -> bool:
    """Whether `entry` is the user's own: read from the system or global config (or coder's command line), from a
    file outside `roots` (the workspaces, the work tree and its git dirs, real paths)."""
    if entry.scope not in USER_SCOPES:
        return False
    return not (entry.origin and _inside(entry.origin, roots))


def overrides(entries: Iterable[Entry], roots: Sequence[str]) -> list[tuple[str, str]]:
    """The `GIT_CONFIG_*` pairs that make every key of `PROGRAM_KEYS` take the user's value: for each such key
    whose last entry (the one git would use) is not the user's and not harmless, the user's last value, or the
    key's neutral value. An emptied filter gets `required = false`, so git stores and checks out bytes as they are.
    """
    last: dict[str, Entry] = {}  # by the key as git prints it (a subsection keeps its case, as git tells them)
    users: dict[str, str] = {}
    for entry in entries:
        if program_key(entry.key) is None:
            continue
        last[entry.key] = entry
        if is_users(entry, roots):
            users[entry.key] = entry.value
    pairs: list[tuple[str, str]] = []
    for key, entry in last.items():
        spec = program_key(key)
        assert spec is not None  # only program keys were kept
        if is_users(entry, roots) or entry.value.strip().lower() in spec.harmless:
            continue
        value = users.get(key, spec.neutral)
        pairs.append((key, value))
        if key.startswith("filter.") and value == "":
            pairs.append((entry.key.rsplit(".", 1)[0] + ".required", "false"))
    return pairs


def include_targets(entries: Iterable[Entry]) -> list[str]:
    """Every file an `include.path` or `includeIf.<condition>.path` entry names (whatever its condition, and
    whether or not it exists yet), resolved as git resolves it: `~/` from HOME, a relative path from the folder of
    the file that holds the entry. Entries without a file (the command line) name nothing here."""
    found: list[str] = []
    for entry in entries:
        low = entry.key.lower()
        if not (low == "include.path" or (low.startswith("includeif.") and low.endswith(".path"))):
            continue
        value = entry.value
        if value.startswith("~/"):
            value = os.path.join(os.environ.get("HOME", "/"), value[2:])
        elif not os.path.isabs(value):
            if not entry.origin:
                continue
            value = os.path.join(os.path.dirname(entry.origin), value)
        found.append(os.path.normpath(value))
    return list(dict.fromkeys(found))
