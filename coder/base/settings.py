"""How a configuration key is declared: `setting(...)`, a dataclass field that also says what the key means, its
limits and what a repository's own config may do with it.

Every key of the configuration is one such field in the dataclass of its section (coder/config/sections.py, and
the few sections whose owners lie below coder.config: `[sandbox]` in coder/sandbox/profile.py, `[providers.X]`
and `[pricing.X]` in coder/models/settings.py). coder/config reads the fields to check every layer, to filter a
repository's layer, to read the environment and to write docs/config.md; nothing else describes a key. This module
lives at the bottom of the layers so that those owners can declare their sections without importing coder.config.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from enum import Enum
from typing import Any


class Repo(Enum):
    """What a repository's own `.coder/config.toml` may do with a key (it is written by somebody else). The value is
    the reference's wording."""

    ALWAYS = "yes"  # harmless: it changes how coder works, not what runs or where data goes
    TRUSTED = "when trusted"  # only when the user trusts the workspace
    NEVER = "no"  # only the user's own config, the environment or flags
    LOWER = "to lower it"  # a number only lowered, a choice only narrowed (choices are listed narrowest first)
    SAFE = "only to its safe value"  # only to the `safe` value the field declares (turn a server off)
    ADD = "adds to yours"  # a list the repository adds to, never replaces (rules that only narrow)
    ADD_TRUSTED = "adds to yours, when trusted"  # the same, only when the workspace is trusted


class SettingError(ValueError):
    """A value a section's `check()` or a field's `check` refuses; `key` is the key's name inside its section
    (dotted for deeper tables), the message says what is wrong. coder/config adds the file, line and section."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


MISSING: Any = dataclasses.MISSING


def setting(default: Any = MISSING, *, doc: str, repo: Repo | None, factory: Callable[[], Any] | None = None,
            at_least: float | None = None, above: float | None = None, at_most: float | None = None,
            env: str | None = None, env_split: str = ",", safe: Any = None,
            check: Callable[[Any], Any] | None = None) -> Any:
    """A configuration key: its default (or `factory` for a list or table), what it means (`doc`, one sentence
    for the reference), what a repository may do with it (`repo`, required so a new key cannot forget it; None only
    for a field that is itself a section, whose keys say it one by one), numeric bounds, the environment variable
    that sets it (a list from the environment is split at `env_split` and adds to the list of the files), the
    value a `Repo.SAFE` key may take from a repository, and `check`, a function that raises ValueError for a value
    the type cannot rule out (or returns the value normalized)."""
    metadata = {"doc": doc, "repo": repo, "at_least": at_least, "above": above, "at_most": at_most, "env": env,
                "env_split": env_split, "safe": safe, "check": check}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def not_blank(value: str | None) -> None:
    """A `check` for a text key that may be unset but, when set, says something (a command, a URL, a model)."""
    if value is not None and not value.strip():
        raise ValueError("must not be empty")


def section(cls: type, doc: str) -> Any:
    """A field that is a whole section (a table of keys, each declared with `setting`)."""
    return dataclasses.field(default_factory=cls, metadata={"doc": doc, "repo": None})
