"""The read-only classifier, case by case (real tree-sitter-bash, no shell runs here).

`READ_ONLY` lines must run unasked in every mode; `NOT_READ_ONLY` lines must not, each because bash would write,
run a program, or evaluate code (array subscripts and arithmetic run `$(...)` even inside quotes), or change what
later commands in the persistent shell do. The end-to-end proof that these attacks are real, with the sandbox,
is tests/security/test_security_readonly_bypass.py."""

from __future__ import annotations

import pytest

from coder.config.sections import PermissionsSettings
from coder.policy.readonly import OPTIONS, Options, is_read_only
from coder.policy.rules import policy_from_config
from coder.policy.shellparse import GLOB, QUOTED, SPLIT, STATIC, split_command

P = "'a[$(touch pwned)]'"  # a subscript whose evaluation runs a command

READ_ONLY = [
    # plain readers, any arguments
    "ls", "ls -la src", "ls $(pwd)", "cat \"$F\"", "cat src/*.py", "head -n 5 a b", "tail -f log", "wc -l *.py",
    "grep -rn foo .", "grep -r hello .", "egrep 'a|b' x", "pwd", "echo hi", "echo \"$HOME\"", "echo {a,b}",
    "echo ${x:-default} ${x#*/} ${x%.*} ${x//a/b} ${x^^} ${x,,} ${#x} ${x@Q} ${a[@]} ${#a[*]} ${x-y} ${x:+z}",
    "echo $((1 + 2))", "which python", "type ls", "stat x", "du -sh .", "df -h", "diff a b", "diff <(ls) <(ls a)",
    "cmp a b", "cut -d: -f1 x", "tr a-z A-Z", "nl x", "basename a/b", "dirname a/b", "realpath .",
    "readlink -f x", "true", "false", "whoami", "id", "uname -a", "cd src", "cd \"$D\"", "pushd src", "popd",
    f"pushd {P}", f"cd {P}", "jq .a x.json", "md5sum x", "sha256sum -c sums", "column -t x", "fold -w 80 x",
    "expand x", "rev x", "tac x", "comm a b", "strings bin", "od -c x", "hexdump -C x", "seq 10", "sleep 1",
    "nproc", "free -m", "uptime", "locale", "ps aux", "tty", "getconf PAGESIZE", f"echo {P}", f"type {P}",
    f"printf '%d' {P}",
    # lists, pipes, substitutions of read-only commands
    "cd src && ls -la", "echo hi | wc -l", "git status && git diff", "ls; pwd", "(ls)", "{ ls; }", "! ls",
    "cat <(ls)", "cat < x", "cat <<< \"$x\"", "cat <<'EOF'\n$(touch p)\nEOF", "ls 2>&1", "ls 2>/dev/null",
    "ls >&2", "ls > /dev/null", "ls &", "if [ -f x ]; then cat x; fi", "while false; do ls; done",
    "case $x in a) ls;; esac", "for f in *.py; do wc -l \"$f\"; done", "for f in $(git ls-files); do head \"$f\"; done",
    "echo `ls`", "echo $(git rev-parse HEAD)",
    # options commands with harmless options
    "find . -name '*.py'", "find . -type f -newer x", "find src -maxdepth 2 -print", "sort x", "sort -u x",
    "sort -k2 -t: x", "sort -t o x", "sort -to x", "sort -rn x", "rg foo", "rg --pretty foo", "rg -n foo src",
    "rg --pre-glob '*.gz' foo", "ag foo", "tree", "tree -L 2", "tree -a src", "file x", "file -b x", "date",
    "date -Iseconds", "date -d yesterday", "date +%s", "printf '%s\\n' a b", "uniq -c x", "uniq \"$f\"",
    "jobs", "jobs -l", "jobs -p %1", "wait", "wait -n", "wait %1 42",
    # test, [ and [[ without variable names or [[ arithmetic
    "test -f x", "test -n \"$x\"", "[ -f x ]", "[ -f \"$x\" ]", "[ -d src ] && ls src", "[ \"$a\" = \"$b\" ]",
    "[ \"$x\" ]", "[ ! -f \"$x\" ]", "[ \"$n\" -eq 1 ]", "[ 1 -lt 2 ]", "[ -n \"$(git status --porcelain)\" ]",
    "[ ! -e x -a -d y ]", "[[ -f x ]]", "[[ -n $x && $y == z* ]]", "[[ $x =~ ^a ]]", "[[ ! -e x || ( -d y ) ]]",
    "test x = y", "[ x != y ]",
    # git, read-only subcommands
    "git status", "git status --short", "git diff", "git diff HEAD~1 --stat", "git diff --no-ext-diff",
    "git log --oneline -5", "git log -p -- src", "git log -- '*.py'", "git log -- *.py", "git show HEAD:x",
    "git blame x", "git ls-files", "git ls-tree HEAD", "git rev-parse HEAD", "git grep foo", "git grep -n foo",
    "git describe --tags", "git shortlog -sn", "git cat-file -p HEAD", "git rev-list HEAD", "git merge-base a b",
    "git show-ref", "git reflog", "git reflog show main", "git whatchanged -1", "git -C sub log --oneline",
    "git --no-pager log", "git -P diff", "git --version", "git branch", "git branch -a", "git branch -vv",
    "git branch --show-current", "git tag", "git tag -l", "git tag -l 'v*'", "git tag -n5", "git remote",
    "git remote -v", "git remote get-url origin", "git remote show", "git remote show -n origin",
    "git stash list", "git stash show -p", "git config --get user.name", "git config --list",
    "git config -l --show-origin", "git config --get-regexp '^alias'", "git config list", "git config get user.name",
    "git log --no-ext-diff --oneline",
    # builtins that only list without arguments
    "export", "declare", "typeset", "alias", "set", "shopt", "hostname",
    # quoting the shell removes
    "l\\s", "'ls'", "\"ls\" -la",
]

NOT_READ_ONLY = [
    # finding 7: jobs runs, test/[/[[ evaluate subscripts, [[ evaluates arithmetic operands
    "jobs -x sh -c 'echo pwned > f'", "jobs -x touch f", "jobs $x", f"[[ -v {P} ]]", f"test -v {P}",
    f"[ -v {P} ]", f"[[ x -eq {P} ]]", f"[[ {P} -gt 1 ]]", "[[ $n -eq 1 ]]", "[[ \"$n\" -lt 1 ]]",
    "[[ 1 -eq 1 && $x -ge 0 ]]", "[[ -R x ]]", f"[ ! -v {P} ]", "test -v x", "[ -v x ]",
    # computed words could be -v: test "$@" (a function's body), unquoted $x, globs
    "test \"$@\"", "[ $x ]", "test $x", "[ \"$a\" \"$b\" \"$c\" \"$d\" ]", "[ -f * ]", "test \"${a[@]}\"",
    # builtins that assign a variable name (its subscript is evaluated) or run commands
    f"printf -v {P} x", "printf -v x y", "printf -vx y", f"printf -v{P} x", "printf \"$f\"", "printf $f x",
    f"sleep 1 & wait -n -p {P}", "wait -p x", "wait $x", f"read {P}", "read x", "mapfile x", "readarray x",
    "let x=1", "(( x ))", "(( a[1] ))", "for ((i=0; i<3; i++)); do ls; done", "declare x=1", "declare -p",
    "typeset -i x", "local x", "export X=1", "export -p", "unset x", "alias ls='rm -rf .'", "set -x", "shopt -s x",
    "eval ls", "command ls", "builtin echo", "exec ls", "time ls", "nice ls", "timeout 1 ls", "xargs rm",
    "env ls", "nohup ls", "coproc ls", "source x", ". x", "getopts a x", "hostname evil", "trap 'ls' EXIT",
    "enable -f x y", "hash -p /tmp/x ls", "select x in a; do ls; done",
    # assignments: bare (persist in the session's shell) and in front of a command
    "x=1", "x=1 y=2", "PATH=/tmp/evil:$PATH", "PROMPT_COMMAND='touch p'", "a[1]=x", "x=$(ls)",
    "PAGER='sh -c x' git log", "GIT_PAGER=sh git log", "GIT_EXTERNAL_DIFF=x git diff", "LD_PRELOAD=/x.so ls",
    "x=1 ls", "for PATH in /tmp; do ls; done", "for IFS in x; do ls; done", "for histchars in x; do ls; done",
    # expansions that evaluate: arithmetic, subscripts, offsets, indirection, prompt expansion, assignment
    "echo $((x))", "echo $((x + 1))", "echo $[x]", "echo $[1]", "echo ${a[x]}", "echo ${a[1]}", "echo ${#a[i]}",
    "echo ${x:1}", "echo ${x: -1}", "echo ${x:0:2}", "echo ${@:1}", "echo ${!x}", "echo ${!x*}", "echo ${!a[@]}",
    "echo ${x@P}", "echo \"${x@P}\"", "echo ${x:=y}", "echo ${x=y}", "cat <<< ${b[x]}", "cat <<EOF\n${x@P}\nEOF",
    "case $((x)) in a) ls;; esac", "for f in ${a[x]}; do ls; done", "[[ -n ${a[x]} ]]",
    "x='a[$(touch p)]'; echo $((x))", "x='$(touch p)'; echo \"${x@P}\"",
    "for i in 'a[$(touch p)]'; do [[ i -eq 1 ]]; done", "for i in 'a[$(touch p)]'; do (( i )); done",
    # redirections: writes and a descriptor stored in a variable
    "ls > x", "ls >> x", "ls &> x", "ls >| x", "ls >& x", "ls 2> err", "ls > \"$f\"", "ls > /dev/tcp/h/1",
    "{ ls; } > x", "while false; do ls; done > x", "ls {fd}>/dev/null", "ls {a[x]}>/dev/null", "cat <> x",
    # functions change what later commands run (and their redirections write at call time)
    "f() { ls; }", "function f { ls; }", "cat() { echo pwned; } > f; cat x", "cat() { test \"$@\"; }",
    "ls() (cat x)",
    # commands inside anything
    "ls $(rm -rf x)", "echo `rm x`", "cat <(rm x)", "ls && rm x", "cat <<EOF\n$(touch p)\nEOF",
    # options that write or run, in every spelling
    "sort -o out in", "sort -uo out in", "sort -uoout in", "sort --output=x in", "sort --out=x in",
    "sort --outp=x in", "sort --o=x in", "sort --compress-program=sh x", "sort --compress=sh x", "sort -T /x a",
    "sort --temporary-directory=/x a", "sort *", "sort $x", "sort \"$x\"", "sort {a,b}",
    "rg --pre=sh x", "rg --pre sh x", "rg --hostname-bin=sh x", "rg --{pre,x}=sh x", "rg x *", "rg $opts x",
    "rg \"$x\" .", "rg --p\\re=sh x", "rg '--pre'=sh x", "rg \"--pre=sh\" x", "ag --pager=sh x", "ag --pag=sh x",
    "tree -o out", "tree -ao out", "tree -R", "tree -aR", "tree --output=x", "file -C -m x", "file -bC",
    "file --compile", "file --comp", "date -s 2020", "date -us 2020", "date --set=x", "date --se=x",
    "find . -delete", "find . -exec rm {} ;", "find . -execdir sh ;", "find . -ok rm {} ;", "find . -okdir x ;",
    "find . -fprint x", "find . -fprint0 x", "find . -fprintf x y", "find . -fls x", "find $ARGS",
    "find . -name *.py", "find . -name \"$x\"", "uniq in out", "uniq $x", "uniq \"$@\"",
    # git: global options that point elsewhere, write options, write subcommands
    "git -c core.pager=sh log", "git -ccore.pager=sh log", "git --config-env=core.pager=X log",
    "git --git-dir=x status", "git --git-dir x status", "git --work-tree=x status", "git --exec-path=/x log",
    "git --namespace=x log", "git --help", "git diff --output=x", "git diff --out=x", "git log --output x",
    "git diff --ext-diff", "git diff --ext", "git grep -O x", "git grep -Ovim x", "git grep -iOvim x",
    "git grep --open-files-in-pager=vim x", "git grep --open=vim x", "git log --exec=x",
    "git ls-remote --upload-pack=x", "git log $x", "git log \"$x\"", "git log *.py", "git diff {a,b}",
    "git -C \"$d\" log", "git push", "git commit -m x", "git add .", "git checkout x", "git reset --hard",
    "git stash", "git stash pop", "git clean -fd", "git fetch", "git pull", "git gc", "git apply p",
    "git branch new", "git branch -D main", "git branch -m x", "git branch --contains HEAD", "git tag v1",
    "git tag -d v1", "git tag -l -d x", "git tag -a v1 -m x", "git tag -n5 -d x", "git remote add x y",
    "git remote -v add x y", "git remote show origin", "git remote remove origin", "git remote set-url o x",
    "git config user.name x", "git config --get x --unset", "git config -e", "git config --edit",
    "git config --add x y", "git config --replace-all x y", "git config --unset x", "git config set x y",
    "git reflog expire --all", "git reflog delete HEAD@{1}", "git reflog drop", "git stash drop",
    "git stash show -p --ext-diff", "git stash list --output=x", "git version", "git help log", "git st",
    # not on the list at all: they run programs, page, or write
    "sed -n p x", "sed -i s/a/b/ x", "awk '{print}' x", "perl -e 1", "python -c 1", "less x", "more x", "man ls",
    "vi x", "tee x", "cp a b", "mv a b", "rm x", "mkdir x", "touch x", "ln -s a b", "chmod +x a", "curl x",
    "wget x", "ssh h", "make", "npm test", "pytest", "ll", "la", "./script.sh", "/bin/ls", "$CMD", "`which ls`",
    "l[s]", "$(echo ls)", "bash -c ls", "sh -c ls", "dd if=a of=b", "truncate -s 0 x", "install a b",
    # lines that do not parse are one opaque part
    "echo 'unclosed", "[ x \\< y ]",
]


def _read_only(command: str) -> bool:
    parsed = split_command(command)
    return parsed.ok and all(is_read_only(p) for p in parsed.parts)


@pytest.mark.parametrize("command", READ_ONLY)
def test_read_only(command: str) -> None:
    assert _read_only(command), split_command(command).parts


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_not_read_only(command: str) -> None:
    assert not _read_only(command), split_command(command).parts


def test_the_tables_do_not_overlap() -> None:
    assert not set(READ_ONLY) & set(NOT_READ_ONLY)
    assert len(READ_ONLY) + len(NOT_READ_ONLY) > 400


@pytest.mark.parametrize("mode", ["plan", "ask", "auto-edit"])
def test_the_policy_refuses_them_in_every_mode_but_auto(mode: str) -> None:
    """What the engine sees: read-only lines run in every mode, the others ask (plan and headless: deny)."""
    policy = policy_from_config(PermissionsSettings(), mode, [], [], None)
    for command in ("ls", "git status", "grep -r x .", "[ -f x ] && cat x"):
        assert policy.decide("bash", "execute", {"command": command}).action == "allow", command
    expected = "deny" if mode == "plan" else "ask"
    for command in ("jobs -x sh -c 'echo pwned > f'", f"[[ -v {P} ]]", f"test -v {P}", f"[ -v {P} ]",
                    f"[[ x -eq {P} ]]", "x=1", "f() { ls; }", "(( x ))"):
        assert policy.decide("bash", "execute", {"command": command}).action == expected, command
    auto = policy_from_config(PermissionsSettings(), "auto", [], [], None)
    assert auto.decide("bash", "execute", {"command": f"test -v {P}"}).action == "allow"


def test_word_kinds() -> None:
    """What the classifier knows about each word: its value, one unknown word, or any number of words."""
    def kinds(command: str) -> list[str]:
        return split_command(command).parts[0].kinds[1:]

    assert kinds("cat a 'b c' \"d\" e\\*f") == [STATIC] * 4
    assert kinds("cat \"$x\" $'x' \"a$(ls)b\"") == [QUOTED] * 3
    assert kinds("cat *.py ~/x {a,b} a[1]") == [GLOB] * 4
    assert kinds("cat $x $(ls) \"$@\" \"${a[@]}\" \"$x\"*") == [SPLIT] * 5
    parts = split_command("x=1; f() { ls; }; (( y )); for i in a; do :; done; select s in a; do :; done").parts
    assert [bool(p.unsafe) for p in parts] == [True, True, False, True, False, False, True, False]
    assert split_command("echo ${a[x]} $((y))").parts[0].unsafe  # marks the command, not a separate part


def test_option_spellings() -> None:
    sort = OPTIONS["sort"]
    assert all(sort.bad(a) for a in ("-o", "-uo", "-uox", "--output", "--output=x", "--out", "--o", "-T"))
    assert not any(sort.bad(a) for a in ("-u", "-k2", "-t", "-to", "-ko", "--unique", "--", "-", "x"))
    rg = OPTIONS["rg"]
    assert rg.bad("--pre") and rg.bad("--pre=x") and not rg.bad("--pre-glob=x") and not rg.bad("--pretty")
    assert Options(words=("-exec",)).bad("-exec") and not Options(words=("-exec",)).bad("-execx")
