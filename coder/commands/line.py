"""What a typed line is: a command or a message, and a command's name and argument. Text only, and nothing else
imported: the frontends read every line typed with it, from the first key on, before the commands themselves (the
session's, the repository's, their imports: most of a second) have loaded (issue 47)."""

from __future__ import annotations

import re

ALIASES = {"exit": "quit", "q": "quit", "?": "help", "new": "clear"}
_COMMAND = re.compile(r"^/[A-Za-z?][\w:-]*(\s|$)")


def is_command(line: str) -> bool:
    """A line is a command when it starts with '/' followed by a name (a path like /etc/x is not)."""
    return bool(_COMMAND.match(line.strip()))


def parse(line: str) -> tuple[str, str]:
    """'/compact keep the API' -> ('compact', 'keep the API')."""
    stripped = line.strip()[1:]
    name, _, arg = stripped.partition(" ")
    name = name.lower()
    return ALIASES.get(name, name), arg
