"""`code_search`: text search, definitions, references, outlines and the repo map, for the model.

Everything the model reads here is compact and line-numbered (`path:line`), so a hit can go straight into
the editor tool, and capped, so a careless query costs a few hundred tokens rather than a few thousand.
The index lives in the session's services (coder.codeintel.service) and is built lazily in the background:
text search never waits for it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from coder.base.errors import CoderError, ToolError
from coder.base.schema import key
from coder.codeintel.languages import language_name
from coder.codeintel.service import service_for
from coder.codeintel.textsearch import search
from coder.tools.base import (
    CODE_NAVIGATOR,
    DETAIL_LIMIT,
    CallFacts,
    ClaudeCall,
    Tool,
    ToolContext,
    ToolContract,
    ToolResult,
    close_observers,
    one_line,
)
from coder.tools.params import Params, written

if TYPE_CHECKING:
    from coder.fs.beneath import WorkspaceFS

DEFAULT_RESULTS = 50
MAX_RESULTS = 200
#: references are found by parsing the files that mention the name: count this many, then say "N+"
MAX_COUNTED_REFERENCES = 2000
DEFAULT_MAP_TOKENS = 1024
MAX_MAP_TOKENS = 8192
QueryType = Literal["text", "definition", "references", "outline", "map", "hover", "calls"]


@dataclass(frozen=True)
class SearchParams(Params):
    """tools/code_search.json."""

    query_type: QueryType
    query: str | None = None
    path: str | None = None
    line: int | None = key(None, at_least=1)
    glob: str | None = None
    context: int = key(0, at_least=0, at_most=10)
    fixed_strings: bool = False
    case_insensitive: bool = False
    max_results: int = key(DEFAULT_RESULTS, at_least=1, at_most=MAX_RESULTS)
    tokens: int = key(DEFAULT_MAP_TOKENS, at_least=128, at_most=MAX_MAP_TOKENS)
    focus_files: list[str] | None = None

    @property
    def text(self) -> str:
        return (self.query or "").strip()


class CodeSearchTool(Tool[SearchParams]):
    def __init__(self, contract: ToolContract) -> None:
        self.contract = contract
        self._services: dict[str, Any] | None = None

    def facts(self, params: SearchParams) -> CallFacts:
        """Named by its query (or its kind); the `path` it searches is what path rules match."""
        shown = params.query if params.query is not None else params.query_type
        return CallFacts(f"{self.contract.name}: {one_line(shown, 90)}",
                         json.dumps(written(params), ensure_ascii=False, indent=1)[:DETAIL_LIMIT],
                         paths=(params.path,) if params.path else (), maskable=self.contract.maskable)

    def claude_call(self, params: SearchParams, cwd: Path) -> ClaudeCall:
        """A text search is Claude Code's `Grep` (pattern, path, glob, -i); the symbol queries have no Claude Code
        tool and keep this tool's name and input."""
        if params.query_type != "text":
            return ClaudeCall(self.contract.name, written(params))
        call: dict[str, Any] = {"pattern": params.query or "",
                                "path": os.path.join(cwd, params.path) if params.path else str(cwd)}
        if params.glob:
            call["glob"] = params.glob
        if params.case_insensitive:
            call["-i"] = True
        return ClaudeCall("Grep", call)

    def from_claude(self, updated: ClaudeCall, params: SearchParams, cwd: Path) -> dict[str, Any]:
        theirs = updated.input
        if "pattern" not in theirs:
            return dict(theirs)
        out = {**written(params), "query": theirs["pattern"]}
        for their_key, ours in (("glob", "glob"), ("-i", "case_insensitive")):
            if their_key in theirs:
                out[ours] = theirs[their_key]
        path = theirs.get("path")
        if isinstance(path, str) and path:
            out["path"] = os.path.relpath(path, cwd) if os.path.isabs(path) else path
        return out

    def run(self, params: SearchParams, ctx: ToolContext) -> ToolResult:
        query_type = params.query_type
        self._services = ctx.services
        query = params.text
        limit = params.max_results
        try:
            if query_type == "text":
                return self._text(params, ctx, query, limit)
            if query_type == "outline":
                return self._outline(ctx, (params.path or query).strip())
            if query_type == "map":
                return self._map(params, ctx, query)
            if not query:
                raise ToolError(f"query_type={query_type} needs a symbol name in query")
            navigator = ctx.services.get(CODE_NAVIGATOR)  # a language server first, where one runs (issue 20)
            answered, why = (navigator.answer(ctx, self._service(ctx).ready()[0], query_type, query, params.path,
                                              params.line, limit)
                             if navigator is not None else (None, ""))
            if answered is not None:
                return answered
            if query_type in ("definition", "hover"):
                return _with_note(self._definition(ctx, query, limit), why)
            return _with_note(self._references(ctx, query, limit), why)
        except ToolError:
            raise
        except CoderError as exc:
            raise ToolError(str(exc)) from exc

    # -- modes ----------------------------------------------------------------------------------------------
    def _text(self, params: SearchParams, ctx: ToolContext, query: str, limit: int) -> ToolResult:
        if not query:
            raise ToolError("query_type=text needs a pattern in query")
        result = search(ctx.workspace, query, fixed=params.fixed_strings, ignore_case=params.case_insensitive,
                        glob=params.glob or None, path=params.path or None, context=params.context,
                        max_matches=limit)
        if not result.matches:
            return ToolResult(f"no matches for {query!r}", data={"matches": 0})
        lines: list[str] = []
        current = None
        files = 0
        for m in result.matches:
            if m.path != current:
                current = m.path
                files += 1
                lines.append(m.path)
            lines.append(f"{m.line:>6}{'-' if m.is_context else ':'} {m.text}")
        head = f"{result.match_count} matching lines in {files} files"
        if result.truncated:
            head += f" (stopped at {limit}; narrow the pattern, path or glob to see the rest)"
        return ToolResult(head + "\n" + "\n".join(lines) + _notes(result.notes),
                          data={"matches": result.match_count, "truncated": result.truncated})

    def _service(self, ctx: ToolContext):
        return service_for(ctx.services, ctx.workspace)

    def _definition(self, ctx: ToolContext, query: str, limit: int) -> ToolResult:
        index, note = self._service(ctx).ready()
        exact = index.definitions(query, fuzzy=False, limit=limit + 1)
        if exact:
            hits, head = exact, f"{min(len(exact), limit)} definition{'s' if len(exact) != 1 else ''} of {query}"
        else:
            hits = index.fuzzy(query, limit=min(limit, 15))
            if not hits:
                return ToolResult(f"no definition of {query!r} and no similar names in the index"
                                  f" (try query_type=text){_notes([note])}", data={"count": 0})
            head = f"no definition named {query!r}; closest names:"
        lines = [head]
        for loc in hits[:limit]:
            lines.append(f"{loc.path}:{loc.line}-{loc.end_line} {loc.kind} {loc.name}")
            if loc.signature:
                lines.append(f"    {loc.signature}")
        if len(hits) > limit:
            lines.append(f"(more than {limit}; qualify the name, e.g. Class.method)")
        return ToolResult("\n".join(lines) + _notes([note]), data={"count": len(hits[:limit]), "exact": bool(exact)})

    def _references(self, ctx: ToolContext, query: str, limit: int) -> ToolResult:
        index, note = self._service(ctx).ready()
        hits = index.references(query, limit=MAX_COUNTED_REFERENCES)
        if not hits:
            return ToolResult(f"no references to {query!r} in the index (try query_type=text){_notes([note])}",
                              data={"count": 0})
        files = len({h.path for h in hits})
        more = "+" if len(hits) >= MAX_COUNTED_REFERENCES else ""
        lines = [f"{len(hits)}{more} references to {query.split('.')[-1]} in {files}{more} files"
                 + (f" (showing {limit}; pass path/glob with query_type=text to narrow)" if len(hits) > limit else "")]
        current = None
        cache: dict[str, list[str]] = {}
        for hit in hits[:limit]:
            if hit.path != current:
                current = hit.path
                lines.append(hit.path)
            text = line_text(index.fs, hit.path, hit.line, cache)
            lines.append(f"{hit.line:>6}: {text}")
        return ToolResult("\n".join(lines) + _notes([note]), data={"count": len(hits), "files": files})

    def _outline(self, ctx: ToolContext, path: str) -> ToolResult:
        if not path:
            raise ToolError("query_type=outline needs the file in path (or query)")
        index, note = self._service(ctx).ready(wait=0.5)
        full = (ctx.cwd / path) if not Path(path).is_absolute() else Path(path)
        rel = index.relpath(full if os.path.lexists(full) else path)  # (the outline resolves it beneath the root)
        symbols = index.outline(rel)
        if not symbols:
            why = "no definitions found" if language_name(rel) else "not a language the index parses (use text)"
            return ToolResult(f"{rel}: {why}{_notes([note])}", data={"count": 0})
        lines = [f"{rel}: {len(symbols)} definitions"]
        for loc in symbols[:MAX_RESULTS * 2]:
            depth = loc.name.count(".")
            lines.append(f"{loc.line:>6}-{loc.end_line:<6}{'  ' * depth}{loc.signature or loc.kind + ' ' + loc.name}")
        if len(symbols) > MAX_RESULTS * 2:
            lines.append(f"(first {MAX_RESULTS * 2} of {len(symbols)})")
        return ToolResult("\n".join(lines) + _notes([note]), data={"count": len(symbols)})

    def _map(self, params: SearchParams, ctx: ToolContext, query: str) -> ToolResult:
        index, note = self._service(ctx).ready()
        tokens = params.tokens
        focus_files = [f for f in (params.focus_files or []) if f.strip()]
        focus_names = [n for n in query.replace(",", " ").split() if n]
        text = index.repo_map(tokens, focus_files, focus_names, refresh_first=not index.building)
        if not text:
            return ToolResult("the repository has no indexed definitions" + _notes([note]), data={"empty": True})
        return ToolResult(text.rstrip("\n") + _notes([note]), data={"tokens": tokens})

    def close(self) -> None:
        service = (self._services or {}).get("code_index")
        if service is not None and hasattr(service, "close"):
            service.close()
        close_observers(self._services)


def _with_note(result: ToolResult, note: str) -> ToolResult:
    """The tree-sitter answer, saying why no language server gave it (when one was expected to)."""
    if not note:
        return result
    return ToolResult(result.output + "\n" + note, result.is_error, result.files_changed, result.data)


def _notes(notes: list[str]) -> str:
    text = "\n".join(n for n in notes if n)
    return "\n" + text if text else ""


def line_text(fs: WorkspaceFS, rel: str, line: int, cache: dict[str, list[str]]) -> str:
    """Line `line` of `rel`, read beneath the workspace (a file swapped for a link since it was indexed
    shows no text, never the link's target)."""
    lines = cache.get(rel)
    if lines is None:
        data = fs.read_if_file(rel)
        lines = data.decode("utf-8", "replace").splitlines() if data is not None else []
        cache[rel] = lines
    if 0 < line <= len(lines):
        text = lines[line - 1].strip()
        return text if len(text) <= 200 else text[:200] + "…"
    return ""
