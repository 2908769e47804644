"""Shell commands that only read, allowed in every mode (plan included) without asking.

Kept deliberately short and argument-aware: `find` is read-only until `-exec`/`-delete`, `git branch` until it
gets a name to create or `-D`, `sort` until `-o`. Anything with an output redirection to a file, an environment
assignment in front (`GIT_PAGER=... git log` runs a program) or a computed command name is not on the list."""

from __future__ import annotations

from coder.policy.shellparse import SimpleCommand

#: commands that read whatever their arguments
PLAIN: frozenset[str] = frozenset({
    "ls", "ll", "la", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "pwd", "echo", "printf",
    "which", "type", "file", "stat", "du", "df", "tree", "diff", "cmp", "uniq", "cut", "tr", "nl", "basename",
    "dirname", "realpath", "readlink", "date", "true", "false", "test", "[", "whoami", "id", "uname", "hostname",
    "cd", "pushd", "popd", "jq", "md5sum", "sha1sum", "sha256sum", "column", "fold", "expand", "rev", "tac",
    "comm", "sort", "strings", "od", "xxd", "hexdump", "seq", "sleep", "nproc", "free", "uptime", "locale", "export",
    "declare", "local", "unset", "alias", "set", "shopt", "history", "jobs", "wait", "ps", "tty", "getconf",
})
#: flags that turn an otherwise read-only command into one that writes or runs things
_BAD_FLAGS: dict[str, tuple[str, ...]] = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "sort": ("-o", "--output"),
    "rg": ("--pre",),
    "tree": ("-o",),
    "set": (),
}
_GIT_READ = frozenset({"status", "diff", "log", "show", "blame", "ls-files", "ls-tree", "rev-parse", "grep",
                       "describe", "shortlog", "cat-file", "rev-list", "merge-base", "show-ref", "reflog", "whatchanged"})
_BRANCH_FLAGS = frozenset({"-a", "-r", "-v", "-vv", "--list", "-l", "--all", "--remotes", "--show-current",
                           "--contains", "--merged", "--no-merged", "--no-color"})


def _lister_read_only(sub: str, rest: list[str]) -> bool | None:
    """git subcommands that list by default and write when given a name; None when not one of them."""
    first = rest[0] if rest else None
    if sub == "branch":
        return all(a in _BRANCH_FLAGS for a in rest)
    if sub == "tag":
        return first is None or first in ("-l", "--list", "-n")
    if sub == "remote":
        return first is None or first in ("-v", "--verbose", "show", "get-url")
    if sub == "stash":
        return first in ("list", "show")
    if sub == "config":
        return first in ("--get", "--list", "-l", "--get-all", "--get-regexp")
    return None


def _git_read_only(args: list[str]) -> bool:
    i = 0
    while i < len(args) and args[i].startswith("-"):  # global options: -C dir, --no-pager, -c (config: not read-only)
        if args[i] in ("-c", "--exec-path", "--git-dir", "--work-tree") or args[i].startswith("--config"):
            return False
        i += 2 if args[i] == "-C" else 1
    if i >= len(args):
        return True
    sub, rest = args[i], args[i + 1:]
    if any(a.startswith("--output") or a == "--ext-diff" or a.startswith("--exec") for a in rest):
        return False
    if sub in _GIT_READ:
        return not (sub == "reflog" and rest[:1] and rest[0] in ("expire", "delete"))
    lister = _lister_read_only(sub, rest)
    return bool(lister)


def is_read_only(cmd: SimpleCommand) -> bool:
    """True when `cmd` is on the built-in read-only list (with safe arguments and no writes)."""
    if cmd.dynamic or cmd.writes_files or cmd.assignments or not cmd.words:
        return False
    name = cmd.words[0]
    args = cmd.words[1:]
    if "/" in name:
        return False
    if name == "git":
        return _git_read_only(args)
    if name == "sed":
        return bool(args) and args[0] == "-n" and not any(a.startswith("-i") or a.startswith("--in-place")
                                                          for a in args)
    if name in PLAIN:
        bad = _BAD_FLAGS.get(name, ())
        return not any(a in bad or any(a.startswith(b + "=") for b in bad) for a in args)
    if name == "find":
        return not any(a in _BAD_FLAGS["find"] for a in args)
    return False
