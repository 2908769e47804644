"""The checks every layer of the configuration goes through, read from the declarations (coder/config/sections.py).

`read(cls, table, layer)` checks one layer's table against a section class: the type of every value (no casting: a
string is not a number, `"false"` is not false, and a string is never split into a list of characters), unknown
keys (with "did you mean"), bounds and each field's own `check`. It returns the table normalized (whole numbers
where a float is declared become floats; domain patterns their canonical form). `build(cls, table)` turns a
checked, merged table into the dataclasses. Every mistake is one ConfigError line naming where the value came
from (file and line, the environment variable or the command line), the section and the key.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, Union

from coder.base.errors import ConfigError
from coder.base.settings import SettingError

Keys = tuple[str, ...]


@dataclass
class Layer:
    """One layer's raw table and how to say where a key of it came from."""

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


def shown(value: Any) -> str:
    """A value as the user wrote it in TOML, short."""
    if isinstance(value, dict):
        return "a table"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def fail(layer: Layer, keys: Keys, message: str, value: Any = dataclasses.MISSING) -> ConfigError:
    what = label(keys) if value is dataclasses.MISSING else f"{label(keys)} = {shown(value)}"
    return ConfigError(f"{layer.where(keys)}: {what}: {message}")


@cache
def hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@cache
def fields_of(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if f.name in hints(cls) and "doc" in f.metadata}


def describe(hint: Any) -> str:
    """What a type accepts, in words for the error message and the reference."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is bool:
        return "true or false"
    if hint is int:
        return "a whole number"
    if hint is float:
        return "a number"
    if hint is str:
        return "a string"
    if origin is Literal:
        values = [shown(a) for a in args]
        return "one of " + ", ".join(values) if len(values) > 1 else values[0]
    if origin in (Union, types.UnionType):
        arms = [describe(a) for a in args if a is not type(None)]
        return " or ".join(arms)
    if origin is list:
        item = args[0]
        if typing.get_origin(item) is Literal:
            return "a list of names among " + ", ".join(shown(a) for a in typing.get_args(item))
        return "a list of tables" if dataclasses.is_dataclass(item) else f"a list of {describe(item)[2:]}s"
    if origin is dict or dataclasses.is_dataclass(hint):
        return "a table"
    return "anything"


def convert(value: Any, hint: Any, layer: Layer, keys: Keys) -> Any:
    """`value` checked against `hint`, normalized; ConfigError naming `keys` when it does not fit."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise fail(layer, keys, f"expected a table ({header(keys)})", value)
        return read(hint, value, layer, keys)  # type: ignore[arg-type]
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arm in args:
            if arm is not type(None):
                try:
                    return convert(value, arm, layer, keys)
                except ConfigError:
                    continue
        raise fail(layer, keys, f"expected {describe(hint)}", value)
    if origin is list:
        if isinstance(value, str):
            raise fail(layer, keys, f"expected {describe(hint)}, like [{shown(value)}] (a string is not split "
                       "into a list)", value)
        if not isinstance(value, list):
            written = f" ({header((*keys, '#1'))})" if dataclasses.is_dataclass(args[0]) else ""
            raise fail(layer, keys, f"expected {describe(hint)}{written}", value)
        return [convert(item, args[0], layer, (*keys, f"#{i}")) for i, item in enumerate(value, 1)]
    if origin is dict:
        if not isinstance(value, dict):
            raise fail(layer, keys, f"expected a table of tables ({header((*keys, 'NAME'))})", value)
        return {str(k): convert(v, args[1], layer, (*keys, str(k))) for k, v in value.items()}
    if origin is Literal:
        if value not in args or type(value) is not type(args[args.index(value)]):
            raise fail(layer, keys, f"expected {describe(hint)}", value)
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise fail(layer, keys, f"expected {describe(hint)}{unquote(value, hint)}", value)
        return float(value)
    if hint in (bool, int, str):
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise fail(layer, keys, f"expected {describe(hint)}{unquote(value, hint)}", value)
        return value
    raise TypeError(f"coder.config cannot check the type {hint!r} of {label(keys)}")  # a declaration's mistake


def unquote(value: Any, hint: Any) -> str:
    """A hint when a string would have been right without its quotes (`"false"`, `"5"`)."""
    if isinstance(value, str) and hint is not str:
        try:
            if value.strip().lower() in ("true", "false") if hint is bool else hint(value) is not None:
                return " (write it without quotes)"
        except ValueError:
            pass
    return ""


def bounded(value: Any, meta: dict[str, Any], layer: Layer, keys: Keys, written: Any) -> Any:
    """`value` (converted from `written`) within the field's bounds and passing its own check."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for bound, ok, words in (("above", lambda b: value > b, "greater than"),
                                 ("at_least", lambda b: value >= b, "at least"),
                                 ("at_most", lambda b: value <= b, "at most")):
            if meta.get(bound) is not None and not ok(meta[bound]):
                raise fail(layer, keys, f"must be {words} {meta[bound]:g}", written)
    check = meta.get("check")
    if check is not None and value is not None:
        try:
            changed = check(value)
        except SettingError as exc:
            raise fail(layer, (*keys, *exc.key.split(".")), exc.message) from None
        except ValueError as exc:
            raise fail(layer, keys, str(exc), written) from None
        if changed is not None:
            value = changed
    return value


def read(cls: type, table: dict[str, Any], layer: Layer, keys: Keys = ()) -> dict[str, Any]:
    """One layer's `table` for section `cls`, checked key by key and normalized."""
    known = fields_of(cls)
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise fail(layer, (*keys, key), unknown(key, known))
        out[key] = bounded(convert(value, hints(cls)[key], layer, (*keys, key)), dict(known[key].metadata), layer,
                           (*keys, key), value)
    for name, f in known.items():  # a key without a default (a hook's `command`): its table is one whole entry
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and name not in table:
            raise fail(layer, keys, f"needs `{name}`")
    return out


def unknown(key: str, known: Any) -> str:
    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"unknown key ({hint}known: {', '.join(sorted(known))})"


def build(hint: Any, value: Any) -> Any:
    """A checked (and merged) table as the dataclasses it declares."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        types_ = hints(hint)  # type: ignore[arg-type]
        return hint(**{k: build(types_[k], v) for k, v in value.items()})  # type: ignore[operator]
    if origin is list and isinstance(value, list):
        return [build(args[0], v) for v in value]
    if origin is dict and isinstance(value, dict):
        return {k: build(args[1], v) for k, v in value.items()}
    return value


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
