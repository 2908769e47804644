"""Shell commands that only read, allowed in every mode (plan included) without asking.

Kept deliberately short and argument-aware: `find` is read-only until `-exec`/`-delete`, `git branch` until it
gets a name to create or `-D`, `sort` until `-o`. Anything with an output redirection to a file, an environment
assignment in front (`GIT_PAGER=... git log` runs a program) or a computed command name is not on the list.
Because the shell persists, commands that change what *later* commands run are not read-only either:
`export`, `alias`, `printf -v`. `sed` and `awk` are left out entirely (`sed 'e ...'`, `awk 'system()'` run
programs)."""

from __future__ import annotations

from coder.policy.shellparse import SimpleCommand

#: commands that read whatever their arguments
PLAIN: frozenset[str] = frozenset({
    "ls", "ll", "la", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "pwd", "echo", "printf",
    "which", "type", "file", "stat", "du", "df", "tree", "diff", "cmp", "cut", "tr", "nl", "basename",
    "dirname", "realpath", "readlink", "date", "true", "false", "test", "[", "whoami", "id", "uname",
    "cd", "pushd", "popd", "jq", "md5sum", "sha1sum", "sha256sum", "column", "fold", "expand", "rev", "tac",
    "comm", "sort", "strings", "od", "hexdump", "seq", "sleep", "nproc", "free", "uptime", "locale",
    "jobs", "wait", "ps", "tty", "getconf",
})
#: shell builtins that only list when given no arguments; with arguments they change what later commands
#: run (`export GIT_PAGER=...`, `alias ls=...` in the persistent shell), so they need approval
LIST_ONLY: frozenset[str] = frozenset({"export", "declare", "alias", "set", "shopt", "typeset", "hostname"})
#: commands whose second file argument is an output file (`uniq in out`)
_MAX_POSITIONAL: dict[str, int] = {"uniq": 1}
#: flags that turn an otherwise read-only command into one that writes or runs things
_BAD_FLAGS: dict[str, tuple[str, ...]] = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "sort": ("-o", "--output", "--compress-program"),
    "printf": ("-v",),
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
    if any(a.startswith("--output") or a == "--ext-diff" or a.startswith("--exec") or a == "-O"
           or a.startswith("--open-files-in-pager") for a in rest):
        return False
    if sub in _GIT_READ:
        return not (sub == "reflog" and rest[:1] and rest[0] in ("expire", "delete"))
    lister = _lister_read_only(sub, rest)
    return bool(lister)


def is_read_only(cmd: SimpleCommand) -> bool:
    """True when `cmd` is on the built-in read-only list (with safe arguments and no writes)."""
    if cmd.dynamic_name or cmd.writes_files or cmd.assignments or not cmd.words:
        return False
    name = cmd.words[0]
    args = cmd.words[1:]
    if "/" in name:
        return False
    if cmd.dynamic and (name not in PLAIN or name in _BAD_FLAGS):
        return False  # `find $ARGS` may expand to `-delete`; `cat $FILE` only ever reads
    if name == "git":
        return _git_read_only(args)
    if name in LIST_ONLY:
        return not args
    if name in _MAX_POSITIONAL:
        return len([a for a in args if not a.startswith("-")]) <= _MAX_POSITIONAL[name]
    if name in PLAIN:
        bad = _BAD_FLAGS.get(name, ())
        return not any(a in bad or any(a.startswith(b + "=") for b in bad) for a in args)
    if name == "find":
        return not any(a in _BAD_FLAGS["find"] for a in args)
    return False
