"""The language servers as the session's edit observer and code navigator (the interfaces of
coder/tools/base.py): remember the touched files before an edit, and after it append the errors the edit
introduced to the tool's result; answer `code_search`'s position queries (coder/lsp/search.py).

An observer the session installs (`install`, called by coder/engine/builder.py), so the tools never import the
language servers: imports go lsp -> tools only. Kept apart from coder/edit on purpose: the edit machinery stays a
pure file operation (the batch runner and the reviewer use it too), and a tool result is where the model reads what
happened. With no server for a file's language, with `[lsp]` off or in an untrusted workspace, both calls cost one
dictionary lookup.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from coder.fs.beneath import WorkspaceFS
from coder.lsp import search
from coder.lsp.service import close_for, manager_for, rel_path
from coder.tools.base import CODE_NAVIGATOR, EDIT_OBSERVERS, CallFacts, ToolContext, ToolResult


def install(services: dict[str, Any]) -> None:
    """Make the language servers watch the edits of the session whose tool services these are, and answer its
    code navigation. Nothing starts here: a server starts on the first file of its language."""
    servers = LanguageServers(services)
    services[EDIT_OBSERVERS] = [*(services.get(EDIT_OBSERVERS) or ()), servers]
    services[CODE_NAVIGATOR] = servers


class LanguageServers:
    """One session's language servers behind the tools' interfaces (`EditObserver`, `CodeNavigator`). It holds
    the session's tool services, where the servers' manager is made on first use and found again at the end."""

    def __init__(self, services: dict[str, Any]) -> None:
        self.services = services

    def before_edit(self, ctx: ToolContext, facts: CallFacts) -> Snapshot | None:
        return before_edit(ctx, facts)

    def after_edit(self, ctx: ToolContext, result: ToolResult, token: Any) -> ToolResult:
        return after_edit(ctx, result, token)

    def answer(self, ctx: ToolContext, index: Any, query_type: str, query: str, path: str | None,
               line: int | None, limit: int) -> tuple[ToolResult | None, str]:
        return search.answer(ctx, index, query_type, query, path, line, limit)

    def close(self) -> None:
        close_for(self.services)


@dataclass
class Snapshot:
    """Texts of the files an edit may touch, as they were before it (None: the file did not exist)."""

    texts: dict[str, str | None] = field(default_factory=dict)
    manager: Any = None


def before_edit(ctx: ToolContext, facts: CallFacts) -> Snapshot | None:
    """Read the files this call may change, if a language server would check them. A call that only views a file
    starts the server of its language in the background, so the first edit does not pay the server's start."""
    try:
        manager = manager_for(ctx.services, ctx.config, ctx.workspace)
        if manager is None or not ctx.config.lsp.diagnostics:
            return None
    except Exception:  # noqa: BLE001 - a bad [lsp] section must not break editing; doctor reports it
        return None
    rels = [rel for rel in (rel_path(ctx, p) for p in facts.paths) if rel and manager.spec_for(rel)]
    if not rels:
        return None
    if not facts.writes:
        manager.warm(rels[0])
        return None
    snap = Snapshot(manager=manager)
    try:
        with WorkspaceFS(ctx.workspace) as fs:
            for rel in rels:
                data = fs.read_if_file(rel)
                snap.texts[rel] = data.decode("utf-8", "replace") if data is not None else None
    except OSError:
        return None
    return snap


def after_edit(ctx: ToolContext, result: ToolResult, snap: Snapshot | None) -> ToolResult:
    """Append the errors the edit introduced in the files it changed (only those read before it). Never raises:
    the edit is done whatever the server does."""
    if snap is None or result.is_error or not result.files_changed:
        return result
    try:
        return _after_edit(ctx, result, snap)
    except Exception as exc:  # noqa: BLE001 - a checker's failure must not turn a done edit into an error
        return ToolResult(result.output + f"\n\n(no diagnostics: {type(exc).__name__}: {str(exc)[:200]})",
                          result.is_error, result.files_changed, result.data)


def _after_edit(ctx: ToolContext, result: ToolResult, snap: Snapshot) -> ToolResult:
    from coder.lsp.client import LspError  # pygls and asyncio load only when an edit is checked
    from coder.lsp.diagnostics import SEVERITIES, introduced, render

    settings = ctx.config.lsp
    manager = snap.manager
    deadline = time.monotonic() + settings.wait
    found, notes, servers = [], [], set()
    started = time.monotonic()
    for rel in result.files_changed:
        if rel not in snap.texts or manager.spec_for(rel) is None:
            continue
        try:
            with WorkspaceFS(ctx.workspace) as fs:
                data = fs.read_if_file(rel)
        except OSError:
            continue
        if data is None:
            continue  # deleted
        before_text, after_text = snap.texts[rel] or "", data.decode("utf-8", "replace")
        try:
            before = manager.diagnostics(rel, before_text, deadline) if snap.texts[rel] is not None else []
            after = manager.diagnostics(rel, after_text, deadline)
        except LspError as exc:
            notes.append(f"(no diagnostics for {rel}: {exc}; the edit itself is done)")
            continue
        servers.add(manager.spec_for(rel).name)
        found.extend(introduced(before, after, SEVERITIES[settings.severity], settings.ignore))
    data = dict(result.data)
    data["diagnostics"] = [d.__dict__ for d in found]
    data["diagnostics_ms"] = round((time.monotonic() - started) * 1000)
    extra = []
    if found:
        extra.append(render(found, ", ".join(sorted(servers))))
    extra.extend(notes)
    output = result.output + ("\n\n" + "\n".join(extra) if extra else "")
    return ToolResult(output, result.is_error, result.files_changed, data)
