"""The checks every layer of the configuration goes through, read from the declarations (coder/config/sections.py).

`read(cls, table, layer)` checks one layer's table against a section class with the schema layer's converters
(coder/base/schema.py: the type of every value, no casting, unknown keys with "did you mean", bounds and each
field's own `check`) and returns the table normalized. `build(cls, table)` turns a checked, merged table into the
dataclasses. A layer is a schema `Source` that speaks TOML: every mistake is one ConfigError line naming where the
value came from (file and line, the environment variable or the command line), the section and the key.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coder.base import schema
from coder.base.errors import ConfigError
from coder.base.schema import Keys, Source, build, fields_of, hints
from coder.base.settings import SettingError

__all__ = ["Keys", "Layer", "build", "check_all", "fields_of", "header", "hints", "label", "read", "table"]


@dataclass
class Layer(Source):
    """One layer's raw table and how to say where a key of it came from."""

    table_word = "a table"

    name: str  # built-in | user | repository | environment | flag
    data: dict[str, Any]
    path: str = ""  # the file, for the user's and the repository's layers
    lines: dict[Keys, int] = field(default_factory=dict)  # key -> its line in the file (layers.py `key_lines`)
    labels: dict[Keys, str] = field(default_factory=dict)  # key -> its variable or flag (`CODER_MAX_TURNS`)
    written: dict[str, Any] = field(default_factory=dict)  # the table as written, before the checks

    def line(self, keys: Keys) -> int:
        for n in range(len(keys), 0, -1):
            if keys[:n] in self.lines:
                return self.lines[keys[:n]]
        return 0

    def label(self, keys: Keys) -> str:
        return label(keys)

    def header(self, keys: Keys) -> str:
        return header(keys)

    def at(self, keys: Keys) -> str:
        return self.where(keys)

    def where(self, keys: Keys) -> str:
        if self.path:
            line = self.line(keys)
            return f"{self.path}:{line}" if line else self.path
        found = next((self.labels[keys[:n]] for n in range(len(keys), 0, -1) if keys[:n] in self.labels), "")
        return f"{self.name} {found}" if found else self.name


def label(keys: Keys) -> str:
    """`[vcs] keep_sessions`, `max_turns`, `[hooks.before_tool #2] command`, `[pricing."my.model"] input` (an
    entry of a list is `#N`, counted from 1)."""
    parts: list[str] = []
    for key in keys:
        if key.startswith("#") and parts:
            parts[-1] += f" {key}"
        else:
            parts.append(quoted(key))
    return f"[{'.'.join(parts[:-1])}] {parts[-1]}" if len(parts) > 1 else parts[0] if parts else "(the file)"


def quoted(key: str) -> str:
    """A key as TOML writes it: bare when it may be, else in quotes."""
    return key if key and key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def header(keys: Keys) -> str:
    """The TOML header of the table at `keys`: `[sandbox]`, `[pricing."my.model"]`, `[[hooks.before_tool]]`."""
    dotted = ".".join(quoted(k) for k in keys if not k.startswith("#"))
    return f"[[{dotted}]]" if keys and keys[-1].startswith("#") else f"[{dotted}]"


def read(cls: type, table: dict[str, Any], layer: Layer, keys: Keys = ()) -> dict[str, Any]:
    """One layer's `table` for section `cls`, checked key by key and normalized."""
    return schema.check(cls, table, layer, keys)


def check_all(obj: Any, where: Callable[[Keys], str], keys: Keys = ()) -> None:
    """Run every section's `check()` (rules over several keys) on the built configuration; `where(keys)` says
    which layer set a key, for the message."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for name in fields_of(type(obj)):
            check_all(getattr(obj, name), where, (*keys, name))
        check = getattr(obj, "check", None)
        if callable(check):
            try:
                check()
            except SettingError as exc:
                at = (*keys, *exc.key.split("."))
                raise ConfigError(f"{where(at)}: {label(at)}: {exc.message}") from None
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            check_all(item, where, (*keys, f"#{i + 1}"))
    elif isinstance(obj, dict):
        for k, item in obj.items():
            check_all(item, where, (*keys, str(k)))


def table(cls: type, data: dict[str, Any], source: str) -> Any:
    """`data` checked and built as `cls`, for a table that comes from elsewhere than a configuration file (an
    `.mcp.json` entry is checked as `[mcp.servers.NAME]`); `source` starts the messages."""
    layer = Layer(source, data)
    built = build(cls, read(cls, data, layer))
    check_all(built, lambda keys: source)
    return built
