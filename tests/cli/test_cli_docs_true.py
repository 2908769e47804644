"""Issue 47, item 5: the docs are true to the app. Every `coder` command line and flag the README shows is one the
parser takes, every slash command the README and `/help` name exists, and every key they name is bound in the app
(the README and `/help` taught `a`, `p`, `n` on a permission prompt after it had become a numbered list).

What this cannot see: whether a key does what the text says it does (the tests of each key do), and prose that
names a key without writing it as a key (`press the up arrow`)."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from coder.cli.main import build_parser
from coder.commands.builtin import _help
from coder.commands.slash import ALIASES, BUILTINS, all_commands
from coder.tui.app import CoderApp
from coder.tui.widgets import NEW_LINE_KEYS

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()
#: keys the prompt and the questions read themselves (coder/tui/widgets.py PromptInput, coder/tui/prompts.py)
#: a question's numbered choices (coder/frontend/choices.py): digits answer it, letters never do
INPUT_KEYS = {"enter", "escape", "up", "down", "tab", *NEW_LINE_KEYS, *"123456789"}
#: a key as the docs write one: `Ctrl+R`, `Shift+Tab`, **Esc**, **↑**, and a lone character in bold or code (**n**)
KEY = re.compile(r"\b((?:(?:Ctrl|Alt|Shift)\+)+(?:[A-Z]\b|Tab|Enter|Esc))|\*\*(Esc|Enter|Tab|↑|↓|\w)\*\*|`(\w)`")


def parsers() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every parser of the command line by its subcommand path: () the top level, ('swebench', 'run'), ..."""
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        found[path] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return found


def coder_lines(text: str) -> list[str]:
    """The `coder ...` command lines of a Markdown text: code blocks' lines and inline code, comments cut off."""
    lines = []
    for block in re.findall(r"```(?:bash|sh|console)?\n(.*?)```", text, re.S):
        lines += [line.split(" #")[0].strip() for line in block.splitlines()]
    lines += re.findall(r"`(coder(?: [^`]*)?)`", text)
    return [line for line in lines if line == "coder" or line.startswith("coder ")]


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {option for action in parser._actions for option in action.option_strings}


def check_line(line: str, known: dict[tuple[str, ...], argparse.ArgumentParser]) -> list[str]:
    """The flags of one `coder ...` line that the parser does not take there (a subcommand is followed)."""
    words = shlex.split(line.split("|")[0])[1:]
    path: tuple[str, ...] = ()
    wrong = []
    flags = options(known[()])
    for word in words:
        if word.startswith("--"):
            name = word.split("=")[0]
            if name not in flags:
                wrong.append(f"{line!r}: {name} is no flag of {' '.join(('coder', *path))}")
        elif (*path, word) in known and not any(w.startswith("-") for w in words[:words.index(word)]):
            path = (*path, word)
            flags = options(known[path]) | options(known[()])
    return wrong


def test_every_coder_command_and_flag_the_readme_shows_exists() -> None:
    known = parsers()
    lines = coder_lines(README)
    assert len(lines) >= 10, lines  # the README's commands were found at all
    assert [] == [problem for line in lines for problem in check_line(line, known)]
    assert {"run", "review", "sessions", "trust", "acp"} <= {w for line in lines for w in line.split()[1:2]}
    # the flags named in prose (`--plain`, `--permission-mode`) too
    every = set().union(*(options(p) for p in known.values()))
    named = set(re.findall(r"`(--[a-z][a-z-]*)", README))
    assert named and named <= every, named - every


def test_every_slash_command_the_readme_and_help_name_exists(git_repo: Path) -> None:
    commands = set(BUILTINS) | set(ALIASES)
    in_readme = set(re.findall(r"`/([a-z][a-z-]*)", README))
    help_text = _help(SimpleNamespace(commands=all_commands(git_repo)), "").text  # type: ignore[arg-type]
    in_help = set(re.findall(r"`/([a-z][a-z-]*)", help_text))
    assert in_readme and in_readme <= commands, in_readme - commands
    assert set(BUILTINS) <= in_help  # /help lists every built-in
    assert in_help <= commands, in_help - commands


def key_name(shown: str) -> str:
    """`Ctrl+R` -> `ctrl+r`, `Esc` -> `escape`, `↑` -> `up`, as Textual names keys."""
    name = shown.lower()
    return {"↑": "up", "↓": "down"}.get(name, name[:-3] + "escape" if name.endswith("esc") else name)


def keys_named(text: str) -> set[str]:
    return {key_name(next(group for group in found if group)) for found in KEY.findall(text)}


def test_every_key_the_readme_and_help_name_is_bound_in_the_app(git_repo: Path) -> None:
    help_text = _help(SimpleNamespace(commands=all_commands(git_repo)), "").text  # type: ignore[arg-type]
    named = keys_named(README) | keys_named(help_text)
    bound = {binding.key for binding in CoderApp.BINDINGS if hasattr(binding, "key")}  # type: ignore[union-attr]
    assert {"ctrl+c", "shift+tab", "ctrl+t", "ctrl+b"} <= named  # the pattern finds keys at all
    assert named <= bound | INPUT_KEYS, named - bound - INPUT_KEYS


def test_the_check_finds_a_letter_taught_as_an_answer() -> None:
    """Control: the words of /help before issue 47 (`**n** denies that call`; the README's `a` always for this
    session) name keys the app does not have."""
    old_help = "on a permission prompt **n** denies that call and **Esc** denies and stops the turn"
    old_readme = "`y` allows once, `a` always for this session, `p` always in this project, `n` denies"
    bound = {binding.key for binding in CoderApp.BINDINGS if hasattr(binding, "key")}  # type: ignore[union-attr]
    assert keys_named(old_help) - bound - INPUT_KEYS == {"n"}
    assert keys_named(old_readme) - bound - INPUT_KEYS == {"y", "a", "p", "n"}


@pytest.mark.parametrize("line, problem", [
    ("coder run --no-such-flag x", "--no-such-flag"),
    ("coder --plain --plian", "--plian"),
    ("coder sessions --max-cost 1", "--max-cost"),  # a flag of `run`, not of `sessions`
])
def test_the_check_finds_a_wrong_flag(line: str, problem: str) -> None:
    """Controls: the check fails on a flag that does not exist, or exists only for another subcommand."""
    assert any(problem in p for p in check_line(line, parsers()))
