"""The door of a tool call: the model's input (or a stored, streamed or rewritten one) parsed once, where it enters,
into its tool's params, a dataclass declared beside the tool, through the schema layer (coder/base/schema.py).

A params type says what its contract `tools/NAME.json` says, which stays what the model reads (tests/tools/
test_tools_params.py checks that they agree: the same keys, types, enums, bounds, required keys and defaults). A
rule a type cannot state is the params' own `check()` (`create` needs `file_text`). An input that does not fit
raises `ToolInputError`, one line for each problem, which the model reads as the call's result (nothing ran):

    Invalid input for bash: timeout = "30": expected a number (write it without quotes)

Keys a contract does not declare are left out, as the contracts allow (none says `additionalProperties: false`,
and a model trained on another agent's tool sends that tool's extras, such as Claude Code's `description` of its
Bash); `null` for a key that may be left out means left out. What other agents' tools taught the models to write
is taken as they meant it, before the parse, by the params' `normalize`, each case named there (Codex's `input`
for a patch, Claude Code's `completed` for a finished task).

Only the tools whose schema arrives at run time (MCP servers' and custom tools) keep their input as a dict,
checked against that schema with `jsonschema`: coder/tools/external.py.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any, TypeVar

from coder.base.converters import plan_of
from coder.base.errors import ToolError
from coder.base.schema import MISSING, Keys, SchemaError, Source, bounded, convert, parse, shown

P = TypeVar("P")

#: how many problems one result lists (a model that got everything wrong reads the first ones, fixes, calls again)
MAX_PROBLEMS = 10


class Params:
    """What every tool's params dataclass shares besides its fields."""

    #: keys the contract does not declare are left out (see the module's docstring)
    __unknown_keys__ = "ignore"

    @classmethod
    def normalize(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """`raw` with what another agent's tool taught the models put in this contract's words; default: as it is.
        Never mutates `raw` (it is the input as the model wrote it, which events and the store keep)."""
        return raw


class ToolInputError(ToolError):
    """A call's input that does not fit its tool: one line for each problem; the call did not run."""

    def __init__(self, tool: str, problems: list[str]) -> None:
        self.tool = tool
        self.problems = problems[:MAX_PROBLEMS]
        head = f"Invalid input for {tool}"
        text = (f"{head}: {self.problems[0]}" if len(self.problems) == 1 else
                f"{head} ({len(problems)} problems):\n" + "\n".join(self.problems))
        super().__init__(text)


class _Input(Source):
    """A tool call's input: a problem names the key and the value, not a file (the model knows its call)."""

    def error(self, keys: Keys, problem: str, value: Any = MISSING) -> SchemaError:
        label = self.label(keys)
        what = label if value is MISSING or not label else f"{label} = {shown(value)}"
        return SchemaError(f"{what}: {problem}" if what else problem, keys, problem)


_INPUT = _Input("tool input")


def input_object(tool: str, raw: object) -> dict[str, Any]:
    """`raw` when it is a JSON object; what every input passes first, typed or not."""
    if not isinstance(raw, dict):
        raise ToolInputError(tool, [f"the input must be a JSON object, not {shown(raw)}"])
    if "_invalid_json" in raw:  # the provider kept arguments that did not parse (coder/models/openai_provider.py)
        raise ToolInputError(tool, [f"the input is not valid JSON: {str(raw['_invalid_json'])[:200]!r}"])
    return raw


def parse_params(model: type[P], raw: object, tool: str) -> P:
    """`raw` as the params `model` of the tool named `tool`, or ToolInputError with every problem."""
    data = input_object(tool, raw)
    normalize = getattr(model, "normalize", None)
    if normalize is not None:
        data = normalize(data)
    try:
        return parse(model, data, _INPUT)
    except SchemaError as first:
        raise ToolInputError(tool, problems(model, data) or [str(first)]) from None


def problems(model: type, data: dict[str, Any]) -> list[str]:
    """One line for each key of `data` that does not fit `model` and each required key it lacks (the schema layer
    stops at the first; a model fixes them all in one go). Empty when every key fits: the params' own `check()`
    refused the whole."""
    lines: list[str] = []
    for key, spec in plan_of(model).fields.items():
        if key not in data:
            if spec.required:
                lines.append(f"{key}: missing (it is required)")
            continue
        try:
            value = convert(data[key], spec.hint, _INPUT, (key,), build=True)
            if spec.bounded:
                bounded(value, spec.meta, (key,), _INPUT, data[key])
        except SchemaError as exc:
            lines.append(str(exc))
    return lines


def written(params: object) -> dict[str, Any]:
    """Params as a model would write them, the fields left at their default left out: what a Claude Code hook reads
    of a call of a tool Claude Code does not have."""
    if isinstance(params, dict):
        return dict(params)
    return {key: _plain(value) for name, key, default in _defaults(type(params))
            if (value := getattr(params, name)) != default}


@cache
def _defaults(cls: type) -> tuple[tuple[str, str, Any], ...]:
    """(Python name, the data's key, default) of each field of a params type, read once."""
    return tuple((f.name, f.metadata.get("key") or f.name,
                  f.default if f.default_factory is dataclasses.MISSING else f.default_factory())
                 for f in dataclasses.fields(cls))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return written(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
