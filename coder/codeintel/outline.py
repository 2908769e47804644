"""Definitions of one source file, from tree-sitter tag queries (and a faster walk for clean Python).

This is the only place that turns a syntax tree into symbols; the index, the outline command, the edit
guard and the reviewer all go through `extract` / `outline_source`, so a symbol means the same thing
everywhere. Broken source never raises: tree-sitter recovers from syntax errors and we index what parses.
References are not extracted here: see `coder.codeintel.names` (names at build time, lines at query time).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

from coder.codeintel.languages import language, language_name
from coder.codeintel.queries import CLASS_LIKE, DEFINITIONS, KIND_ORDER

#: signatures longer than this are cut (they go into the repo map and tool outputs)
MAX_SIGNATURE = 160


@dataclass(slots=True)
class Symbol:
    """One definition. `name` is qualified where the language nests (`Model.save`); `short` is the bare name."""

    kind: str
    name: str
    line: int  # 1-based
    end_line: int  # 1-based, inclusive
    signature: str
    short: str = ""
    parent: str = ""  # qualified name of the enclosing definition, "" at top level
    column: int = 0  # 0-based byte column of the name

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class FileTags:
    """Everything the index keeps about one parsed file."""

    language: str
    symbols: list[Symbol] = field(default_factory=list)
    has_errors: bool = False
    #: byte offsets where a definition's name starts (those identifiers are not references to it)
    name_starts: set[int] = field(default_factory=set)


@cache
def _query(lang_name: str) -> Any | None:
    lang = language(lang_name)
    if lang is None or lang_name not in DEFINITIONS:
        return None
    # start-up time: tree-sitter loads only when this runs
    from tree_sitter import Query

    return Query(lang, DEFINITIONS[lang_name])


_PARSERS: dict[str, Any] = {}


def _parser(lang_name: str) -> Any:
    # One parser per language per process; the index parses in worker processes, never in threads.
    p = _PARSERS.get(lang_name)
    if p is None:
        # start-up time: tree-sitter loads only when this runs
        from tree_sitter import Parser

        p = _PARSERS[lang_name] = Parser(language(lang_name))
    return p


_WS = re.compile(r"\s+")
_GENERIC = re.compile(r"<.*$", re.DOTALL)
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")


def _text(source: bytes, node: Any) -> str:
    return source[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _signature(source: bytes, node: Any) -> str:
    """The header of a definition: its text up to the body, on one line."""
    body = node.child_by_field_name("body")
    end = node.end_byte
    if body is not None and body.start_byte > node.start_byte:
        end = body.start_byte
        before = body.prev_sibling  # stop before comments between the header and the body
        while before is not None and "comment" in before.type:
            before = before.prev_sibling
        if before is not None:
            end = before.end_byte
    raw = source[node.start_byte:end]
    if body is None:
        raw = raw.split(b"\n", 1)[0]
    text = raw.decode("utf-8", "replace")
    if not (text.isascii() and text.isprintable()) or "  " in text:  # most headers are one tidy line already
        text = _WS.sub(" ", text)
    text = text.strip().rstrip("{:").rstrip()
    if len(text) > MAX_SIGNATURE:
        text = text[: MAX_SIGNATURE - 3].rstrip() + "..."
    return text


def _split_name(raw: str) -> tuple[str, str]:
    """`A::b` / `A.b` / `Foo<T>` -> (scope, short name)."""
    if raw.isidentifier():  # the common case, without the regular expressions
        return "", raw
    raw = _GENERIC.sub("", raw.strip())
    parts = [p for p in re.split(r"::|\.", raw) if p]
    if not parts:
        return "", raw
    return ".".join(parts[:-1]), parts[-1]


def _go_receiver(text: str) -> str:
    """`(m *Model[T])` -> `Model`."""
    inner = text.strip().strip("()").strip()
    type_part = inner.split()[-1] if inner else ""
    names = _IDENT.findall(_GENERIC.sub("", type_part.split("[", 1)[0]))
    return names[-1] if names else ""


#: Python nodes whose children can hold a class or def statement (everything else is an expression or a leaf)
_PY_CONTAINERS = frozenset({
    "module", "block", "decorated_definition", "class_definition", "function_definition", "if_statement",
    "elif_clause", "else_clause", "for_statement", "while_statement", "try_statement", "except_clause",
    "except_group_clause", "finally_clause", "with_statement", "match_statement", "case_clause"})


def _python_definitions(root: Any) -> list[tuple[str, Any, Any, Any]]:
    """The Python definition query's matches, found by walking statements only (a fraction of the nodes).

    A query cursor visits every node of the tree, which costs a third of the parse; definitions in Python are
    statements, so walking the statement nesting finds the same ones for about a quarter of that. Only used
    for trees without errors: in an ERROR node anything can hang anywhere, and the query handles that."""
    containers, class_id, function_id = _python_kinds()
    found: list[tuple[str, Any, Any, Any]] = []
    for stmt in root.children:  # `X = ...` at module level: `(module (expression_statement (assignment)))`
        if stmt.type == "expression_statement":
            for child in stmt.children:
                if child.type == "assignment":
                    left = child.child_by_field_name("left")
                    if left is not None and left.type == "identifier":
                        found.append(("constant", child, left, None))
    stack = [root]
    while stack:
        for child in stack.pop().named_children:
            kind = child.kind_id  # an int: cheaper than the `type` string
            if kind not in containers:
                continue
            if kind == class_id or kind == function_id:
                name = child.child_by_field_name("name")
                if name is not None and name.type == "identifier":
                    found.append(("class" if kind == class_id else "function", child, name, None))
            stack.append(child)
    return found


@cache
def _python_kinds() -> tuple[frozenset[int], int, int]:
    lang = language("python")
    assert lang is not None  # only asked for a Python file, which was parsed with this grammar
    return (frozenset(lang.id_for_node_kind(kind, True) for kind in _PY_CONTAINERS),
            lang.id_for_node_kind("class_definition", True), lang.id_for_node_kind("function_definition", True))


def _query_definitions(query: Any, root: Any) -> list[tuple[str, Any, Any, Any]]:
    """(kind, definition node, name node, scope node or None) for every definition the query finds."""
    # start-up time: tree-sitter loads only when this runs
    from tree_sitter import QueryCursor

    caps = QueryCursor(query).captures(root)
    # def node id -> (rank, kind, node); a node captured under two kinds keeps the preferred one
    defs: dict[int, tuple[int, str, Any]] = {}
    for cap, nodes in caps.items():
        if not cap.startswith("def."):
            continue
        kind = cap[4:]
        rank = KIND_ORDER.get(kind, len(KIND_ORDER))
        for node in nodes:
            prev = defs.get(node.id)
            if prev is None or rank < prev[0]:
                defs[node.id] = (rank, kind, node)
    scopes = {n.parent.id: n for n in caps.get("scope", ()) if n.parent is not None}
    # pair each name with the nearest enclosing captured definition node
    found: dict[int, tuple[str, Any, Any, Any]] = {}
    for name_node in caps.get("name", ()):
        anc = name_node.parent
        for _ in range(6):
            if anc is None or anc.id in defs:
                break
            anc = anc.parent
        if anc is None or anc.id not in defs or anc.id in found:
            continue
        _rank, kind, def_node = defs[anc.id]
        found[anc.id] = (kind, def_node, name_node, scopes.get(anc.id))
    return list(found.values())


def extract(path: str, source: bytes, lang_name: str | None = None, *, tree: Any = None) -> FileTags | None:
    """Parse `source` (unless `tree` is given) and return its definitions; None for an unknown language."""
    lang_name = lang_name or language_name(path)
    if lang_name is None:
        return None
    query = _query(lang_name)
    if query is None:
        return None
    root = (tree if tree is not None else _parser(lang_name).parse(source)).root_node
    tags = FileTags(language=lang_name, has_errors=root.has_error)
    if lang_name == "python" and not tags.has_errors:
        items = _python_definitions(root)
    else:
        items = _query_definitions(query, root)

    spans = sorted((node.start_byte, -node.end_byte, name_node.start_byte, n)
                   for n, (_kind, node, name_node, _scope) in enumerate(items))
    stack: list[tuple[int, int, Symbol]] = []  # (start, end, symbol) of open enclosing definitions
    for start, neg_end, name_start, n in spans:
        kind, node, name_node, scope_node = items[n]
        end = -neg_end
        while stack and not (stack[-1][0] <= start and end <= stack[-1][1]):
            stack.pop()
        parent = stack[-1][2] if stack else None
        scope, short = _split_name(source[name_start:name_node.end_byte].decode("utf-8", "replace"))
        if scope_node is not None and lang_name == "go":
            scope = _go_receiver(_text(source, scope_node))
        if not short:
            continue
        prefix = ".".join(p for p in (parent.name if parent else "", scope) if p)
        class_like = parent is not None and (
            parent.kind in CLASS_LIKE or (parent.kind == "module" and lang_name == "ruby")
        )
        if kind == "function" and (class_like or scope):
            kind = "method"
        elif kind == "method" and parent is None and not scope:
            kind = "function"
        elif kind == "constant" and lang_name in ("python", "bash") and not short.isupper():
            kind = "variable"
        first, last = node.start_point, node.end_point
        sym = Symbol(kind, f"{prefix}.{short}" if prefix else short, first.row + 1,
                     max(first.row, last.row - (last.column == 0)) + 1, _signature(source, node), short,
                     parent.name if parent else "", name_node.start_point.column)
        tags.symbols.append(sym)
        tags.name_starts.add(name_start)
        stack.append((start, end, sym))
    tags.symbols.sort(key=lambda s: (s.line, s.column, s.name))
    return tags


def outline_source(path: str, source: bytes) -> list[Symbol]:
    """The definitions of one file in source order; [] for an unknown language. Never raises on bad source."""
    try:
        tags = extract(path, source)
    except (ValueError, UnicodeError, RecursionError):  # pragma: no cover - defensive: tree-sitter recovers
        return []
    return tags.symbols if tags else []
