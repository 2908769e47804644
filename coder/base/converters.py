"""The schema layer's converters (coder/base/schema.py is the layer and says what it checks): the words of its
messages, where data came from (`Source`), the error (`SchemaError`), and one converter per type, built once from
the type's annotations and cached, that checks a value (and builds it into the dataclasses it declares).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, Literal, Union

from coder.base.errors import ConfigError
from coder.base.settings import SettingError

Keys = tuple[str, ...]
"""Where a value sits in its document: table keys, and `#N` for the Nth entry of a list (counted from 1)."""

MISSING: Any = dataclasses.MISSING
#: a field's metadata: the keys the schema reads (a config `setting()` writes the same ones)
_BOUNDS = (("above", lambda v, b: v > b, "greater than"), ("at_least", lambda v, b: v >= b, "at least"),
           ("at_most", lambda v, b: v <= b, "at most"))


class SchemaError(ConfigError):
    """Data that does not fit its declaration: one line, `where: key = value: what is wrong`. A ConfigError (exit
    code 2) because most data is a file the user can fix; callers that answer someone else (a tool call's input,
    which goes back to the model) read `keys` and `problem`."""

    def __init__(self, line: str, keys: Keys = (), problem: str = "") -> None:
        super().__init__(line)
        self.keys = keys
        self.problem = problem or line


class Source:
    """Where raw data came from, for the messages: a file (with the line of each key, when the reader knows them),
    a stored event, a tool call. The configuration's layers are Sources that speak TOML (coder/config/check.py)."""

    #: what a mapping is called in this kind of document
    table_word = "an object"

    def __init__(self, name: str, lines: dict[Keys, int] | None = None) -> None:
        self.name = name
        self.lines: dict[Keys, int] = lines or {}

    def line(self, keys: Keys) -> int:
        for n in range(len(keys), -1, -1):
            if keys[:n] in self.lines:
                return self.lines[keys[:n]]
        return 0

    def at(self, keys: Keys) -> str:
        line = self.line(keys)
        return f"{self.name}:{line}" if line else self.name

    def label(self, keys: Keys) -> str:
        """`hooks.PreToolUse[0].timeout`: the key as the document's own language would reach it."""
        out = ""
        for key in keys:
            out += f"[{int(key[1:]) - 1}]" if key.startswith("#") and key[1:].isdigit() else \
                (f".{key}" if out else key)
        return out

    def header(self, keys: Keys) -> str:
        """How the table at `keys` is written, for a hint in a message ("" when the format has no such thing)."""
        return ""

    def error(self, keys: Keys, problem: str, value: Any = MISSING) -> SchemaError:
        label = self.label(keys)
        what = label if value is MISSING or not label else f"{label} = {shown(value, self.table_word)}"
        return SchemaError(f"{self.at(keys)}: {what}: {problem}" if what else f"{self.at(keys)}: {problem}",
                           keys, problem)


def source(where: str | Source) -> Source:
    return where if isinstance(where, Source) else Source(where)


# ---- words -----------------------------------------------------------------------------------------------------
def shown(value: Any, table: str = "an object") -> str:
    """A value as the document wrote it, short (a mapping is only named: `table`)."""
    if isinstance(value, dict):
        return table
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe(hint: Any, table: str = "an object") -> str:
    """What a type accepts, in words (messages, docs/config.md)."""
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
        return " or ".join(dict.fromkeys(describe(a, table) for a in args if a is not type(None)))
    if origin is list:
        item = args[0]
        if typing.get_origin(item) is Literal:
            return "a list of names among " + ", ".join(shown(a) for a in typing.get_args(item))
        if dataclasses.is_dataclass(item) or typing.get_origin(item) is dict:
            return f"a list of {table.split()[-1]}s"
        return f"a list of {describe(item, table).split(' ', 1)[1]}s" if item is not Any else "a list"
    if origin is dict or dataclasses.is_dataclass(hint):
        return table
    return "anything"


def unknown(name: str, known: typing.Iterable[str]) -> str:
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"unknown key ({hint}known: {', '.join(known)})"


def _unquote(value: Any, hint: Any) -> str:
    """A hint when a string would have been right without its quotes (`"false"`, `"5"`)."""
    if isinstance(value, str) and hint is not str:
        try:
            if value.strip().lower() in ("true", "false") if hint is bool else math.isfinite(hint(value)):
                return " (write it without quotes)"
        except ValueError:
            pass
    return ""


# ---- the converters --------------------------------------------------------------------------------------------
Converter = Callable[[Any, Keys, Source], Any]


@dataclasses.dataclass
class _Field:
    name: str  # the Python name
    key: str  # the document's
    hint: Any
    required: bool
    meta: Mapping[str, Any]
    bounded: bool  # has bounds or a check


@dataclasses.dataclass
class _Plan:
    fields: dict[str, _Field]  # by the document's key
    hints: dict[str, Any]  # by the Python name
    ignore_unknown: bool


@cache
def plan_of(cls: type) -> _Plan:
    hints = typing.get_type_hints(cls)
    fields: dict[str, _Field] = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.metadata.get("schema") is False or f.name not in hints:
            continue
        name = f.metadata.get("key") or f.name
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        bounded = any(f.metadata.get(b) is not None for b in ("above", "at_least", "at_most", "check"))
        fields[name] = _Field(f.name, name, hints[f.name], required, f.metadata, bounded)
    return _Plan(fields, {f.name: f.hint for f in fields.values()},
                 getattr(cls, "__unknown_keys__", "refuse") == "ignore")


def fields_of(cls: type) -> dict[str, dataclasses.Field]:
    """The dataclass fields `cls` reads from data, by Python name."""
    names = {f.name for f in plan_of(cls).fields.values()}
    return {f.name: f for f in dataclasses.fields(cls) if f.name in names}


def hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of the fields `cls` reads."""
    return plan_of(cls).hints


@cache
def converter(hint: Any, build: bool) -> Converter:
    """The function that checks (and, with `build`, builds) a value of type `hint`; made once per type."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is object:
        return lambda value, keys, src: value
    if dataclasses.is_dataclass(hint):
        return _model(hint, build)  # type: ignore[arg-type]
    if origin in (Union, types.UnionType):
        return _union(hint, args, build)
    if origin is list:
        return _list(hint, args[0], build)
    if origin is dict:
        return _dict(hint, args[1], build)
    if origin is Literal:
        allowed = {(type(a), a) for a in args}

        def literal(value: Any, keys: Keys, src: Source) -> Any:
            if (type(value), value) not in allowed:
                raise src.error(keys, f"expected {describe(hint)}", value)
            return value
        return literal
    if hint is float:
        def number(value: Any, keys: Keys, src: Source) -> Any:
            if type(value) is float:
                if math.isnan(value):
                    raise src.error(keys, "expected a number, not NaN", value)
                return value
            if type(value) is int:
                return float(value)
            raise src.error(keys, f"expected a number{_unquote(value, float)}", value)
        return number
    if hint is bool:
        return _plain(hint, lambda value: type(value) is bool)
    if hint is int:
        return _plain(hint, lambda value: isinstance(value, int) and type(value) is not bool)
    if hint is str:
        return _plain(hint, lambda value: isinstance(value, str))
    raise TypeError(f"the schema cannot check the type {hint!r}")  # a declaration's mistake


def _plain(hint: type, fits: Callable[[Any], bool]) -> Converter:
    def plain(value: Any, keys: Keys, src: Source) -> Any:
        if not fits(value):
            raise src.error(keys, f"expected {describe(hint)}{_unquote(value, hint)}", value)
        return value
    return plain


def _model(cls: type, build: bool) -> Converter:
    #: each field's converter, by the document's key, made on the first value (not here: a model may contain
    #: itself) and then reused; its required keys; whether it states rules of its own
    fields: dict[str, tuple[_Field, Converter]] = {}
    required: list[_Field] = []
    rules = callable(getattr(cls, "check", None))

    def model(value: Any, keys: Keys, src: Source) -> Any:
        if not isinstance(value, dict):
            header = src.header(keys)
            raise src.error(keys, f"expected {src.table_word}{f' ({header})' if header else ''}", value)
        plan = plan_of(cls)
        if not fields and plan.fields:
            required[:] = [f for f in plan.fields.values() if f.required]
            fields.update({k: (f, converter(f.hint, build)) for k, f in plan.fields.items()})
        out: dict[str, Any] = {}
        for name, raw in value.items():
            found = fields.get(name)
            if found is None:
                if plan.ignore_unknown:
                    continue
                raise src.error((*keys, str(name)), unknown(str(name), plan.fields))
            spec, convert = found
            converted = convert(raw, (*keys, name), src)
            if spec.bounded:
                converted = bounded(converted, spec.meta, (*keys, name), src, raw)
            out[spec.name] = converted
        for spec in required:
            if spec.name not in out:
                raise src.error(keys, f"needs `{spec.key}`")
        if not build:
            return out
        built = cls(**out)
        if rules:  # rules over several keys (a server needs `command` or `url`)
            try:
                built.check()
            except SettingError as exc:
                raise src.error((*keys, *filter(None, exc.key.split("."))), exc.message) from None
        return built
    return model


def bounded(value: Any, meta: Mapping[str, Any], keys: Keys, src: Source, written: Any) -> Any:
    """`value` (converted from `written`) within the field's bounds and passing its own check."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for bound, ok, words in _BOUNDS:
            limit = meta.get(bound)
            if limit is not None and not ok(value, limit):
                raise src.error(keys, f"must be {words} {limit:g}", written)
    check_value = meta.get("check")
    if check_value is not None and value is not None:
        try:
            changed = check_value(value)
        except SettingError as exc:
            raise src.error((*keys, *exc.key.split(".")), exc.message) from None
        except ValueError as exc:
            raise src.error(keys, str(exc), written) from None
        if changed is not None:
            value = changed
    return value


def _discriminator(arms: tuple[Any, ...]) -> tuple[str, dict[Any, type]] | None:
    """(field, value -> arm) when every arm is a dataclass with a one-value Literal field of the same name."""
    if not arms or not all(dataclasses.is_dataclass(a) for a in arms):
        return None
    for name, hint in typing.get_type_hints(arms[0]).items():
        table: dict[Any, type] = {}
        for arm in arms:
            arm_hint = typing.get_type_hints(arm).get(name)
            if typing.get_origin(arm_hint) is not Literal or len(typing.get_args(arm_hint)) != 1:
                break
            table[typing.get_args(arm_hint)[0]] = arm
        else:
            if typing.get_origin(hint) is Literal and len(table) == len(arms):
                return name, table
    return None


def dispatch(hint: Any, value: dict[str, Any]) -> type | None:
    found = _discriminator(tuple(a for a in typing.get_args(hint) if a is not type(None)))
    return found[1].get(value.get(found[0])) if found else None


def _union(hint: Any, args: tuple[Any, ...], build: bool) -> Converter:
    optional = type(None) in args
    arms = tuple(a for a in args if a is not type(None))
    tagged = _discriminator(arms)
    if tagged is not None:
        field_name, table = tagged

        def by_tag(value: Any, keys: Keys, src: Source) -> Any:
            if value is None and optional:
                return None
            if not isinstance(value, dict):
                raise src.error(keys, f"expected {describe(hint, src.table_word)}", value)
            arm = table.get(value.get(field_name))
            if arm is None:
                choices = ", ".join(shown(t) for t in table)
                raise src.error((*keys, field_name), f"expected one of {choices}", value.get(field_name))
            return converter(arm, build)(value, keys, src)
        return by_tag

    if len(arms) == 1:  # `X | None`: X's own message (with its hints), not the union's
        only = converter(arms[0], build)

        def optional_value(value: Any, keys: Keys, src: Source) -> Any:
            return None if value is None else only(value, keys, src)
        return optional_value

    def union(value: Any, keys: Keys, src: Source) -> Any:
        if value is None and optional:
            return None
        for arm in arms:
            try:
                return converter(arm, build)(value, keys, src)
            except SchemaError:
                continue
        raise src.error(keys, f"expected {describe(hint, src.table_word)}", value)
    return union


def _list(hint: Any, item: Any, build: bool) -> Converter:
    def items(value: Any, keys: Keys, src: Source) -> Any:
        if type(value) is not list:
            if isinstance(value, str) and (item is str or typing.get_origin(item) is Literal):
                raise src.error(keys, f"expected {describe(hint, src.table_word)}, like [{shown(value)}] (a string "
                                "is not split into a list)", value)
            header = src.header((*keys, "#1")) if dataclasses.is_dataclass(item) else ""
            raise src.error(keys, f"expected {describe(hint, src.table_word)}{f' ({header})' if header else ''}",
                            value)
        convert = converter(item, build)
        return [convert(v, (*keys, f"#{i}"), src) for i, v in enumerate(value, 1)]
    if item is Any:
        def anything(value: Any, keys: Keys, src: Source) -> Any:
            if type(value) is not list:
                return items(value, keys, src)
            return value
        return anything
    return items


def _dict(hint: Any, item: Any, build: bool) -> Converter:
    def table(value: Any, keys: Keys, src: Source) -> Any:
        if not isinstance(value, dict):
            header = src.header((*keys, "NAME")) if dataclasses.is_dataclass(item) else ""
            what = f"{src.table_word} of {src.table_word.split()[-1]}s ({header})" if header else \
                describe(hint, src.table_word)
            raise src.error(keys, f"expected {what}", value)
        if item is Any:
            for name in value:
                if not isinstance(name, str):
                    raise src.error((*keys, str(name)), "expected a string key", name)
            return value
        convert = converter(item, build)
        out = {}
        for name, v in value.items():
            if not isinstance(name, str):
                raise src.error((*keys, str(name)), "expected a string key", name)
            out[name] = convert(v, (*keys, name), src)
        return out
    return table
