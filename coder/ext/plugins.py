"""Plugins: a folder bundling commands, agents, skills, hooks and MCP servers under Claude Code's plugin manifest
(https://docs.claude.com/en/docs/claude-code/plugins-reference), installed by the user with `coder plugin install`.

    my-plugin/
      .claude-plugin/plugin.json   {"name": "my-plugin", "version": "1.0.0", "description": "...",
                                    "commands": "./extra/", "hooks": "./hooks/hooks.json", "mcpServers": {...}}
      commands/*.md   agents/*.md   skills/NAME/SKILL.md   hooks/hooks.json   .mcp.json

`name` (kebab-case) is required; the component fields add to the default folders (a path, starting `./`, inside the
plugin, or a list of them; `hooks` and `mcpServers` may be inline objects). `${CLAUDE_PLUGIN_ROOT}` in a hook's
command and an MCP server's entry is the installed plugin's folder.

A plugin is installed into coder's data folder (`$XDG_DATA_HOME/coder/plugins/NAME`), recorded in
`~/.config/coder/plugins.json`, and enabled for every project (`user` scope) or for one (`--project`: the
workspace it was installed from). `enabledPlugins` of `~/.claude/settings.json` or of a trusted repository's
`.claude/settings.json` turns an installed plugin on or off in that project ({"name@marketplace": true}); a
repository can only choose among what the user installed. A plugin is the user's code, chosen by the user: its
hooks and servers run as the user's own do (coder/ext/claude_hooks.py).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from coder.base.atomic import write_json_atomic
from coder.base.errors import ConfigError
from coder.base.keylines import json_lines
from coder.base.paths import config_dir, data_dir
from coder.base.schema import Keys, Source, convert
from coder.config.programs import McpServer
from coder.ext.claude_hooks import ClaudeHook, parse_claude_hooks
from coder.ext.manifests import PLUGIN_NAME, ClaudeHooks, PluginManifest, read_json

MANIFEST = ".claude-plugin/plugin.json"
PLUGIN_ROOT_VAR = "${CLAUDE_PLUGIN_ROOT}"


def plugins_dir() -> Path:
    return data_dir() / "plugins"


def registry_path() -> Path:
    return config_dir() / "plugins.json"


@dataclass
class Plugin:
    name: str
    root: Path
    manifest: PluginManifest
    #: plugin.json with the line of each key, for the messages about its inline `hooks` and `mcpServers`
    source: Source = field(default_factory=lambda: Source(MANIFEST), compare=False, repr=False)

    @property
    def version(self) -> str:
        return self.manifest.version

    @property
    def description(self) -> str:
        return self.manifest.description

    def folders(self, component: str) -> list[Path]:
        """The default folder of `component` (commands, agents, skills) and the manifest's extra paths (folders,
        or single `.md` files for commands and agents)."""
        return [p for p in [self.root / component, *self._paths(component)]
                if p.is_dir() or (p.is_file() and p.suffix == ".md" and component != "skills")]

    def hooks(self, notes: list[str]) -> list[ClaudeHook]:
        """The plugin's hooks: `hooks/hooks.json`, then the manifest's `hooks` (a path or an inline object), each
        `{"hooks": {EVENT: [...]}}` or the events themselves."""
        out: list[ClaudeHook] = []
        for data, source, keys in self._documents("hooks", self.root / "hooks" / "hooks.json"):
            if isinstance(data, dict) and "hooks" in data:
                data, keys = data["hooks"], (*keys, "hooks")
            hooks = convert(data, ClaudeHooks, source, keys, build=True)
            out += parse_claude_hooks(hooks, f"plugin {self.name} ({source.name})", plugin_root=str(self.root),
                                      notes=notes)
        return out

    def mcp_servers(self) -> dict[str, McpServer]:
        """The plugin's MCP servers (`.mcp.json`, then the manifest's `mcpServers`), named `PLUGIN-SERVER`, with
        `${CLAUDE_PLUGIN_ROOT}` replaced by the plugin's folder, each checked as `[mcp.servers.NAME]` is."""
        servers: dict[str, McpServer] = {}
        for data, source, keys in self._documents("mcpServers", self.root / ".mcp.json"):
            if isinstance(data, dict) and "mcpServers" in data:
                data, keys = data["mcpServers"], (*keys, "mcpServers")
            entries = convert(_with_root(data, str(self.root)), dict[str, McpServer], source, keys, build=True)
            servers.update({f"{self.name}-{name}": entry for name, entry in entries.items()})
        return servers

    def _paths(self, component: str) -> list[Path]:
        return [inside(self.root, v, f"{self.name}: {component}") for v in self.manifest.paths(component)]

    def _documents(self, component: str, default: Path) -> list[tuple[Any, Source, Keys]]:
        """(data, where it is, its keys there) of each document of `component`: the default file, the files the
        manifest names, or the manifest's inline object."""
        files = [default] if default.is_file() else []
        inline = self.manifest.inline(component)
        out: list[tuple[Any, Source, Keys]] = []
        if inline is not None:
            out.append((inline, self.source, (component,)))
        else:
            files += [p for p in self._paths(component) if p.is_file() and p != default]
        for path in files:
            rel = path.relative_to(self.root).as_posix()
            try:
                text = path.read_text(encoding="utf-8")
                data = json.loads(text)
            except (OSError, ValueError, RecursionError) as exc:
                raise ConfigError(f"plugin {self.name}: {rel} is not readable JSON ({exc}).") from exc
            out.append((data, Source(str(path), json_lines(text)), ()))
        return out


def _with_root(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return value.replace(PLUGIN_ROOT_VAR, root)
    if isinstance(value, list):
        return [_with_root(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _with_root(v, root) for k, v in value.items()}
    return value


def inside(root: Path, rel: str, where: str) -> Path:
    """`rel` (a manifest path: `./x`) resolved inside `root`; a path that leaves it is a ConfigError."""
    if not rel.startswith("./"):
        raise ConfigError(f"plugin {where}: {rel!r} must be a relative path starting with ./")
    path = (root / rel).resolve()
    if path != root.resolve() and root.resolve() not in path.parents:
        raise ConfigError(f"plugin {where}: {rel!r} leaves the plugin's folder")
    return path


def read_plugin(root: Path) -> Plugin:
    """The plugin in `root` (its manifest checked: PluginManifest), or a ConfigError saying what is wrong."""
    path = root / MANIFEST
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{root}: not a plugin (no {MANIFEST})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read ({exc})") from exc
    manifest = read_json(PluginManifest, path, text=text)
    plugin = Plugin(manifest.name, root, manifest, Source(str(path), json_lines(text)))
    for component in ("commands", "agents", "skills", "hooks", "mcpServers"):
        plugin._paths(component)  # a path that leaves the plugin is refused at install
    return plugin


# ---- the registry: what is installed, where it is enabled ------------------------------------------------------
def load_registry() -> dict[str, dict[str, Any]]:
    path = registry_path()
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not readable JSON ({exc}); fix or delete it") from exc
    plugins = data.get("plugins") if isinstance(data, dict) else None
    return {k: v for k, v in plugins.items() if isinstance(v, dict)} if isinstance(plugins, dict) else {}


def save_registry(plugins: dict[str, dict[str, Any]]) -> None:
    path = registry_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"plugins": plugins}, indent=2)


def installed() -> list[tuple[Plugin | None, dict[str, Any], str]]:
    """(plugin or None when its folder is broken, its record, the problem) for every installed plugin."""
    out: list[tuple[Plugin | None, dict[str, Any], str]] = []
    for name, record in sorted(load_registry().items()):
        try:
            out.append((read_plugin(plugins_dir() / name), record, ""))
        except ConfigError as exc:
            out.append((None, {**record, "name": name}, str(exc)))
    return out


def enabled_plugins(workspace: Path, settings: dict[str, bool] | None = None) -> list[Plugin]:
    """The installed plugins on in `workspace`: `settings` (enabledPlugins, by name) decides when it names one,
    else the plugin's scope (every project, or the projects it was enabled for)."""
    where = os.path.realpath(workspace)
    out = []
    for plugin, record, _ in installed():
        if plugin is None:
            continue
        on = (settings or {}).get(plugin.name)
        if on is None:
            on = record.get("scope") == "user" or where in record.get("projects", [])
        if on:
            out.append(plugin)
    return out


def install(folder: Path, source: str, project: Path | None) -> Plugin:
    """Copy the plugin in `folder` into coder's plugins folder (replacing an earlier install of it) and record it:
    for every project, or only for `project`."""
    plugin = read_plugin(folder)
    _check_links(folder)
    target = plugins_dir() / plugin.name
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{plugin.name}."))
    shutil.copytree(folder, staging / "p", symlinks=True, ignore=shutil.ignore_patterns(".git"))
    if target.exists():
        shutil.rmtree(target)
    os.replace(staging / "p", target)
    shutil.rmtree(staging, ignore_errors=True)
    plugins = load_registry()
    record = plugins.get(plugin.name, {})
    projects = sorted(set(record.get("projects", [])) | ({os.path.realpath(project)} if project else set()))
    plugins[plugin.name] = {"source": source, "version": plugin.version,
                            "installed": datetime.now(UTC).isoformat(timespec="seconds"),
                            "scope": "project" if project and record.get("scope") != "user" else "user",
                            "projects": projects}
    save_registry(plugins)
    return read_plugin(target)


def remove(name: str) -> bool:
    plugins = load_registry()
    found = plugins.pop(name, None) is not None
    target = plugins_dir() / name
    if PLUGIN_NAME.match(name) and target.is_dir():
        shutil.rmtree(target)
        found = True
    save_registry(plugins)
    return found


def _check_links(folder: Path) -> None:
    """A plugin may hold symlinks only to its own files: one that leaves it would install somebody else's."""
    if folder.is_symlink():
        raise ConfigError(f"{folder}: the plugin's folder is a symlink ({os.readlink(folder)}); not installed")
    root = folder.resolve()
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink():
                target = path.resolve()
                if target != root and root not in target.parents:
                    raise ConfigError(f"{path}: a symlink out of the plugin ({os.readlink(path)}); not installed")
