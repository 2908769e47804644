"""Shell commands that only read, allowed in every mode (plan included) without asking.

A command is on this list only when it can neither write nor run anything, whatever its arguments, or when the
arguments that would make it do so are recognised here. When in doubt a command is NOT read-only: it then asks
(headless: it is denied), which costs a question, while a wrong "read-only" runs the model's code unasked.

What makes the difference, beyond the obvious (redirections to files, `find -delete`):
- bash evaluates array subscripts, and a subscript runs command substitutions even inside quotes:
  `test -v 'a[$(touch pwned)]'`, `[[ x -eq 'a[$(...)]' ]]`, `printf -v 'a[$(...)]'`, `wait -n -p 'a[$(...)]'` all
  run the `$(...)`. shellparse marks the expansions that do it (`$((x))`, `${a[x]}`, `${!x}`, `${x@P}`, ...);
  this module knows the builtins that take a variable name or evaluate their operands. `test`/`[` compare
  numbers without evaluating them (bash's `legal_number`), `[[ ]]` evaluates them: so `-eq` is fine in `[`,
  not in `[[`.
- programs with an option that runs a program or writes a file (`rg --pre`, `sort -o`, `git grep -O`,
  `jobs -x`): the option is found in every spelling the program accepts (`-uo out`, `--out=x`, `--outp=x` where
  getopt_long takes abbreviations), and an argument whose value is unknown (`$x`, `*`, `{a,b}`) could be that
  option (a file named `--pre=sh` matched by `*`), so such commands must have static arguments.
- the shell persists between calls, so whatever changes what later commands run is not read-only: assignments
  (`PATH=...`, also in front of a command: `GIT_PAGER=sh git log`), functions, `export`/`alias`/`set` with
  arguments. `sed` and `awk` are left out entirely (`sed 'e ...'`, `awk 'system()'`), as are `less`/`man` (`!`),
  `xargs`, `env`, `time`, `timeout`, `nice`, `command`, `builtin`, `exec`, `eval`: they run other commands.
- `ll`/`la` are only ever aliases, whose meaning is unknown here, so they are not on the list.
Known limit: state an earlier, approved command left (an alias, a function, `declare -i x` or a nameref on a
variable a read-only `for x in` loop then assigns, a repository's git config) is the user's approval, not checked
here."""

from __future__ import annotations

import re
from dataclasses import dataclass

from coder.policy.shellparse import QUOTED, STATIC, SimpleCommand

#: commands that only read whatever their (possibly computed) arguments
PLAIN: frozenset[str] = frozenset({
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "pwd", "echo", "which", "type", "stat", "du",
    "df", "diff", "cmp", "cut", "tr", "nl", "basename", "dirname", "realpath", "readlink", "true", "false",
    "whoami", "id", "uname", "cd", "pushd", "popd", "jq", "md5sum", "sha1sum", "sha256sum", "column", "fold",
    "expand", "rev", "tac", "comm", "strings", "od", "hexdump", "seq", "sleep", "nproc", "free", "uptime",
    "locale", "ps", "tty", "getconf",
})
#: shell builtins that only list when given no arguments; with arguments they change what later commands
#: run (`export GIT_PAGER=...`, `alias ls=...` in the persistent shell), so they need approval
LIST_ONLY: frozenset[str] = frozenset({"export", "declare", "alias", "set", "shopt", "typeset", "hostname"})


@dataclass(frozen=True)
class Options:
    """The options that make an otherwise read-only command write or run something."""

    short: str = ""  # option letters, found anywhere in a cluster (`-uo`)
    long: tuple[str, ...] = ()  # long options, `--name` or `--name=value`
    #: getopt_long accepts any unambiguous prefix (`--out` for `--output`); ripgrep does not
    abbrev: bool = True
    #: short letters that take the rest of the cluster as their value (`sort -t:`), so scanning stops there
    takes_value: str = ""
    words: tuple[str, ...] = ()  # exact words (find's primaries)

    def bad(self, arg: str) -> bool:
        if arg in self.words:
            return True
        if arg.startswith("--") and len(arg) > 2:
            name = arg.split("=", 1)[0]
            return any(name == opt or (self.abbrev and opt.startswith(name)) for opt in self.long)
        if arg.startswith("-") and len(arg) > 1 and self.short:
            for letter in arg[1:]:
                if letter in self.short:
                    return True
                if letter in self.takes_value:
                    return False
        return False


#: read-only unless given one of these options; every argument must be static (a computed one could be it)
OPTIONS: dict[str, Options] = {
    "find": Options(words=("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
                           "-fls")),
    "sort": Options("oT", ("--output", "--compress-program", "--temporary-directory"), takes_value="ktS"),
    "rg": Options(long=("--pre", "--hostname-bin"), abbrev=False),  # both run a program
    "ag": Options(long=("--pager",)),
    "tree": Options("oR", ("--output",)),  # -R writes 00Tree.html into every directory
    "file": Options("C", ("--compile",), takes_value="eFfmP"),  # -C writes magic.mgc
    "date": Options("s", ("--set",), takes_value="dfrI"),
    "printf": Options("v", abbrev=False),  # -v NAME assigns, evaluating NAME's subscript
}
#: builtins read-only only with exactly these (static) arguments
ONLY_ARGS: dict[str, re.Pattern[str]] = {
    "jobs": re.compile(r"-[lnprs]+|%\S*|\d+"),  # `jobs -x cmd` runs cmd
    "wait": re.compile(r"-[nf]+|%\S*|\d+"),  # `wait -p NAME` assigns NAME, evaluating its subscript
}
#: commands whose second file argument is an output file (`uniq in out`)
_MAX_POSITIONAL: dict[str, int] = {"uniq": 1}
#: test operators that take a variable name, whose subscript bash evaluates (`-R` is safe in bash 5.2 but
#: nobody needs it here)
_NAME_OPERATORS = frozenset({"-v", "-R"})
#: operators `[[ ]]` evaluates as arithmetic (`test` and `[` do not)
_ARITHMETIC = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_BINARY = frozenset({"=", "==", "!=", "<", ">", "-nt", "-ot", "-ef", "-a", "-o"}) | _ARITHMETIC
#: a `for` variable: lowercase, because bash's own variables that change behaviour are uppercase (PATH, IFS,
#: BASH_ENV, PROMPT_COMMAND, ...) apart from these two
_LOOP_VARIABLE = re.compile(r"[a-z_][a-z0-9_]*")
_LOWERCASE_SPECIALS = frozenset({"histchars", "auto_resume"})


def is_read_only(cmd: SimpleCommand) -> bool:
    """True when `cmd` is on the built-in read-only list (with safe arguments and no writes)."""
    if cmd.dynamic_name or cmd.writes_files or cmd.assignments or cmd.unsafe or not cmd.words:
        return False
    name, args = cmd.words[0], cmd.words[1:]
    kinds = (cmd.kinds or [STATIC] * len(cmd.words))[1:]
    if "/" in name or (cmd.kinds and cmd.kinds[0] != STATIC):
        return False
    if name in PLAIN:
        return True
    if name in LIST_ONLY:
        return not args
    static = all(k == STATIC for k in kinds)
    if name in ("test", "[", "[["):
        return _test_read_only(name, args, kinds)
    if name == "for":
        return bool(_LOOP_VARIABLE.fullmatch(args[0])) and args[0] not in _LOWERCASE_SPECIALS
    if name == "git":
        return _git_read_only(args, kinds)
    if name in ONLY_ARGS:
        return static and all(ONLY_ARGS[name].fullmatch(a) for a in args)
    if name in _MAX_POSITIONAL:
        single = all(k in (STATIC, QUOTED) for k in kinds)
        return single and len([a for a in args if not a.startswith("-")]) <= _MAX_POSITIONAL[name]
    if name in OPTIONS:
        return static and not any(OPTIONS[name].bad(a) for a in args)
    return False


def _test_read_only(name: str, args: list[str], kinds: list[str]) -> bool:
    """`test`, `[` and `[[` evaluate nothing unless given a variable name (`-v`) or, for `[[`, arithmetic.

    For `test`/`[` a word whose value is computed could be `-v` itself (`cat() { test "$@"; }`), so computed
    words are allowed only where the test reads them as plain operands: `[ "$x" ]`, `[ -f "$x" ]`,
    `[ "$a" = "$b" ]` (bash decides by the number of arguments, so a value cannot become an operator there)."""
    if name == "[[":  # operators are parsed before expansion; operands of arithmetic operators are evaluated
        return not any(a in _NAME_OPERATORS or a in _ARITHMETIC for a in args)
    if name == "[" and args and args[-1] == "]" and kinds[-1] == STATIC:
        args, kinds = args[:-1], kinds[:-1]
    if any(a in _NAME_OPERATORS for a, k in zip(args, kinds, strict=True) if k == STATIC):
        return False
    if all(k == STATIC for k in kinds):
        return True
    if any(k != QUOTED and k != STATIC for k in kinds):
        return False  # `$x` unquoted or a glob: any number of words, any of them an operator
    if len(args) > 1 and args[0] == "!" and kinds[0] == STATIC:
        args, kinds = args[1:], kinds[1:]
    if len(args) == 1:
        return True
    if len(args) == 2:
        return kinds[0] == STATIC
    return len(args) == 3 and kinds[1] == STATIC and args[1] in _BINARY


# ---- git ---------------------------------------------------------------------------------------------------

#: global options before the subcommand that change nothing (`-c`, `--git-dir`, `--exec-path`, `--config-env`,
#: `--work-tree`, `--namespace`, ... are not here: they point git at other config or programs)
_GIT_GLOBAL = frozenset({"-P", "--no-pager", "-p", "--paginate", "--bare", "--no-replace-objects",
                         "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
                         "--no-optional-locks", "--version"})
#: options of any subcommand that write a file or run a program; git's parse-options takes abbreviations
#: (`git grep --open=sh` is `--open-files-in-pager`) and attached short values (`-Osh`, `-iOsh`)
_GIT_OPTIONS = Options("O", ("--output", "--ext-diff", "--exec", "--open-files-in-pager", "--upload-pack",
                             "--receive-pack", "--exec-path"))
_GIT_READ = frozenset({"status", "diff", "log", "show", "blame", "ls-files", "ls-tree", "rev-parse", "grep",
                       "describe", "shortlog", "cat-file", "rev-list", "merge-base", "show-ref", "reflog",
                       "whatchanged"})
_BRANCH_FLAGS = frozenset({"-a", "-r", "-v", "-vv", "--list", "-l", "--all", "--remotes", "--show-current",
                           "--contains", "--merged", "--no-merged", "--no-color"})
_TAG_WRITES = Options("asufdvmFe", ("--annotate", "--sign", "--local-user", "--force", "--delete", "--verify",
                                    "--message", "--file", "--edit", "--create-reflog", "--cleanup", "--no-sign"))
_CONFIG_MODES = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
                           "--list", "-l"})
_CONFIG_OPTIONS = _CONFIG_MODES | {"--show-origin", "--show-scope", "--name-only", "--null", "-z", "--global",
                                   "--system", "--local", "--worktree", "--includes", "--no-includes", "--bool",
                                   "--int", "--path", "--bool-or-int", "--expiry-date", "--type", "-t", "-f",
                                   "--file", "--blob", "--default", "--all", "--regexp", "--url", "--value",
                                   "--fixed-value"}


def _git_read_only(args: list[str], kinds: list[str]) -> bool:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C":  # -C DIR: another repository, read the same way
            i += 2
        elif args[i] in _GIT_GLOBAL:
            i += 1
        else:
            return False
    if i >= len(args):
        return all(k == STATIC for k in kinds)
    sub, rest, rest_kinds = args[i], args[i + 1:], kinds[i + 1:]
    if "--" in rest:  # pathspecs after `--` are never options: `git log -- '*.py'` or `-- *.py`
        end = rest.index("--")
        if rest_kinds[end] == STATIC:
            rest, rest_kinds = rest[:end], rest_kinds[:end]
    if not all(k == STATIC for k in kinds[:i + 1] + rest_kinds):
        return False  # `git log $x`: $x may be `--output=...`
    if any(_GIT_OPTIONS.bad(a) for a in rest):
        return False
    if sub in _GIT_READ:
        return not (sub == "reflog" and any(a in ("expire", "delete", "drop") for a in rest))
    return _git_lister(sub, rest)


def _git_lister(sub: str, rest: list[str]) -> bool:
    """git subcommands that list by default and write when given a name or a write option."""
    first = rest[0] if rest else None
    if sub == "branch":
        return all(a in _BRANCH_FLAGS for a in rest)
    if sub == "tag":  # list mode only: bare, -l/--list or -n (which implies it)
        listing = first is None or first in ("-l", "--list") or re.fullmatch(r"-n\d*", first) is not None
        return listing and not any(_TAG_WRITES.bad(a) for a in rest[1:])
    if sub == "remote":
        words = [a for a in rest if a not in ("-v", "--verbose")]
        if not words:
            return True
        if words[0] == "get-url":
            return all(a in ("--push", "--all") or not a.startswith("-") for a in words[1:])
        # `remote show NAME` asks the remote over the network (ssh, helpers) unless -n
        return words[0] == "show" and (words[1:2] == ["-n"] or len(words) == 1)
    if sub == "stash":
        return first in ("list", "show")
    if sub == "config":
        mode = first in ("list", "get") or any(a in _CONFIG_MODES for a in rest)
        return mode and all(a.split("=", 1)[0] in _CONFIG_OPTIONS for a in rest if a.startswith("-"))
    return False
