"""Claude Code's settings files, read for what coder honours of them: hooks, permission rules, enabled plugins.

- `~/.claude/settings.json`: the user's own, like coder's user config: its hooks run (on the host), its allow,
  ask and deny rules hold.
- `.claude/settings.json` and `.claude/settings.local.json` of the repository: read as the trust check read them
  (coder/trust/reader.py: the fingerprinted bytes). Their `ask` and `deny` rules always hold (they only narrow,
  like `.coder/permissions.json`); their hooks and `enabledPlugins` count only when the workspace is trusted; their
  `allow` rules never do, trusted or not: an allow rule is the user's to give, and a file in a cloned repository
  (the local one included: nothing proves the user wrote it) is somebody else's. They are reported, so the user
  can copy the ones they want into their own config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from coder.base.errors import ConfigError
from coder.config.programs import McpServer
from coder.ext.claude_hooks import ClaudeHook, parse_claude_hooks
from coder.ext.manifests import ClaudeSettingsFile, read_json
from coder.ext.plugins import Plugin, enabled_plugins
from coder.policy.claude_rules import translate
from coder.trust.claude import SETTINGS as REPO_SETTINGS
from coder.trust.reader import read_repo_file


def user_settings_path() -> Path:
    return Path.home() / ".claude" / "settings.json"


@dataclass
class ClaudeSettings:
    hooks: list[ClaudeHook] = field(default_factory=list)
    #: coder rules translated from the user's file, and the repository's narrowing ones
    allow: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    deny: list[str] = field(default_factory=list)
    #: plugin name (without `@marketplace`) -> on/off, the user's file first, then the trusted repository's
    enabled_plugins: dict[str, bool] = field(default_factory=dict)
    #: what the session says once: rules left out, events coder does not have, files that could not be read
    notes: list[str] = field(default_factory=list)
    #: the installed plugins on in this workspace (coder/ext/plugins.py); their hooks are in `hooks`
    plugins: list[Plugin] = field(default_factory=list)

    def plugin_folders(self, component: str) -> list[Path]:
        """Every enabled plugin's folders of `component` (commands, agents, skills)."""
        return [folder for plugin in self.plugins for folder in plugin.folders(component)]

    def plugin_servers(self) -> dict[str, McpServer]:
        """Every enabled plugin's MCP servers, by `PLUGIN-SERVER` name."""
        return {name: entry for plugin in self.plugins for name, entry in plugin.mcp_servers().items()}

    def permissions(self) -> dict[str, list[str]]:
        return {"allow": self.allow, "ask": self.ask, "deny": self.deny}


def _parse(data: bytes, source: str) -> ClaudeSettingsFile:
    return read_json(ClaudeSettingsFile, source, data)


def _rules(settings: ClaudeSettingsFile) -> dict[str, list[str]]:
    return {"allow": settings.permissions.allow, "ask": settings.permissions.ask, "deny": settings.permissions.deny}


def load_claude_settings(workspace: Path, trusted: bool, repo_files: dict[str, bytes]) -> ClaudeSettings:
    """What coder takes from Claude Code's settings for a session in `workspace` (see the module's docstring).
    A broken user file is a ConfigError (it is yours to fix, before the session starts); a broken repository
    file is reported and ignored."""
    out = ClaudeSettings()
    user = user_settings_path()
    if user.is_file():
        source = str(user).replace(str(Path.home()), "~", 1)
        table = _parse(user.read_bytes(), source)
        out.hooks += parse_claude_hooks(table.hooks, source, notes=out.notes)
        rules = translate(_rules(table), source, project_file=False)
        out.allow += rules.allow
        out.ask += rules.ask
        out.deny += rules.deny
        out.notes += rules.unmapped
        out.enabled_plugins.update(_plugins(table.enabledPlugins))
    for rel in REPO_SETTINGS:
        data = repo_files.get(rel)
        if data is None:
            continue
        try:
            table = _parse(data, rel)
            hooks = parse_claude_hooks(table.hooks, rel, repository=True, notes=out.notes) if trusted else []
        except ConfigError as exc:
            out.notes.append(f"{exc} The file is ignored.")
            continue
        out.hooks += hooks
        rules = translate(_rules(table), rel, project_file=True)
        out.ask += rules.ask
        out.deny += rules.deny
        out.notes += rules.unmapped
        if rules.allow:
            out.notes.append(f"{rel}: {len(rules.allow)} allow rule(s) not applied ({', '.join(rules.allow[:5])}"
                             f"{', ...' if len(rules.allow) > 5 else ''}): allow rules come only from your own "
                             "settings; copy the ones you want into [permissions] allow of your config")
        if trusted:
            out.enabled_plugins.update(_plugins(table.enabledPlugins))
    out.plugins = enabled_plugins(workspace, out.enabled_plugins)
    for plugin in out.plugins:
        out.hooks += plugin.hooks(out.notes)
    return out


def repo_settings_files(workspace: Path) -> dict[str, bytes]:
    """The repository's settings files read as the trust check reads them (for callers without its bytes)."""
    found = {rel: read_repo_file(workspace, rel) for rel in REPO_SETTINGS}
    return {rel: data for rel, data in found.items() if data is not None}


def _plugins(enabled: dict[str, bool]) -> dict[str, bool]:
    """`enabledPlugins` ({"name@marketplace": true}) by plugin name."""
    return {key.split("@", 1)[0]: value for key, value in enabled.items()}
