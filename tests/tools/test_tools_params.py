"""Typed tool calls (issue 48, item 2): each built-in tool's params type agrees with the contract the model reads
(`tools/NAME.json`), and no `Tool` method takes the raw input, outside the one module of the tools whose schema
arrives at run time (coder/tools/external.py).

The agreement: the same keys; a key required on one side is required on the other; the same JSON type (a
`X | None = None` key is one the model may leave out or send as null); the same enum (a `Literal`); the same
numeric bounds (`at_least`/`at_most`/`above` and `minimum`/`maximum`/`exclusiveMinimum`); and the same default,
which the contract states (`default`) unless it is None or false (a key left out means none, or no). Nested
objects and list items are compared the same way. What neither side can state for the other (a rule over several
keys, such as `create` needs `file_text`, or a list of exactly two numbers) is the params' `check`.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

import coder
from coder.base.converters import plan_of
from coder.tools import external, registry
from coder.tools.base import Tool, ToolContext, ToolResult
from coder.tools.params import Params

EXTERNAL_MODULE = external.__name__
JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
BOUNDS = {"at_least": "minimum", "at_most": "maximum", "above": "exclusiveMinimum"}


def _arms(hint: Any) -> tuple[Any, bool]:
    """The type a hint declares, and whether it admits None."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        assert len(args) == 1, f"a union of several types cannot be one JSON type: {hint}"
        return args[0], True
    return hint, False


def disagreements(model: type, schema: Mapping[str, Any], where: str) -> Iterator[str]:
    """Every way the dataclass `model` and the JSON schema of an object say different things."""
    if schema.get("type") != "object":
        yield f"{where}: the contract's schema is not an object"
        return
    plan = plan_of(model)
    properties: Mapping[str, Any] = schema.get("properties", {})
    for key in sorted(set(plan.fields) - set(properties)):
        yield f"{where}.{key}: in the params, not in the contract"
    for key in sorted(set(properties) - set(plan.fields)):
        yield f"{where}.{key}: in the contract, not in the params"
    required = {k for k, f in plan.fields.items() if f.required}
    if required != set(schema.get("required", [])):
        theirs = sorted(schema.get("required", []))
        yield f"{where}: required {sorted(required)} in the params, {theirs} in the contract"
    fields = {f.name: f for f in dataclasses.fields(model)}
    for key, spec in plan.fields.items():
        if key in properties:
            yield from _field(spec.hint, fields[spec.name], properties[key], f"{where}.{key}")


def _field(hint: Any, field: dataclasses.Field, prop: Mapping[str, Any], where: str) -> Iterator[str]:
    yield from _type(hint, prop, where)
    for ours, theirs in BOUNDS.items():
        if field.metadata.get(ours) != prop.get(theirs):
            yield f"{where}: {ours} = {field.metadata.get(ours)} in the params, {theirs} = {prop.get(theirs)}"
    default = field.default if field.default_factory is dataclasses.MISSING else field.default_factory()
    if default is dataclasses.MISSING:
        return
    stated = prop.get("default", dataclasses.MISSING)
    if stated is dataclasses.MISSING and default not in (None, False):
        yield f"{where}: the params' default {default!r} is not in the contract (`\"default\": {default!r}`)"
    elif stated is not dataclasses.MISSING and stated != default:
        yield f"{where}: default {default!r} in the params, {stated!r} in the contract"


def _type(hint: Any, prop: Mapping[str, Any], where: str) -> Iterator[str]:
    hint, _ = _arms(hint)
    origin = typing.get_origin(hint)
    if origin is Literal:
        values = list(typing.get_args(hint))
        if prop.get("type") != "string" or prop.get("enum") != values:
            yield f"{where}: one of {values} in the params, {prop.get('type')} {prop.get('enum')} in the contract"
    elif origin is list:
        if prop.get("type") != "array":
            yield f"{where}: a list in the params, {prop.get('type')} in the contract"
        else:
            yield from _type(typing.get_args(hint)[0], prop.get("items", {}), f"{where}[]")
    elif dataclasses.is_dataclass(hint):
        yield from disagreements(hint, prop, where)  # type: ignore[arg-type]
    elif prop.get("type") != JSON_TYPES.get(hint) or "enum" in prop:
        yield f"{where}: {hint} in the params, {prop.get('type')} {prop.get('enum', '')} in the contract"


def builtin() -> dict[str, Tool[Any]]:
    return registry.builtin_tools()


@pytest.mark.parametrize("name", sorted(registry.BUILTIN_IMPLEMENTATIONS))
def test_each_builtin_tools_params_agree_with_its_contract(name: str) -> None:
    tool = builtin()[name]
    assert dataclasses.is_dataclass(tool.params) and issubclass(tool.params, Params), (name, tool.params)
    assert not isinstance(tool, external.ExternalTool)
    assert list(disagreements(tool.params, tool.contract.input_schema, name)) == []


@dataclasses.dataclass(frozen=True)
class Item(Params):
    name: str


@dataclasses.dataclass(frozen=True)
class Wrong(Params):
    kind: Literal["a", "b"]
    count: int = 5
    ratio: float | None = None
    items: list[Item] | None = None
    extra: bool = False


def test_the_agreement_check_sees_each_kind_of_disagreement() -> None:
    """The control: a params type that differs from its contract in each way the check knows is caught."""
    schema = {"type": "object", "required": ["kind", "count"], "properties": {
        "kind": {"type": "string", "enum": ["a", "c"]}, "count": {"type": "integer", "minimum": 1},
        "ratio": {"type": "string"}, "items": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "integer"}}}}, "missing": {"type": "string"}}}
    found = "\n".join(disagreements(Wrong, schema, "wrong"))
    for problem in ("wrong.extra: in the params", "wrong.missing: in the contract", "required ['kind']",
                    "wrong.kind: one of ['a', 'b']", "wrong.count: at_least = None", "wrong.count: the params' "
                    "default 5", "wrong.ratio: <class 'float'>", "wrong.items[]: required ['name']",
                    "wrong.items[].name: <class 'str'>"):
        assert problem in found, (problem, found)
    agreeing = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    assert list(disagreements(Item, agreeing, "item")) == []


# ---- no Tool method takes the raw input --------------------------------------------------------------------------

def _all_tool_classes() -> list[type]:
    """Every Tool subclass coder defines, found over the whole package (every module imported), not only the
    registry's: a tool built elsewhere (an extension's) is held to the rule too."""
    for found in pkgutil.walk_packages(coder.__path__, "coder."):
        if not found.name.endswith("__main__"):  # `python -m coder` itself
            importlib.import_module(found.name)
    seen: list[type] = []
    todo = [Tool]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen and sub.__module__.startswith("coder."):
                seen.append(sub)
                todo.append(sub)
    return seen


def _raw(hint: Any) -> bool:
    """True for a type that is the raw input: a dict or mapping of anything (`dict[str, Any]`, a bare `dict`), or
    `Any` itself. A mapping of typed values (`dict[str, Tool]`) is not an input."""
    if hint is Any or hint is object or hint is dict:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_raw(a) for a in args)
    mapping = isinstance(origin, type) and issubclass(origin, Mapping)
    return mapping and (not args or args[-1] in (Any, object))


def raw_parameters(cls: type) -> list[str]:
    """`Class.method(parameter)` for every parameter of a method `cls` defines that takes the raw input. The door
    (`parse`) takes whatever came (`object`), which is its job; every other method takes the params."""
    out = []
    for name, member in vars(cls).items():
        if not inspect.isfunction(member) or name == "parse":
            continue
        hints = typing.get_type_hints(member, globalns=vars(inspect.getmodule(member)))
        for parameter in list(inspect.signature(member).parameters)[1:]:
            if parameter in hints and _raw(hints[parameter]):
                out.append(f"{cls.__module__}.{cls.__qualname__}.{name}({parameter}: {hints[parameter]})")
    return out


def test_no_tool_method_outside_the_external_tools_takes_a_dict() -> None:
    classes = _all_tool_classes()
    names = {f"{c.__module__}.{c.__qualname__}" for c in classes}
    assert {"coder.tools.bash.tool.BashTool", "coder.tools.edit_tool.EditTool",
            "coder.tools.external.MCPTool", "coder.tools.external.CommandTool"} <= names  # the walk found them
    assert [p for c in [Tool, *classes] if c.__module__ != EXTERNAL_MODULE for p in raw_parameters(c)] == []
    # control: the external tools do take the dict, and the check sees it
    assert "coder.tools.external.MCPTool.run(params: dict[str, typing.Any])" in raw_parameters(external.MCPTool)


Raw = dict[str, Any]


class Untyped(Tool[Any]):
    """What the rule forbids: the raw input under an alias, as a mapping, as Any; a typed mapping is fine."""

    def run(self, params: Raw, ctx: ToolContext) -> ToolResult:
        return ToolResult("")

    def facts(self, params: Mapping[str, object]):  # type: ignore[override]
        raise NotImplementedError

    def claude_call(self, params: Any, cwd: Path):  # type: ignore[override]
        raise NotImplementedError

    def attach(self, tools: dict[str, Tool[Any]]) -> None:
        raise NotImplementedError


def test_the_raw_parameter_check_sees_a_dict_an_alias_and_any() -> None:
    found = raw_parameters(Untyped)
    assert [p.split("(")[0].rsplit(".", 1)[-1] for p in found] == ["run", "facts", "claude_call"], found
