"""What one shell line verifies: a test runner of the table (runners.py), the project's own test command, or a
script the model wrote; which tests it selects; whether the line's exit status is the runner's own.

The line comes from the shell tool's facts (`CallFacts.shell`) and is read with the policy's parser
(coder/policy/shellparse.py: tree-sitter-bash), the same reading the permission rules get, so `cd src && pytest
-q | tail -5` is three commands of which the second runs the tests and whose exit status `tail`'s hides.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from coder.evidence.runners import Parser, any_counts, find_runner
from coder.policy.readonly import is_read_only
from coder.policy.shellparse import SimpleCommand, split_command

#: programs that run the command given after them (and how many of their own words come first)
_WRAPPERS: dict[tuple[str, ...], int] = {
    ("time",): 1, ("nice",): 1, ("nohup",): 1, ("xvfb-run",): 1, ("stdbuf",): 1, ("env",): 1, ("command",): 1,
    ("uv", "run"): 2, ("poetry", "run"): 2, ("pipenv", "run"): 2, ("hatch", "run"): 2, ("pdm", "run"): 2,
    ("rye", "run"): 2, ("conda", "run"): 2, ("npx",): 1, ("pnpm", "exec"): 2, ("pnpm", "dlx"): 2,
    ("yarn", "exec"): 2, ("bunx",): 1, ("bundle", "exec"): 2, ("coverage", "run"): 2,
}
#: wrappers whose options take a value (`timeout 60`, `timeout -s KILL 60`, `stdbuf -oL`, `conda run -n env`)
_WRAPPER_VALUES = {"timeout": 1, "conda": 0}
_PYTHON = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)*)?$")
#: interpreter options before `-m NAME` or the script (`python -X dev -W error -m pytest`)
_PY_VALUE_OPTIONS = {"-X", "-W", "-Q"}
#: what runs a script file, by the script's suffix
_INTERPRETERS = {".py": "python", ".js": "node", ".mjs": "node", ".cjs": "node", ".ts": "node", ".sh": "sh",
                 ".bash": "sh", ".rb": "ruby", ".go": "go", ".pl": "perl"}
_SHELLS = {"bash", "sh", "zsh", "node", "ruby", "perl", "deno", "bun", "ts-node", "tsx"}
#: options of the common runners that take the next word as their value (a `-k` expression is not a path)
_VALUE_OPTIONS = {"-k", "-m", "-p", "-c", "-o", "-n", "-x", "--maxfail", "--rootdir", "--deselect", "--ignore",
                  "--tb", "-W", "--settings", "--parallel", "-t", "--testNamePattern", "-g", "--grep", "--reporter",
                  "-run", "-timeout", "-count", "--durations", "--junitxml", "--timeout", "--cov", "-e", "--verbosity"}
_PATHLIKE = re.compile(r"[/\\]|\.(py|js|jsx|ts|tsx|mjs|cjs|go|rs|rb|java|kt|c|cc|cpp|h)$|::")
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n(.*?)\n\s*\1\s*(?:\n|$)", re.DOTALL)


@dataclass(frozen=True)
class Verifying:
    """One command of a line that verifies code."""

    kind: str  # "tests" (a runner of the table), "project" (the repository's own test command), "script"
    runner: str  # the runner's name, "project", or the script's interpreter
    text: str  # the command as the shell parser normalised it
    parse: Parser
    #: test files, folders or node ids the run is limited to; empty: the runner's whole default suite
    selection: tuple[str, ...] = ()
    #: the script's path (kind "script"); "-c" for code given inline (`python -c`, a here-document)
    script: str = ""
    code: str = ""  # the inline code, when there is some
    exit_trusted: bool = True  # the line's exit status is this command's (last command, not piped)
    writes_after: bool = False  # a command after it on the line may change files
    #: the folders `cd` entered before it on the same line, in order (its relative paths start there)
    cd: tuple[str, ...] = ()


def strip_wrappers(words: list[str]) -> list[str]:
    """`timeout 60 uv run python -X dev -m pytest -q` -> `python -m pytest -q`."""
    changed = True
    while words and changed:
        changed = False
        for prefix, size in _WRAPPERS.items():
            if tuple(words[: len(prefix)]) == prefix:
                words = words[size:]
                while words and (words[0].startswith("-") or "=" in words[0]):  # their options and assignments
                    words = words[2:] if words[0] in ("-n", "--name", "-p", "--prefix") else words[1:]
                changed = True
                if prefix == ("coverage", "run") and words[:1] == ["-m"]:
                    words = ["python", *words]
                break
        if words and words[0] in _WRAPPER_VALUES:
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-s", "--signal", "-k", "--kill-after") else words[1:]
            words = words[1:]  # the duration
            changed = True
    if words and _PYTHON.match(words[0]):
        rest = words[1:]
        while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c", "-"):
            rest = rest[2:] if rest[0] in _PY_VALUE_OPTIONS else rest[1:]
        words = [words[0], *rest]
    return words


def selection(args: list[str], runner: str) -> tuple[str, ...]:
    """The paths a runner's arguments select: test files, folders, pytest node ids (without `::...`), Django's
    dotted labels as the folders under tests/ they name."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg.startswith("-"):
            skip = arg in _VALUE_OPTIONS
            continue
        if runner == "django" and re.fullmatch(r"[\w.]+", arg):
            out.append("tests/" + arg.split(".")[0])
        elif _PATHLIKE.search(arg):
            out.append(arg.split("::")[0].split("[")[0].removeprefix("./").rstrip("/") or ".")
    return tuple(out)


def _script(words: list[str], line: str) -> tuple[str, str, str] | None:
    """(interpreter, script path or "-c", inline code) when `words` run a script rather than a module or a tool."""
    if not words:
        return None
    name = words[0]
    if _PYTHON.match(name):
        if len(words) == 1 or words[1] == "-":
            body = _HEREDOC.search(line)
            return ("python", "-c", body.group(2)) if body else None
        if words[1] == "-c" and len(words) > 2:
            return "python", "-c", words[2]
        if words[1].endswith(".py"):
            return "python", words[1].removeprefix("./"), ""
        return None
    if name == "go" and words[1:2] == ["run"] and len(words) > 2 and words[2].endswith(".go"):
        return "go", words[2].removeprefix("./"), ""
    if name in _SHELLS and len(words) > 1:
        if words[1] in ("-c", "-e") and len(words) > 2:
            return None  # a shell line inside a line: its commands are what runs, not a script
        suffix = "." + words[1].rsplit(".", 1)[-1] if "." in words[1] else ""
        if suffix in _INTERPRETERS:
            return _INTERPRETERS[suffix], words[1].removeprefix("./"), ""
        return None
    if name.startswith("./") and "." in name.rsplit("/", 1)[-1]:
        suffix = "." + name.rsplit(".", 1)[-1]
        if suffix in _INTERPRETERS:
            return _INTERPRETERS[suffix], name[2:], ""
    return None


def _matches_project(words: list[str], project: list[list[str]]) -> bool:
    def norm(ws: list[str]) -> list[str]:
        ws = [w.removeprefix("./") for w in ws]
        return ws[1:] if len(ws) > 1 and ws[0] in ("bash", "sh") else ws
    mine = norm(words)
    return any(mine[: len(p)] == p for p in (norm(q) for q in project) if p)


def project_words(commands: list[str]) -> list[list[str]]:
    """The repository's own test commands as word lists (each simple command of each)."""
    out: list[list[str]] = []
    for command in commands:
        for part in split_command(command).parts:
            words = strip_wrappers(list(part.words))
            if words and not part.dynamic_name:
                out.append(words)
    return out


def classify(line: str, project: list[list[str]], written: Callable[[str, tuple[str, ...]], bool]) -> Verifying | None:
    """The command of `line` that verifies code (the last one when there are several), or None. `project`: the
    repository's test commands (`project_words`); `written(path, cd)`: whether the session wrote that file (`cd`:
    the folders entered before it on the line)."""
    parsed = split_command(line)
    if not parsed.ok:
        return None
    parts = parsed.parts
    found: Verifying | None = None
    for i, part in enumerate(parts):
        cd = tuple(p.words[1] for p in parts[:i] if p.words[:1] == ["cd"] and len(p.words) == 2 and not p.dynamic)
        seen = _verifying(part, line, project, lambda path, cd=cd: written(path, cd))
        if seen is None:
            continue
        later = parts[i + 1:]
        trusted = not later and not part.piped
        found = Verifying(seen.kind, seen.runner, seen.text, seen.parse, seen.selection, seen.script, seen.code,
                          trusted, any(not is_read_only(p) for p in later), cd)
    return found


def _verifying(part: SimpleCommand, line: str, project: list[list[str]],
               written: Callable[[str], bool]) -> Verifying | None:
    if part.dynamic_name or not part.words:
        return None
    words = strip_wrappers(list(part.words))
    if not words:
        return None
    if _matches_project(words, project):
        return Verifying("project", "project", part.text, any_counts)
    hit = find_runner(words)
    if hit is not None:
        runner, start = hit
        return Verifying("tests", runner.name, part.text, runner.parse, selection(words[start:], runner.name))
    script = _script(words, line)
    if script is not None:
        interpreter, path, code = script
        if path == "-c" or written(path):
            return Verifying("script", interpreter, part.text, any_counts, script=path, code=code)
    return None


def only_reads(line: str) -> bool:
    """Every command of `line` only reads, by the policy's read-only list (no snapshot of the tree is needed after
    it: `grep -n x a.py | head`, `sed -n 1,20p a.py`, `ls`)."""
    parsed = split_command(line)
    return parsed.ok and all(is_read_only(part) for part in parsed.parts)


def quoted(line: str, width: int = 200) -> str:
    """A command as one line for the record (here-document bodies left out)."""
    head = line.split("\n", 1)[0]
    text = head + (" …" if "\n" in line else "")
    return text if len(text) <= width else text[: width - 1] + "…"



_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TEST_WORD = re.compile(r"\b(tests?|testing)\b", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
#: prose that names another kind of check: a span on such a line under a testing heading is not a test command
_OTHER_CHECK = re.compile(r"\b(lint\w*|format\w*|style|type[- ]?check\w*|typing)\b", re.IGNORECASE)
_INTERPRETER_ALONE = re.compile(r"^(?:python\d?(?:\.\d+)*|node|bash|sh|ruby|go|cargo|npm|make)$")


def from_instructions(text: str) -> list[str]:
    """The project's own test commands, as its instructions (AGENTS.md, CLAUDE.md) give them: the code spans of a
    line whose prose (outside the spans) speaks of tests, and the lines of a code block opening within three lines
    after one; under a heading that speaks of tests (`## Testing`), until the next heading, the spans of every
    line that does not name another kind of check (lint, format, typing) and every code block. A single word
    counts only as a script (`./check.sh`, `run-tests.sh`); a bare interpreter, or one with flags only, never
    does."""
    found: list[str] = []
    inside = take = section = False
    after_test_line = 0  # prose lines left in which an opening fence starts a block of test commands
    for line in text.splitlines():
        if _FENCE.match(line):
            inside, take = not inside, not inside and (after_test_line > 0 or section)
            continue
        if inside:
            command = line.strip().removeprefix("$ ")
            if take and command and not command.startswith("#"):
                found.append(command)
            continue
        after_test_line = max(after_test_line - 1, 0)
        prose = _CODE_SPAN.sub(" ", line)
        if _HEADING.match(line):
            section = bool(_TEST_WORD.search(prose))
        elif _TEST_WORD.search(prose) or (section and not _OTHER_CHECK.search(prose)):
            found += _CODE_SPAN.findall(line)
            after_test_line = 3
    out: list[str] = []
    for command in (c.strip() for c in found):
        words = command.split()
        if not words or words[0].startswith("-") or len(command) > 200 or command in out:
            continue
        if len(words) == 1 and not (command.startswith("./") or command.endswith(".sh")):
            continue
        if _INTERPRETER_ALONE.match(words[0]) and all(w.startswith("-") for w in words[1:]):
            continue
        out.append(command)
    return out
