"""Definitions and references of one source file, from tree-sitter tag queries.

This is the only place that turns a syntax tree into symbols; the index, the outline command, the edit
guard and the reviewer all go through `extract` / `outline_source`, so a symbol means the same thing
everywhere. Broken source never raises: tree-sitter recovers from syntax errors and we index what parses.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

from coder.codeintel.languages import language, language_name
from coder.codeintel.queries import CLASS_LIKE, DEFINITIONS, KIND_ORDER, REFERENCES, STOP_REFS

#: signatures longer than this are cut (they go into the repo map and tool outputs)
MAX_SIGNATURE = 160


@dataclass
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
    #: referenced name -> sorted 1-based lines where it is used (definition names excluded)
    references: dict[str, list[int]] = field(default_factory=dict)
    has_errors: bool = False


@cache
def _query(lang_name: str, with_refs: bool) -> Any | None:
    """Definitions (and references) in ONE query: the query walk costs as much as a parse, so walk once."""
    lang = language(lang_name)
    if lang is None or lang_name not in DEFINITIONS:
        return None
    from tree_sitter import Query

    text = DEFINITIONS[lang_name] + ("\n" + REFERENCES[lang_name] if with_refs else "")
    return Query(lang, text)


_PARSERS: dict[str, Any] = {}


def _parser(lang_name: str) -> Any:
    # One parser per language per process; the index parses in worker processes, never in threads.
    p = _PARSERS.get(lang_name)
    if p is None:
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
        for child in node.children:  # stop before comments between the header and the body
            if child.start_byte >= body.start_byte:
                break
            if "comment" not in child.type:
                end = child.end_byte
    raw = source[node.start_byte:end]
    if body is None:
        raw = raw.split(b"\n", 1)[0]
    text = _WS.sub(" ", raw.decode("utf-8", "replace")).strip().rstrip("{:").rstrip()
    if len(text) > MAX_SIGNATURE:
        text = text[: MAX_SIGNATURE - 3].rstrip() + "..."
    return text


def _split_name(raw: str) -> tuple[str, str]:
    """`A::b` / `A.b` / `Foo<T>` -> (scope, short name)."""
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


def extract(path: str, source: bytes, lang_name: str | None = None, *, references: bool = True) -> FileTags | None:
    """Parse `source` and return its tags, or None when the language is unknown or its grammar missing."""
    lang_name = lang_name or language_name(path)
    if lang_name is None:
        return None
    query = _query(lang_name, references)
    if query is None:
        return None
    from tree_sitter import QueryCursor

    tree = _parser(lang_name).parse(source)
    root = tree.root_node
    tags = FileTags(language=lang_name, has_errors=root.has_error)
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
    found: dict[int, tuple[int, str, Any, Any, Any]] = {}
    for name_node in caps.get("name", ()):
        anc = name_node.parent
        for _ in range(6):
            if anc is None or anc.id in defs:
                break
            anc = anc.parent
        if anc is None or anc.id not in defs or anc.id in found:
            continue
        rank, kind, def_node = defs[anc.id]
        found[anc.id] = (rank, kind, def_node, name_node, scopes.get(anc.id))

    items = sorted(found.values(), key=lambda it: (it[2].start_byte, -it[2].end_byte, it[3].start_byte))
    stack: list[tuple[int, int, Symbol]] = []  # (start, end, symbol) of open enclosing definitions
    def_name_starts: set[int] = set()
    for _pattern, kind, node, name_node, scope_node in items:
        start, end = node.start_byte, node.end_byte
        while stack and not (stack[-1][0] <= start and end <= stack[-1][1]):
            stack.pop()
        parent = stack[-1][2] if stack else None
        scope, short = _split_name(_text(source, name_node))
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
        sym = Symbol(
            kind=kind,
            name=f"{prefix}.{short}" if prefix else short,
            line=node.start_point[0] + 1,
            end_line=max(node.start_point[0], node.end_point[0] - (node.end_point[1] == 0)) + 1,
            signature=_signature(source, node),
            short=short,
            parent=parent.name if parent else "",
            column=name_node.start_point[1],
        )
        tags.symbols.append(sym)
        def_name_starts.add(name_node.start_byte)
        stack.append((start, end, sym))
    tags.symbols.sort(key=lambda s: (s.line, s.column, s.name))

    if references:
        stop = STOP_REFS.get(lang_name, frozenset())
        # the hottest loop of a build (one pass per identifier use): a slice of `source` and `.row` are
        # cheaper than `node.text` and indexing the Point, and defaultdict saves a lookup per use
        raw: defaultdict[bytes, list[int]] = defaultdict(list)
        for node in caps.get("ref", ()):
            start = node.start_byte
            if start in def_name_starts:
                continue
            raw[source[start:node.end_byte]].append(node.start_point.row + 1)
        refs: dict[str, list[int]] = {}
        for key in sorted(raw):
            name = key.decode("utf-8", "replace")
            if name not in stop and len(name) <= 100:
                refs[name] = sorted(set(raw[key]))
        tags.references = refs
    return tags


def outline_source(path: str, source: bytes) -> list[Symbol]:
    """The definitions of one file in source order; [] for an unknown language. Never raises on bad source."""
    try:
        tags = extract(path, source, references=False)
    except (ValueError, UnicodeError, RecursionError):  # pragma: no cover - defensive: tree-sitter recovers
        return []
    return tags.symbols if tags else []
