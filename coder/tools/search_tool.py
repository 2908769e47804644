"""`code_search`: text search, definitions, references, outlines and the repo map, for the model.

Everything the model reads here is compact and line-numbered (`path:line`), so a hit can go straight into
the editor tool, and capped, so a careless query costs a few hundred tokens rather than a few thousand.
The index lives in the session's services (coder.codeintel.service) and is built lazily in the background:
text search never waits for it.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coder.base.errors import CoderError, ToolError
from coder.codeintel.languages import language_name
from coder.codeintel.service import service_for
from coder.codeintel.textsearch import search
from coder.tools.base import (
    CODE_NAVIGATOR,
    CallFacts,
    ClaudeCall,
    Tool,
    ToolContext,
    ToolResult,
    close_observers,
    generic_facts,
    one_line,
)

if TYPE_CHECKING:
    from coder.fs.beneath import WorkspaceFS

DEFAULT_RESULTS = 50
MAX_RESULTS = 200
#: references are found by parsing the files that mention the name: count this many, then say "N+"
MAX_COUNTED_REFERENCES = 2000
DEFAULT_MAP_TOKENS = 1024
MAX_MAP_TOKENS = 8192
QUERY_TYPES = ("text", "definition", "references", "outline", "map", "hover", "calls")


def _int(args: dict[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = args.get(key, default)
    if value is None:
        return default
    try:
        return max(low, min(high, int(value)))
    except (TypeError, ValueError):
        raise ToolError(f"{key} must be an integer, got {value!r}") from None


class CodeSearchTool(Tool):
    def __init__(self, contract: Any) -> None:
        self.contract = contract
        self._services: dict[str, Any] | None = None

    def facts(self, args: dict[str, Any]) -> CallFacts:
        """Named by its query; the `path` it searches is what path rules match."""
        facts = generic_facts(self.contract.name, args, self.contract.maskable)
        query = args.get("query")
        if not isinstance(query, str):
            return facts
        return dataclasses.replace(facts, title=f"{self.contract.name}: {one_line(query, 90)}")

    def claude_call(self, args: dict[str, Any], cwd: Path) -> ClaudeCall:
        """A text search is Claude Code's `Grep` (pattern, path, glob, -i); the symbol queries have no Claude Code
        tool and keep this tool's name and input."""
        if str(args.get("query_type") or "").lower() not in ("text", "grep"):
            return ClaudeCall(self.contract.name, dict(args))
        path = args.get("path")
        call: dict[str, Any] = {"pattern": args.get("query", ""),
                                "path": os.path.join(cwd, path) if isinstance(path, str) and path else str(cwd)}
        if args.get("glob"):
            call["glob"] = args["glob"]
        if args.get("case_insensitive"):
            call["-i"] = True
        return ClaudeCall("Grep", call)

    def from_claude(self, updated: dict[str, Any], args: dict[str, Any], cwd: Path) -> dict[str, Any]:
        if "pattern" not in updated:
            return dict(updated)
        out = {**args, "query": updated["pattern"]}
        for theirs, ours in (("glob", "glob"), ("-i", "case_insensitive")):
            if theirs in updated:
                out[ours] = updated[theirs]
        path = updated.get("path")
        if isinstance(path, str) and path:
            out["path"] = os.path.relpath(path, cwd) if os.path.isabs(path) else path
        return out

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        query_type = str(args.get("query_type") or "").strip().lower()
        aliases = {"def": "definition", "definitions": "definition", "refs": "references", "reference": "references",
                   "grep": "text", "repo_map": "map", "symbols": "outline"}
        query_type = aliases.get(query_type, query_type)
        if query_type not in QUERY_TYPES:
            raise ToolError(f"query_type must be one of {', '.join(QUERY_TYPES)}; got {args.get('query_type')!r}")
        self._services = ctx.services
        query = str(args.get("query") or "").strip()
        limit = _int(args, "max_results", DEFAULT_RESULTS, 1, MAX_RESULTS)
        try:
            if query_type == "text":
                return self._text(args, ctx, query, limit)
            if query_type == "outline":
                return self._outline(ctx, str(args.get("path") or query).strip())
            if query_type == "map":
                return self._map(args, ctx, query)
            if not query:
                raise ToolError(f"query_type={query_type} needs a symbol name in query")
            navigator = ctx.services.get(CODE_NAVIGATOR)  # a language server first, where one runs (issue 20)
            answered, why = (navigator.answer(ctx, self._service(ctx).ready()[0], query_type, query, args, limit)
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
    def _text(self, args: dict[str, Any], ctx: ToolContext, query: str, limit: int) -> ToolResult:
        if not query:
            raise ToolError("query_type=text needs a pattern in query")
        result = search(ctx.workspace, query, fixed=bool(args.get("fixed_strings")),
                        ignore_case=bool(args.get("case_insensitive")), glob=args.get("glob") or None,
                        path=args.get("path") or None, context=_int(args, "context", 0, 0, 10), max_matches=limit)
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

    def _map(self, args: dict[str, Any], ctx: ToolContext, query: str) -> ToolResult:
        index, note = self._service(ctx).ready()
        tokens = _int(args, "tokens", DEFAULT_MAP_TOKENS, 128, MAX_MAP_TOKENS)
        focus_files = [str(f) for f in (args.get("focus_files") or []) if str(f).strip()]
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
