"""Outline of a large file for `view`: classes and functions with their line spans.

`coder.codeintel.outline.outline_source` (the code index's tag queries) is the source. Should it be missing
or fail (a partial install, a grammar error), this module walks the tree-sitter tree itself for the
definition node types of the common grammars, and falls back to a regular-expression scan for files
without a grammar, so `view` of a large file always has an outline."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from coder.codeintel.languages import parser_for


@dataclass
class OutlineItem:
    kind: str
    name: str
    line: int  # 1-based
    end_line: int
    depth: int = 0


DEFINITIONS: dict[str, str] = {
    "class_definition": "class", "function_definition": "function", "decorated_definition": "",
    "class_declaration": "class", "function_declaration": "function", "method_definition": "method",
    "generator_function_declaration": "function", "interface_declaration": "interface",
    "type_alias_declaration": "type", "enum_declaration": "enum", "method_declaration": "method",
    "type_spec": "type", "function_item": "function", "impl_item": "impl", "struct_item": "struct",
    "enum_item": "enum", "trait_item": "trait", "mod_item": "module", "class": "class", "method": "method",
    "module": "module", "lexical_declaration": "const",
}
REGEX = re.compile(r"^(\s*)(?:export\s+)?(?:async\s+)?(def|class|function|func|fn|struct|interface|type)\s+"
                   r"([A-Za-z_$][\w$]*)")


def outline(path: str | Path, source: str) -> list[OutlineItem]:
    """Definitions of `source`, in order."""
    try:
        from coder.codeintel.outline import outline_source  # type: ignore[import-not-found]

        symbols = outline_source(str(path), source.encode("utf-8", "surrogatepass"))
        return [OutlineItem(s.kind, s.name, s.line, s.end_line, _depth(getattr(s, "parent", "")))
                for s in symbols]
    except Exception:  # noqa: BLE001 - missing module or a failure there must not break `view`
        pass
    items = _tree_sitter_outline(path, source)
    return items if items is not None else _regex_outline(source)


def _depth(parent: str) -> int:
    return parent.count(".") + 1 if parent else 0


def _tree_sitter_outline(path: str | Path, source: str) -> list[OutlineItem] | None:
    parser = parser_for(path)
    if parser is None:
        return None
    data = source.encode("utf-8", "surrogatepass")
    root = parser.parse(data).root_node
    items: list[OutlineItem] = []

    def visit(node: object, depth: int) -> None:
        for child in node.children:  # type: ignore[attr-defined]
            if not child.is_named:  # keyword tokens such as Python's "class"
                continue
            kind = DEFINITIONS.get(child.type)
            if kind is None:
                if child.type in ("block", "class_body", "declaration_list", "body_statement", "statement_block",
                                  "export_statement", "type_declaration"):
                    visit(child, depth)
                continue
            if kind == "":  # decorated_definition: the definition inside
                visit(child, depth)
                continue
            name_node = child.child_by_field_name("name")
            if kind == "const":
                if depth:
                    continue
                declarator = next((c for c in child.children if c.type == "variable_declarator"), None)
                value = declarator.child_by_field_name("value") if declarator else None
                if declarator is None or value is None or value.type not in ("arrow_function", "function",
                                                                             "function_expression"):
                    continue
                name_node, kind = declarator.child_by_field_name("name"), "function"
            name = data[name_node.start_byte:name_node.end_byte].decode("utf-8", "replace") if name_node else "?"
            items.append(OutlineItem(kind, name, child.start_point[0] + 1, child.end_point[0] + 1, depth))
            if depth < 2:
                visit(child, depth + 1)

    visit(root, 0)
    return items


def _regex_outline(source: str) -> list[OutlineItem]:
    items = []
    for n, line in enumerate(source.split("\n"), 1):
        match = REGEX.match(line)
        if match:
            depth = len(match.group(1).expandtabs(4)) // 4
            items.append(OutlineItem(match.group(2), match.group(3), n, n, depth))
    return items
