"""Where each key of a JSON or YAML document is written, so a schema error can say `file:line`
(coder/base/schema.py `Source`). The configuration's TOML has its own scan (coder/config/layers.py `key_lines`).

Keys are the schema's: table keys, `#N` for the Nth entry of a list. The JSON scan is a small tokenizer rather
than a parser (json keeps no positions): the document has already been parsed, and a line only has to be near
enough to find the mistake. YAML's own nodes carry their marks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from coder.base.schema import Keys

_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


@dataclass
class _Frame:
    keys: Keys
    is_object: bool
    key: str | None = None  # the object's current key, once read
    index: int = 1  # the array's current entry
    started: bool = False  # the current entry (or value) has begun


def json_lines(text: str) -> dict[Keys, int]:
    """The line (from 1) of every key of a JSON text, and of every entry of its arrays."""
    lines: dict[Keys, int] = {}
    stack: list[_Frame] = []
    line, pos = 1, 0
    for match in _TOKEN.finditer(text):
        line += text.count("\n", pos, match.start())
        pos = match.start()
        token = match.group()
        top = stack[-1] if stack else None
        if token in ("}", "]"):
            if stack:
                stack.pop()
            continue
        if token == ",":
            if top is not None:
                top.started = False
                if top.is_object:
                    top.key = None
                else:
                    top.index += 1
            continue
        if token == ":":
            continue
        if top is not None and top.is_object and top.key is None:  # a key
            try:
                top.key = str(json.loads(token))
            except ValueError:
                top.key = token
            lines.setdefault((*top.keys, top.key), line)
            continue
        keys: Keys = ()
        if top is not None:  # a value begins
            keys = (*top.keys, top.key) if top.is_object else (*top.keys, f"#{top.index}")  # type: ignore[arg-type]
            if not top.is_object and not top.started:
                lines.setdefault(keys, line)
            top.started = True
        if token in ("{", "["):
            stack.append(_Frame(keys, token == "{"))
    return lines


#: brackets ([ and {) open at once; no manifest needs more than a few, and PyYAML's scanner slows with the square of
#: the depth (a 40 kB front matter nested 20,000 deep took minutes of CPU before its composer gave up)
MAX_FLOW_DEPTH = 100


def _flow_depth(text: str) -> int:
    """The most brackets open at once, counted over the whole text, quoted strings included: an over-count only
    errs towards refusing a file no manifest looks like."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    return deepest


def yaml_with_lines(text: str, first_line: int = 1) -> tuple[Any, dict[Keys, int]]:
    """The YAML document in `text` (as `yaml.safe_load` reads it) and the line of each of its keys and entries;
    `first_line` is the file's line where `text` starts (a front matter's is 2). yaml.YAMLError when invalid."""
    # start-up time: PyYAML loads only when this runs
    import yaml

    if _flow_depth(text) > MAX_FLOW_DEPTH:  # before PyYAML: its scanner is quadratic in the depth
        raise yaml.YAMLError("nested too deeply")
    loader = yaml.SafeLoader(text)
    try:
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=yaml.SafeLoader)):
            # `*name` repeats a node: ten lines of them make a billion entries ("billion laughs"); no manifest
            # coder reads needs one
            raise yaml.YAMLError("aliases (*name) are not accepted here")
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except RecursionError:  # nested thousands deep: PyYAML's composer recurses per level
        raise yaml.YAMLError("nested too deeply") from None
    finally:
        loader.dispose()  # type: ignore[no-untyped-call]
    lines: dict[Keys, int] = {}

    def walk(node: Any, keys: Keys) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    at = (*keys, str(key_node.value))
                    lines.setdefault(at, key_node.start_mark.line + first_line)
                    walk(value, at)
        elif isinstance(node, yaml.SequenceNode):
            for number, value in enumerate(node.value, 1):
                at = (*keys, f"#{number}")
                lines.setdefault(at, value.start_mark.line + first_line)
                walk(value, at)

    try:
        walk(node, ())
    except RecursionError:
        raise yaml.YAMLError("nested too deeply") from None
    return data, lines
