"""`code_search` through a language server (issue 20): definition, references, hover and calls.

`answer` returns the server's result as the model reads it, or None and a note saying why the tree-sitter index
answers instead (no server for the file's language, the server still starting, too slow, or no anchor for the
name). With no server configured at all the note is empty and `code_search` reads exactly as before.
"""

from __future__ import annotations

from typing import Any

from coder.lsp.service import manager_for, rel_path
from coder.tools.base import ToolContext, ToolResult
from coder.tools.search_tool import line_text

SERVER_TYPES = ("definition", "references", "hover", "calls")


def answer(ctx: ToolContext, index: Any, query_type: str, query: str, path: str | None, line: int | None,
           limit: int) -> tuple[ToolResult | None, str]:
    from coder.lsp.client import LspError  # asyncio and the client load only when a server may answer
    from coder.lsp.navigate import anchors, deadline_in

    if query_type not in SERVER_TYPES:
        return None, ""
    #: hover and calls have no tree-sitter twin: say what answered instead
    instead = {"hover": "(no language server runs for it: the tree-sitter index's definition instead)",
               "calls": "(no language server runs for it: name-based references from the tree-sitter index "
                        "instead)"}.get(query_type, "")
    try:
        manager = manager_for(ctx.services, ctx.config, ctx.workspace)
    except Exception as exc:  # noqa: BLE001 - a bad [lsp] section: search still works
        return None, f"(language servers off: {exc})"
    if manager is None:
        return None, instead
    path, line = (rel_path(ctx, path), line) if path and line is not None else (None, None)
    if query_type == "definition" and not line:
        return None, ""  # by name alone the index's definitions are the answer; a server adds a position's view
    try:
        found = anchors(index.fs, index, query, path, line)
        if not found:
            return None, f"(tree-sitter index answered: no definition of {query!r} to ask a language server about)"
        if manager.spec_for(found[0].rel) is None:
            return None, instead
        deadline = deadline_in(ctx.config.lsp.navigation_wait)
        handler = {"definition": _definition, "references": _references, "hover": _hover, "calls": _calls}
        return handler[query_type](manager, index, found, deadline, query, limit), ""
    except LspError as exc:
        return None, f"(tree-sitter index answered, by name: {exc})"


def _by(server: str) -> str:
    return f"(answered by {server})"


def _definition(manager: Any, index: Any, found: list, deadline: float, query: str, limit: int) -> ToolResult:
    # start-up time: coder.lsp.navigate brings asyncio
    from coder.lsp.navigate import definition

    server, hits = definition(manager, index.fs, found[0], deadline)
    if not hits:
        return ToolResult(f"{server} found no definition for {query!r} at {found[0].label} {_by(server)}",
                          data={"count": 0, "server": server})
    lines = [f"{len(hits)} definition{'s' if len(hits) != 1 else ''} of {query} (from {found[0].label})"]
    cache: dict[str, list[str]] = {}
    for hit in hits[:limit]:
        lines.append(f"{hit.path}:{hit.line}" + (f"  {_line(index, hit, cache)}" if hit.inside else ""))
    return ToolResult("\n".join(lines) + "\n" + _by(server), data={"count": len(hits), "server": server})


def _references(manager: Any, index: Any, found: list, deadline: float, query: str, limit: int) -> ToolResult:
    # start-up time: coder.lsp.navigate brings asyncio
    from coder.lsp.navigate import references

    server, hits, seen = "", [], set()
    for anchor in found:
        server, more = references(manager, index.fs, anchor, deadline)
        for hit in more:
            if (hit.path, hit.line) not in seen:
                seen.add((hit.path, hit.line))
                hits.append(hit)
    inside = sorted((h for h in hits if h.inside), key=lambda h: (h.path, h.line))
    outside = len(hits) - len(inside)
    if not inside:
        return ToolResult(f"no references to {query!r} in the workspace {_by(server)}",
                          data={"count": 0, "server": server})
    files = len({h.path for h in inside})
    head = f"{len(inside)} references to {query.split('.')[-1]} in {files} files"
    if len(found) > 1:
        head += f" (of {len(found)} definitions named so)"
    if len(inside) > limit:
        head += f" (showing {limit})"
    lines, current, cache = [head], None, {}
    for hit in inside[:limit]:
        if hit.path != current:
            current = hit.path
            lines.append(hit.path)
        lines.append(f"{hit.line:>6}: {_line(index, hit, cache)}")
    tail = f" and {outside} outside the workspace" if outside else ""
    return ToolResult("\n".join(lines) + f"\n(answered by {server}{tail})",
                      data={"count": len(inside), "files": files, "server": server})


def _hover(manager: Any, index: Any, found: list, deadline: float, query: str, limit: int) -> ToolResult:
    # start-up time: coder.lsp.navigate brings asyncio
    from coder.lsp.navigate import hover

    server, text = hover(manager, index.fs, found[0], deadline)
    if not text:
        return ToolResult(f"{server} has nothing to show for {query!r} at {found[0].label}",
                          data={"server": server, "empty": True})
    return ToolResult(f"{found[0].label}:\n{text}\n{_by(server)}", data={"server": server})


def _calls(manager: Any, index: Any, found: list, deadline: float, query: str, limit: int) -> ToolResult:
    # start-up time: coder.lsp.navigate brings asyncio
    from coder.lsp.navigate import calls

    server, callers, callees = calls(manager, index.fs, found[0], deadline)
    lines = [f"calls of {query} ({found[0].label})", f"called by {len(callers)}:"]
    lines += [f"  {h.path}:{h.line} {h.name}" for h in callers[:limit]]
    lines.append(f"calls {len(callees)}:")
    lines += [f"  {h.path}:{h.line} {h.name}" for h in callees[:limit]]
    return ToolResult("\n".join(lines) + "\n" + _by(server),
                      data={"callers": len(callers), "callees": len(callees), "server": server})


def _line(index: Any, hit: Any, cache: dict[str, list[str]]) -> str:
    return line_text(index.fs, hit.path, hit.line, cache)
