"""One schema layer: everything that enters coder as data is parsed once, where it enters, into a typed object.

A model is a dataclass; its fields' annotations are the schema (`bool`, `int`, `float`, `str`, `Literal[...]`,
unions with `None`, `list[...]`, `dict[str, ...]`, nested dataclasses, unions of dataclasses told apart by a
`Literal` field such as `type`, and `Any`), and a field's metadata adds what a type cannot say: bounds
(`above`, `at_least`, `at_most`), a `check` function, and `key`, the name the data uses when it is not a Python
name (`allowed-tools`); a model's own `check()` method states rules over several keys (raising SettingError).
`parse(model, raw, where)` returns the model built, or raises one `SchemaError` line:

    /home/u/.config/coder/agents/fix.md:4: max_turns = 2.9: expected a whole number
    .claude/settings.json:7: hooks.PreToolUse[0].hooks[0].timeout = "30": expected a number (write it without quotes)

Nothing is cast: a string is not a number, `"false"` is not false, a float is not a whole number, `true` is not
1, NaN is not a number, and a string is never split into a list. A key the model does not declare is refused
with "did you mean" unless the model says `__unknown_keys__ = "ignore"` (formats that belong to someone else,
such as Claude Code's, whose files carry keys coder has no use for). The typed configuration (coder/config)
checks each of its layers with the same converters (`check`, then `build` once the layers are merged); the
manifests of extensions, the stored events and the tools' inputs use `parse`.

Why not pydantic, which the SDKs load in a real session: docs/decisions/48-typed-doors.md (its import costs more
than coder's start-up, a scripted session or `coder --help` never loads it, lax mode casts, and its errors are
reports to rewrite into this one line). The converters (coder/base/converters.py) are built once per type and
cached, so a stored session of thousands of events is read in milliseconds.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar, Union

from coder.base.converters import (
    MISSING,
    Keys,
    SchemaError,
    Source,
    bounded,
    converter,
    describe,
    dispatch,
    fields_of,
    hints,
    plan_of,
    shown,
    unknown,
)

__all__ = ["MISSING", "NOT_READ", "Keys", "SchemaError", "Source", "bounded", "build", "check", "convert", "describe",
           "dump", "fields_of", "hints", "key", "not_read", "parse", "shown", "source", "unknown"]

T = TypeVar("T")


def source(where: str | Source) -> Source:
    return where if isinstance(where, Source) else Source(where)


# ---- the entry points ------------------------------------------------------------------------------------------
def parse(model: type[T], raw: Any, where: str | Source, keys: Keys = ()) -> T:
    """`raw` checked against `model` and built; a SchemaError line naming `where` and the key otherwise."""
    return converter(model, True)(raw, keys, source(where))


def convert(value: Any, hint: Any, where: str | Source, keys: Keys = (), build: bool = False) -> Any:
    """`value` checked against any type `hint` (not only a model), normalized, and built when `build`."""
    return converter(hint, build)(value, keys, source(where))


def check(model: type, raw: Any, where: str | Source, keys: Keys = ()) -> dict[str, Any]:
    """`raw` checked against the dataclass `model` and normalized (whole numbers where a float is declared become
    floats, a field's `check` may rewrite its value), but left as tables: the configuration merges its layers'
    tables before it builds them (`build`)."""
    return converter(model, False)(raw, keys, source(where))


def preset_values(cls: Any, table: dict[str, Any]) -> dict[str, Any]:
    """A model that declares `PRESETS` (named sets of its keys) and a `preset` field: the values of the preset the
    table chooses (else the field's default), which every key the table sets itself overrides (`[context] preset`,
    issue 45)."""
    presets: dict[str, dict[str, Any]] | None = getattr(cls, "PRESETS", None)
    if not presets:
        return {}
    default = next(f.default for f in dataclasses.fields(cls) if f.name == "preset")
    return dict(presets[table.get("preset", default)])


def build(hint: Any, value: Any) -> Any:
    """A table already checked (and merged) as the dataclasses `hint` declares."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        plan = plan_of(hint)  # type: ignore[arg-type]
        value = {**preset_values(hint, value), **value}
        return hint(**{k: build(plan.hints[k], v) for k, v in value.items()})  # type: ignore[operator]
    if origin in (Union, types.UnionType) and isinstance(value, dict):
        arm = dispatch(hint, value)
        return build(arm, value) if arm is not None else value
    if origin is list and isinstance(value, list):
        return [build(args[0], v) for v in value]
    if origin is dict and isinstance(value, dict):
        return {k: build(args[1], v) for k, v in value.items()}
    return value


def dump(obj: Any) -> Any:
    """A model as the data it was parsed from (fields under their `key`), for writing it back."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        plan = plan_of(type(obj))
        return {f.key: dump(getattr(obj, f.name)) for f in plan.fields.values()}
    if isinstance(obj, list):
        return [dump(v) for v in obj]
    if isinstance(obj, dict):
        return {k: dump(v) for k, v in obj.items()}
    return obj


# ---- declaring fields ------------------------------------------------------------------------------------------
def key(default: Any = MISSING, *, name: str | None = None, factory: Callable[[], Any] | None = None,
        above: float | None = None, at_least: float | None = None, at_most: float | None = None,
        check: Callable[[Any], Any] | None = None, doc: str = "") -> Any:
    """A field of a model with what its type cannot say: `name`, the key the data uses (`allowed-tools`); bounds;
    `check`, a function that raises ValueError for a value the type cannot rule out (or returns it normalized);
    `doc`, what it means."""
    metadata = {"key": name, "above": above, "at_least": at_least, "at_most": at_most, "check": check, "doc": doc}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


#: the metadata of a dataclass field that is not part of its schema (state set after parsing)
NOT_READ = {"schema": False}


def not_read(default: Any = MISSING, *, factory: Callable[[], Any] | None = None, **kwargs: Any) -> Any:
    """A field of a model that the data never sets (what the program fills in afterwards)."""
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=NOT_READ, **kwargs)
    return dataclasses.field(default=default, metadata=NOT_READ, **kwargs)
