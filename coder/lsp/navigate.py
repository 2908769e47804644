"""Definition, references, hover and call hierarchy through a language server, for `code_search`.

The model names a symbol, a server wants a position. The position is the one the model gives (`path` + `line`:
the name on that line, e.g. a call site, whose definition the server follows through imports), or else where
the tree-sitter index says the name is defined (each definition of it, up to `MAX_ANCHORS`: `save` may be a
method of five classes). Whatever the server cannot answer in time, or when no server runs, the caller answers
from the tree-sitter index and says so.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from coder.lsp.client import LspError

MAX_ANCHORS = 5
MAX_HOVER_CHARS = 1500


@dataclass(frozen=True)
class Anchor:
    rel: str
    line: int  # 1-based
    character: int  # 0-based UTF-16 offset of the name
    label: str


@dataclass(frozen=True)
class Hit:
    path: str  # workspace-relative, or absolute for a file outside the workspace
    line: int  # 1-based
    name: str = ""
    inside: bool = True


def name_column(text: str, name: str) -> int | None:
    """UTF-16 offset of the first whole-word `name` in one line (after `def`/`class`/`function` when present)."""
    best = None
    for match in re.finditer(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text):
        best = match.start() if best is None else best
        if re.search(r"\b(def|class|function|func|fn|struct|type|interface|enum|const|let|var)\s+$",
                     text[:match.start()]):
            best = match.start()
            break
    if best is None:
        return None
    return len(text[:best].encode("utf-16-le")) // 2


def anchors(fs: Any, index: Any, query: str, path: str | None, line: int | None) -> list[Anchor]:
    """Where to ask the server about `query`: the given line, or the index's definitions of it."""
    name = query.split(".")[-1]
    if path and line:
        text = _line(fs, path, line)
        col = name_column(text, name) if text is not None else None
        if col is None:
            raise LspError(f"{name!r} is not on {path}:{line}")
        return [Anchor(path, line, col, f"{path}:{line}")]
    out: list[Anchor] = []
    for loc in index.definitions(query, fuzzy=False, limit=MAX_ANCHORS):
        text = _line(fs, loc.path, loc.line)
        col = name_column(text, name) if text is not None else None
        if col is not None:
            out.append(Anchor(loc.path, loc.line, col, f"{loc.kind} {loc.name} at {loc.path}:{loc.line}"))
    return out


def _line(fs: Any, rel: str, line: int) -> str | None:
    data = fs.read_if_file(rel)
    if data is None:
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else None


def _text(fs: Any, rel: str) -> str:
    data = fs.read_if_file(rel)
    if data is None:
        raise LspError(f"{rel} is not a readable file")
    return data.decode("utf-8", "replace")


def to_hit(workspace: Path, uri: str, line0: int, name: str = "") -> Hit:
    path = Path(unquote(urlparse(uri).path))
    try:
        return Hit(str(path.relative_to(workspace)), line0 + 1, name)
    except ValueError:
        return Hit(str(path), line0 + 1, name, inside=False)


def _locations(workspace: Path, result: Any) -> list[Hit]:
    items = list(result) if isinstance(result, (list, tuple)) else [result] if result is not None else []
    hits = []
    for item in items:
        if hasattr(item, "target_uri"):  # LocationLink
            hits.append(to_hit(workspace, item.target_uri, item.target_selection_range.start.line))
        elif hasattr(item, "uri"):
            hits.append(to_hit(workspace, item.uri, item.range.start.line))
    return hits


def _position(uri: str, anchor: Anchor) -> dict[str, Any]:
    # start-up time: lsprotocol loads only when this runs
    from lsprotocol import types as t

    return {"text_document": t.TextDocumentIdentifier(uri), "position": t.Position(anchor.line - 1, anchor.character)}


def definition(manager: Any, fs: Any, anchor: Anchor, deadline: float) -> tuple[str, list[Hit]]:
    # start-up time: lsprotocol loads only when this runs
    from lsprotocol import types as t

    server, result = manager.request(anchor.rel, _text(fs, anchor.rel), t.TEXT_DOCUMENT_DEFINITION,
                                     lambda uri: t.DefinitionParams(**_position(uri, anchor)), deadline)
    return server, _locations(manager.workspace, result)


def references(manager: Any, fs: Any, anchor: Anchor, deadline: float) -> tuple[str, list[Hit]]:
    """The server's references. A server's first answer may miss files it has not parsed yet (pyright answers
    from what it has bound and binds the rest meanwhile), so the first query of a session is asked again until
    two answers agree (at most three)."""
    # start-up time: lsprotocol loads only when this runs
    from lsprotocol import types as t

    text = _text(fs, anchor.rel)
    tries = 3 if manager.first_use("references") else 1
    server, hits = "", []
    for _ in range(tries):
        server, result = manager.request(
            anchor.rel, text, t.TEXT_DOCUMENT_REFERENCES,
            lambda uri: t.ReferenceParams(context=t.ReferenceContext(include_declaration=False),
                                          **_position(uri, anchor)), deadline)
        found = _locations(manager.workspace, result)
        if hits and set(found) == set(hits):
            break
        hits = found
    return server, hits


def readable(workspace: Path, uri: str) -> bool:
    """Whether the sandboxed model could read the file at `uri` anyway: its real path lies in the workspace or in
    the interpreter's own library (stdlib, site-packages, a server's bundled stubs). A link in the workspace to
    a file elsewhere on the host is not: the server (on the host) would read it for the model."""
    real = Path(unquote(urlparse(uri).path)).resolve()
    roots = {workspace.resolve(), *(Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix))}
    return any(real == root or root in real.parents for root in roots)


def hover(manager: Any, fs: Any, anchor: Anchor, deadline: float) -> tuple[str, str]:
    """The server's hover text, withheld when the symbol is defined in a file the sandbox cannot read (its
    docstring and constants would reach the model through the server)."""
    # start-up time: lsprotocol loads only when this runs
    from lsprotocol import types as t

    text = _text(fs, anchor.rel)
    server, where = manager.request(anchor.rel, text, t.TEXT_DOCUMENT_DEFINITION,
                                    lambda uri: t.DefinitionParams(**_position(uri, anchor)), deadline)
    items = list(where) if isinstance(where, (list, tuple)) else [where] if where is not None else []
    for item in items:
        uri = getattr(item, "target_uri", None) or getattr(item, "uri", "")
        if uri and not readable(manager.workspace, uri):
            return server, (f"(hover withheld: the symbol is defined in {unquote(urlparse(uri).path)}, outside the "
                            "workspace, which the sandbox cannot read)")
    server, result = manager.request(anchor.rel, text, t.TEXT_DOCUMENT_HOVER,
                                     lambda uri: t.HoverParams(**_position(uri, anchor)), deadline)
    if result is None:
        return server, ""
    contents = result.contents
    parts = contents if isinstance(contents, list) else [contents]
    text = "\n".join(p if isinstance(p, str) else getattr(p, "value", str(p)) for p in parts).strip()
    return server, text if len(text) <= MAX_HOVER_CHARS else text[:MAX_HOVER_CHARS] + "…"


def calls(manager: Any, fs: Any, anchor: Anchor, deadline: float) -> tuple[str, list[Hit], list[Hit]]:
    """(server, callers, callees) of the function at `anchor`."""
    # start-up time: lsprotocol loads only when this runs
    from lsprotocol import types as t

    server, items = manager.request(anchor.rel, _text(fs, anchor.rel), t.TEXT_DOCUMENT_PREPARE_CALL_HIERARCHY,
                                    lambda uri: t.CallHierarchyPrepareParams(**_position(uri, anchor)), deadline)
    if not items:
        return server, [], []
    item = items[0]
    text = _text(fs, anchor.rel)
    _, incoming = manager.request(anchor.rel, text, t.CALL_HIERARCHY_INCOMING_CALLS,
                                  lambda uri: t.CallHierarchyIncomingCallsParams(item), deadline)
    _, outgoing = manager.request(anchor.rel, text, t.CALL_HIERARCHY_OUTGOING_CALLS,
                                  lambda uri: t.CallHierarchyOutgoingCallsParams(item), deadline)
    ws = manager.workspace
    callers = [to_hit(ws, c.from_.uri, (c.from_ranges[0] if c.from_ranges else c.from_.selection_range).start.line,
                      c.from_.name) for c in incoming or []]
    callees = [to_hit(ws, c.to.uri, c.to.selection_range.start.line, c.to.name) for c in outgoing or []]
    return server, callers, callees


def deadline_in(seconds: float) -> float:
    return time.monotonic() + seconds
