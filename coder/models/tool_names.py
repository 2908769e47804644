"""Tool names and input schemas as the model APIs accept them, and the way back.

MCP servers and custom tools may use names and schemas the APIs refuse: both Anthropic and OpenAI take names
matching `^[a-zA-Z0-9_-]{1,64}$` (Anthropic: docs.claude.com tool use, "name"; OpenAI: chat completions,
`tools[].function.name`, "a-z, A-Z, 0-9, underscores and dashes, maximum length of 64"), and an input schema
that is a JSON Schema object without `oneOf` / `allOf` / `anyOf` at its top level (Anthropic: "input_schema
does not support oneOf, allOf, or anyOf at the top level"; OpenAI: "parameters ... a JSON Schema object").

So on the way out a bad name becomes a sanitised one with a stable hash suffix (the same name maps to the same
API name in every request and after a resume) and a union schema is wrapped in an object with one property,
`input`; on the way in (`ToolMap.original`) the model's call gets the tool's real name and unwrapped input, so the
engine dispatches and records exactly what the tool declared. History keeps real names; every request maps them
again, statelessly.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from coder.models.types import ToolSpec

NAME_OK = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_BAD = re.compile(r"[^a-zA-Z0-9_-]")
MAX_NAME = 64
WRAP_KEY = "input"
_UNIONS = ("oneOf", "allOf", "anyOf")


def api_tool_name(name: str) -> str:
    """`name` if the APIs accept it, else its sanitised form with an 8-hex suffix of the original."""
    if NAME_OK.match(name):
        return name
    suffix = "_" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return (_BAD.sub("_", name)[: MAX_NAME - len(suffix)] or "tool") + suffix


def needs_wrap(schema: Any) -> bool:
    """Whether the APIs would refuse `schema` as a tool's top-level input schema."""
    return not isinstance(schema, dict) or schema.get("type") != "object" or any(k in schema for k in _UNIONS)


def wrap_schema(schema: Any) -> dict[str, Any]:
    """`schema` as the single required property `input` of an object."""
    return {"type": "object", "properties": {WRAP_KEY: schema if isinstance(schema, dict) else {}},
            "required": [WRAP_KEY]}


@dataclass
class ToolMap:
    """The API names and wrapped schemas of one request's tools, both ways."""

    names: dict[str, str] = field(default_factory=dict)  # real name -> API name
    back: dict[str, str] = field(default_factory=dict)  # API name -> real name
    wrapped: set[str] = field(default_factory=set)  # real names whose schema is wrapped

    @classmethod
    def of(cls, specs: list[ToolSpec]) -> ToolMap:
        out = cls()
        for spec in specs:
            api = api_tool_name(spec.name)
            out.names[spec.name] = api
            out.back[api] = spec.name
            if needs_wrap(spec.input_schema):
                out.wrapped.add(spec.name)
        return out

    def api_name(self, name: str) -> str:
        return self.names.get(name) or api_tool_name(name)

    def api_schema(self, spec: ToolSpec) -> dict[str, Any]:
        return wrap_schema(spec.input_schema) if spec.name in self.wrapped else spec.input_schema

    def api_input(self, name: str, data: dict[str, Any]) -> dict[str, Any]:
        if name not in self.wrapped or _still_wrapped(data):
            return data
        return {WRAP_KEY: data}

    def original(self, api_name: str, data: Any) -> tuple[str, Any]:
        """The real name and input of a call the model made under `api_name`."""
        name = self.back.get(api_name, api_name)
        if name in self.wrapped and isinstance(data, dict) and set(data) == {WRAP_KEY} \
                and isinstance(data[WRAP_KEY], dict):
            data = data[WRAP_KEY]
        return name, data


def _still_wrapped(data: Any) -> bool:
    """A call whose wrapped value is not an object stays wrapped in the history (inputs are objects)."""
    return isinstance(data, dict) and set(data) == {WRAP_KEY} and not isinstance(data[WRAP_KEY], dict)
