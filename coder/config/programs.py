"""The sections that name programs coder starts for you: `[mcp]` (MCP servers), `[hooks]` (your commands on session
events) and `[lsp]` (language servers). Each entry is a command line and what it may take; a repository's rights
over them are the narrowest of any section: its MCP servers start only when trusted and approved by name, its hooks
never on the host, and of the language servers it may only turn them off. `Config` (coder/config/sections.py)
holds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from coder.base.settings import Repo, SettingError, not_blank, setting

Severity = Literal["error", "warning", "information", "hint"]
#: diagnostic codes left out by default: whether a third-party module resolves depends on the host's environment,
#: not on the edit; and the "type is unknown" family (errors only under a repository's strict mode) repeats the
#: real error one line further, or flags code the project accepted (benchmarks/lsp.py: all 4 false alarms on 40
#: real edits)
LSP_IGNORE = ("reportMissingModuleSource", "reportMissingImports", "reportMissingTypeStubs",
              "reportUnknownMemberType", "reportUnknownVariableType", "reportUnknownArgumentType",
              "reportUnknownParameterType", "reportUnknownLambdaType")


@dataclass
class McpServer:
    """`[mcp.servers.NAME]` (and each entry of a repository's `.mcp.json`): a stdio server (`command`) or a
    streamable HTTP one (`url`). Servers from a repository start only when trusted and approved by name."""

    command: str | None = setting(None, doc="The program of a stdio server.", repo=Repo.TRUSTED, check=not_blank)
    args: list[str] = setting(factory=list, doc="Its arguments.", repo=Repo.TRUSTED)
    env: dict[str, str] = setting(factory=dict, doc="Variables added to its (minimal) environment.",
                                  repo=Repo.TRUSTED)
    cwd: str | None = setting(None, doc="The folder it starts in.", repo=Repo.TRUSTED)
    url: str | None = setting(None, doc="The address of a streamable HTTP server.", repo=Repo.TRUSTED,
                              check=not_blank)
    headers: dict[str, str] = setting(factory=dict, doc="HTTP headers sent to it.", repo=Repo.TRUSTED)
    startup_timeout: float = setting(20.0, doc="Seconds it may take to start.", repo=Repo.TRUSTED, above=0)
    call_timeout: float = setting(120.0, doc="Seconds one call may take.", repo=Repo.TRUSTED, above=0)
    type: str | None = setting(None, doc="`.mcp.json`'s transport name (ignored: `command` or `url` says it).",
                               repo=Repo.TRUSTED)

    def check(self) -> None:
        if (self.command is None) == (self.url is None):
            raise SettingError("command", "needs exactly one of `command` (stdio) or `url` (streamable HTTP)")


@dataclass
class McpSettings:
    """`[mcp]`: Model Context Protocol servers, whose tools reach the model as `mcp__SERVER__TOOL`."""

    servers: dict[str, McpServer] = setting(factory=dict, doc="One table per server: [mcp.servers.NAME].",
                                            repo=Repo.TRUSTED)


@dataclass
class HookEntry:
    """`[[hooks.EVENT]]`: a command run on the event, with the event as JSON on stdin. A before-hook that exits 2
    blocks the action."""

    command: str = setting(doc="The command (bash).", repo=Repo.ADD_TRUSTED, check=not_blank)
    match: str = setting("*", doc="Tool-name pattern (fnmatch), for the tool events.", repo=Repo.ADD_TRUSTED)
    timeout: float = setting(30.0, doc="Seconds it may run.", repo=Repo.ADD_TRUSTED, above=0)
    sandbox: bool = setting(True, doc="Run it in the sandbox; false runs it on the host (your own config only: "
                            "a repository's hook that asks for it is dropped).", repo=Repo.SAFE, safe=True)


def _hooks(doc: str) -> Any:
    return setting(factory=list, doc=doc, repo=Repo.ADD_TRUSTED)


@dataclass
class HooksSettings:
    """`[[hooks.EVENT]]`: your commands on session events. A repository's hooks (when trusted) run after yours,
    never instead of them."""

    before_tool: list[HookEntry] = _hooks("Before a tool call; exit 2 blocks it.")
    after_tool: list[HookEntry] = _hooks("After a tool call.")
    before_commit: list[HookEntry] = _hooks("Before coder commits; exit 2 blocks the commit.")
    turn_end: list[HookEntry] = _hooks("When a turn ends.")
    session_end: list[HookEntry] = _hooks("When the session ends.")
    notification: list[HookEntry] = _hooks("When the app or the REPL notifies you ([notifications]).")


@dataclass
class LspServer:
    """`[lsp.servers.NAME]`: a language server of your own, or changes to a default one (pyright, ...)."""

    command: list[str] | None = setting(None, doc="The program and its arguments (a new server needs it).",
                                        repo=Repo.NEVER)
    languages: list[str] | None = setting(None, doc="LSP language ids it serves (a new server needs them).",
                                          repo=Repo.NEVER)
    enabled: bool = setting(True, doc="Use this server.", repo=Repo.NEVER)
    initialization_options: dict[str, Any] | None = setting(None, doc="Sent with `initialize`.", repo=Repo.NEVER)
    settings: dict[str, Any] | None = setting(None, doc="Answers to the server's `workspace/configuration`.",
                                              repo=Repo.NEVER)

    def check(self) -> None:
        for key in ("command", "languages"):
            value = getattr(self, key)
            if value is not None and not (value and all(value)):
                raise SettingError(key, "needs at least one non-empty string")


@dataclass
class LspSettings:
    """`[lsp]`: language servers that check each edit and answer code navigation. They run only in a trusted
    workspace; which programs run is yours to say: a repository may only turn them off."""

    enabled: bool = setting(True, doc="Use language servers.", repo=Repo.SAFE, safe=False)
    diagnostics: bool = setting(True, doc="Report the errors an edit introduces.", repo=Repo.SAFE, safe=False)
    wait: float = setting(5.0, doc="Seconds an edit waits for its diagnostics.", repo=Repo.NEVER, above=0)
    navigation_wait: float = setting(10.0, doc="Seconds a navigation query waits.", repo=Repo.NEVER, above=0)
    start_timeout: float = setting(30.0, doc="Seconds a server may take to start.", repo=Repo.NEVER, above=0)
    severity: Severity = setting("error", doc="The least severe diagnostic reported.", repo=Repo.NEVER)
    ignore: list[str] = setting(factory=lambda: list(LSP_IGNORE), doc="Diagnostic codes never reported.",
                                repo=Repo.NEVER)
    servers: dict[str, LspServer] = setting(factory=dict, doc="One table per server: [lsp.servers.NAME].",
                                            repo=Repo.NEVER)
