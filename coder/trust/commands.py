"""What a trusted host command would run from the workspace: the files trust covers and the sandbox keeps.

A trusted MCP server or host hook is approved as a command line, but `python tools/mcp_server.py` runs whatever
`tools/mcp_server.py` holds when it starts, and the sandboxed shell can rewrite that file; the next session would
start the rewritten script on the host. So a host command that names something in the workspace
- is fingerprinted with the files it names (a repository's server: coder/trust/reader.py; a change makes coder
  ask again),
- has those files bound read-only in every sandbox of the session, and writes to them by the editor ask (coder/
  trust/protected.py `protect_command_files`),
- and runs inside the sandbox instead of on the host (coder/ext/mcp_client.py, coder/ext/hooks.py): what such a
  script imports, sources or loads from the workspace (a sibling module, a `.venv`'s `.pth` files, a
  `node_modules`, a Makefile) can never be pinned file by file, and in the sandbox it does not matter.

A command names the workspace when its program does (as written, or found on PATH inside the workspace: an
activated `.venv/bin`), when an argument, the value of a `--opt=value` / `NAME=value` word, or a configured
variable that makes a program load code (`CODE_VARS`: PYTHONPATH, NODE_OPTIONS, LD_PRELOAD, ...; a DB_PATH is
data) is a path that exists inside the workspace (relative paths are taken against the workspace, where such
commands ran before), or when its configured working directory is inside the workspace.
The workspace root itself counts only for shell commands (`cd "$CODER_WORKSPACE" && make`); as an MCP server's
argument it is the folder the server works on (`mcp-server-git --repository .`), data it does not execute.

What a command *runs* is less than what it names (`code_files`, `shell_runs`; issue 47): the trust fingerprint
covers what runs, so a hook `echo hook-ran >> hook.log` does not make `hook.log` part of it (each session would
find it changed and ask for trust again). A named file runs when it is the command's program, or looks like code
(`looks_like_code`: executable, a `#!` line, or a source file's suffix); the target of an output redirection
(`>`, `>>`, `&>`, `2>`) is written, never run, and is left out. Files a command only reads or writes as data are
still *named* (what routes a host hook into the sandbox, and what the sandbox keeps read-only, stays as broad).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coder.fs.beneath import EscapeError, WorkspaceFS

#: environment variables whose value makes an interpreter or the loader take code from a path
CODE_VARS = frozenset({
    "PATH", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "NODE_PATH", "NODE_OPTIONS",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "PERL5LIB", "PERL5OPT", "RUBYLIB", "RUBYOPT", "GEM_HOME", "GEM_PATH",
    "BUNDLE_GEMFILE", "CLASSPATH", "JAVA_TOOL_OPTIONS", "BASH_ENV", "ENV", "DENO_DIR", "UV_PROJECT",
    "VIRTUAL_ENV", "CONDA_PREFIX", "NPM_CONFIG_PREFIX", "npm_config_prefix",
})
#: shell syntax whose value cannot be known before the shell runs: a command using it names "something"
_UNKNOWABLE = re.compile(r"\$\(|`|\$\{?[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class WorkspaceUse:
    """What one command takes from the workspace: the paths it names (workspace-relative; "." for the root;
    links counted as links) and whether it would run there (its working directory, or a program inside)."""

    paths: list[str] = field(default_factory=list)
    runs_inside: bool = False
    program: str = ""  # the named path that is the command's program ("" when the program is not in the workspace)

    @property
    def any(self) -> bool:
        return bool(self.paths) or self.runs_inside

    @property
    def files(self) -> list[str]:
        """The named paths that are not folders (what can be fingerprinted and bound read-only one by one)."""
        return [p for p in self.paths if p != "." and not self._is_dir.get(p, False)]

    _is_dir: dict[str, bool] = field(default_factory=dict, repr=False)

    def code_files(self, workspace: Path) -> list[str]:
        """The named files that run: the program, and those that look like code (`looks_like_code`)."""
        return [p for p in self.files if p == self.program or looks_like_code(workspace, p)]


#: suffixes of files an interpreter runs or a program loads as code (a named `hook.log`, `data.db` is data)
CODE_SUFFIXES = frozenset({
    ".py", ".pyw", ".pyc", ".pth", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx", ".sh", ".bash",
    ".zsh", ".ksh", ".fish", ".rb", ".pl", ".pm", ".php", ".lua", ".r", ".ps1", ".tcl", ".awk", ".jq", ".sed",
    ".mk", ".make", ".jar", ".class", ".wasm", ".so", ".dylib", ".exe", ".bat", ".cmd", ".el", ".vim", ".go",
    ".rs", ".java", ".kt", ".swift", ".c", ".cc", ".cpp", ".scala", ".groovy", ".clj", ".ex", ".exs", ".erl",
})
#: names of files that programs run as code without a suffix (build tools' scripts)
CODE_NAMES = frozenset({"makefile", "gnumakefile", "justfile", "rakefile", "dockerfile", "vagrantfile"})


def looks_like_code(workspace: Path, rel: str) -> bool:
    """Whether the workspace file `rel` is a program or a script: a link (where it leads is not the repository's
    to say, and it may lead to one), an executable, a file starting with `#!`, or one whose suffix or name is a
    source file's. Read beneath the workspace, never through a link; what cannot be read counts as code."""
    name = os.path.basename(rel).lower()
    if os.path.splitext(name)[1] in CODE_SUFFIXES or name in CODE_NAMES:
        return True
    try:
        with WorkspaceFS(workspace) as fs:
            if fs.kind(rel) != "file":
                return True
            fd, st = fs.open_regular(rel)
        with os.fdopen(fd, "rb") as fh:
            head = fh.read(2)
    except (OSError, EscapeError):
        return True
    return bool(st.st_mode & 0o111) or head == b"#!"


def _words(word: str) -> list[str]:
    out = [word]
    if "=" in word:
        out.append(word.split("=", 1)[1])
    return out


def _workspace_rel(candidate: str, workspace: str, root_counts: bool) -> tuple[str, bool] | None:
    """(workspace-relative path, is a folder) when `candidate` (relative to the workspace, or absolute) names an
    existing entry inside (by its text: a link inside counts, wherever it points; `..` never leaves), else None.
    The root itself only when `root_counts`."""
    if not candidate or "\0" in candidate or len(candidate) > 4096:
        return None
    path = os.path.normpath(os.path.join(workspace, os.path.expanduser(candidate)))
    if not (path == workspace or path.startswith(workspace + "/")):
        path = os.path.realpath(path)  # an absolute path that reaches the workspace through a link
        if not (path == workspace or path.startswith(workspace + "/")):
            return None
    if path == workspace:
        return (".", True) if root_counts else None
    try:
        if not os.path.lexists(path):
            return None
        is_dir = os.path.isdir(path) and not os.path.islink(path)
    except (OSError, ValueError):
        return None
    return os.path.relpath(path, workspace), is_dir


def workspace_use(argv: Sequence[str], workspace: Path, cwd: str | None = None, env: Mapping[str, str] | None = None,
                  path_var: str | None = None, root_counts: bool = False) -> WorkspaceUse:
    """What `argv` (a command line, program first) takes from `workspace` (see the module docstring)."""
    root = os.path.realpath(workspace)
    use = WorkspaceUse()
    if cwd:
        real_cwd = os.path.realpath(os.path.join(root, os.path.expanduser(cwd)))
        use.runs_inside = real_cwd == root or real_cwd.startswith(root + "/")

    def add(candidate: str, program: bool = False) -> None:
        found = _workspace_rel(candidate, root, root_counts)
        if found is not None:
            rel, is_dir = found
            use.runs_inside = use.runs_inside or program
            if program:
                use.program = rel
            if rel not in use.paths:
                use.paths.append(rel)
                use._is_dir[rel] = is_dir

    words = list(argv[1:])
    for word in argv[1:]:  # a word with spaces may be a script for an inner shell (`bash -c "python x.py"`)
        if any(c.isspace() for c in word):
            inner = _shell_words(word, {**os.environ, **(env or {})})
            if inner is None:
                use.runs_inside = True  # what it names only the shell can tell: taken as naming the workspace
            else:
                words += inner
    if argv:
        program = argv[0]
        if "/" not in program:
            where = shutil.which(program, path=os.environ.get("PATH", os.defpath) if path_var is None else path_var)
            program = os.path.join(root, where) if where else ""  # a relative PATH entry: where these used to run
        add(program, program=True)
    for word in [*words, *(value for name, value in (env or {}).items() if name in CODE_VARS)]:
        for candidate in _words(word):
            for part in candidate.split(os.pathsep) if candidate.count(os.pathsep) else [candidate]:
                add(part)
    return use


def _shell_words(command: str, env: Mapping[str, str], depth: int = 0) -> list[str] | None:
    """The words of `command` and, as it may be a script for an inner shell (`sh -c '...'`), of every word with a
    space in it, `$NAME` expanded from `env`; None when unknowable."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    out: list[str] = []
    for word in words:
        value = re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: env.get(m.group(1), m.group(0)), word)
        if _UNKNOWABLE.search(value):
            return None
        out.append(value)
        if depth < 3 and any(c.isspace() for c in value):
            inner = _shell_words(value, env, depth + 1)
            if inner is None:
                return None
            out += inner
    return out


_OPERATOR_CHARS = set(";|&<>()")


def _without_written(command: str) -> str | None:
    """`command` with its output redirections cut out, the operator and the file it writes (`echo x >> log` is
    `echo x`; `2>&1` goes too), quotes respected; None when a quote is left open."""
    out: list[str] = []
    i, n = 0, len(command)
    quote = ""
    while i < n:
        ch = command[i]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                out.append(ch)
                i += 1
                ch = command[i] if i < n else ""
            out.append(ch)
            i += 1
            continue
        if ch in "'\"":
            quote = ch
        elif ch == "\\":
            out.append(command[i:i + 2])
            i += 2
            continue
        elif ch == ">" or (ch == "&" and command[i + 1:i + 2] == ">"):
            while out and out[-1].isdigit():  # `2>`: the descriptor belongs to the redirection
                out.pop()
            i += 1
            while i < n and command[i] in ">|&":
                i += 1
            while i < n and command[i] in " \t":
                i += 1
            i = _word_end(command, i)
            out.append(" ")
            continue
        out.append(ch)
        i += 1
    return None if quote else "".join(out)


def _word_end(command: str, i: int) -> int:
    """Where the shell word starting at `i` ends (unquoted blank or operator)."""
    quote = ""
    while i < len(command):
        ch = command[i]
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            i += 1
        elif ch in " \t\n" or ch in _OPERATOR_CHARS:
            break
        i += 1
    return i


def shell_runs(command: str, workspace: Path, env: Mapping[str, str]) -> list[str] | None:
    """The workspace files a shell command line runs (see the module docstring): what it names, less the files it
    writes by redirection and the named files that are data; None when that cannot be known."""
    kept = _without_written(command)
    use = shell_use(kept, workspace, env) if kept is not None else None
    return use.code_files(workspace) if use is not None else None


def shell_use(command: str, workspace: Path, env: Mapping[str, str]) -> WorkspaceUse | None:
    """What a shell command line names in `workspace` (the root included), its words split as the shell would and
    `$NAME` expanded from `env`; None when that cannot be known (an open quote, a command substitution, a
    variable `env` does not hold): then it must be taken as naming the workspace. Best effort by path words: a
    command that builds a path in a language's own code (`python -c "open('x' + '.py')"`) is not seen."""
    words = _shell_words(command, env)
    if words is None:
        return None
    return workspace_use(words, workspace, path_var=env.get("PATH"), root_counts=True)
