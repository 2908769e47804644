"""`coder plugin install SOURCE [--project] | list | remove NAME`: Claude Code plugins (coder/ext/plugins.py).

Installing prints what the plugin brings (commands, agents, skills, hooks with their commands, MCP servers with
their command lines) after copying it: a plugin is code the user chose, and its hooks and servers run with the
user's rights, so the user sees them once, plainly.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from coder.base.errors import UsageError
from coder.base.termsafe import inert_json, visible


def register(sub) -> None:
    p = sub.add_parser("plugin", help="Claude Code plugins: `coder plugin install PATH|URL`, `list`, `remove NAME`")
    p.add_argument("action", choices=("install", "list", "remove"))
    p.add_argument("target", nargs="?", help="install: a plugin folder, an archive, or a URL; remove: its name")
    p.add_argument("--project", action="store_true",
                   help="install: enable it only in this project (the repository of --cwd), not in every one")
    p.add_argument("--cwd", default=".", help="the project --project means (default: the current directory)")
    p.add_argument("--json", action="store_true", help="list: as JSON")
    p.set_defaults(func=plugin_command)


def plugin_command(args) -> int:
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.ext import plugins

    if args.action == "list":
        return _list(args.json)
    if not args.target:
        raise UsageError(f"coder plugin {args.action}: give a {'source' if args.action == 'install' else 'name'}.")
    if args.action == "remove":
        if not plugins.remove(args.target):
            raise UsageError(f"no plugin named {args.target!r} is installed (`coder plugin list`).")
        print(f"removed {args.target}")
        return 0
    return _install(args.target, args.project, Path(args.cwd))


def _install(source: str, project: bool, cwd: Path) -> int:
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.engine.builder import git_root
    from coder.ext.plugin_fetch import fetch
    from coder.ext.plugins import install

    workspace = None
    if project:
        start = cwd.expanduser().resolve()
        workspace = git_root(start) or start
    with tempfile.TemporaryDirectory(prefix="coder-plugin-") as work:
        folder = fetch(source, Path(work))
        plugin = install(folder, source, workspace)
    where = f"for {workspace}" if workspace else "for every project"
    print(visible(f"installed {plugin.name} {plugin.version} {where}: {plugin.description}"))
    for line in describe(plugin):
        print(visible(f"  {line}"))
    return 0


def describe(plugin) -> list[str]:
    """What a plugin brings, one line per component."""
    lines = []
    for component in ("commands", "agents"):
        names = sorted(p.stem for folder in plugin.folders(component)
                       for p in ([folder] if folder.is_file() else folder.rglob("*.md")))
        if names:
            lines.append(f"{component}: {', '.join(names)}")
    skills = sorted(p.parent.name for folder in plugin.folders("skills") for p in folder.glob("*/SKILL.md"))
    if skills:
        lines.append(f"skills: {', '.join(skills)}")
    notes: list[str] = []
    lines += [f"hook {h.event}: {h.command}" for h in plugin.hooks(notes)]
    lines += [f"MCP server {name}: {' '.join([server.command or server.url or '?', *server.args])}"
              for name, server in plugin.mcp_servers().items()]
    return lines + [f"! {n}" for n in notes]


def _list(as_json: bool) -> int:
    # start-up time: `coder --help` imports this module, and only this command needs it
    from coder.ext.plugins import installed

    rows = []
    for plugin, record, problem in installed():
        rows.append({"name": plugin.name if plugin else record.get("name"), "version": record.get("version", ""),
                     "scope": record.get("scope", "user"), "projects": record.get("projects", []),
                     "source": record.get("source", ""), "problem": problem,
                     "brings": describe(plugin) if plugin else []})
    if as_json:
        print(inert_json(json.dumps({"plugins": rows}, indent=2, ensure_ascii=False)))
        return 0
    if not rows:
        print("no plugins installed (`coder plugin install PATH|URL`)")
    for row in rows:
        scope = "every project" if row["scope"] == "user" else ", ".join(row["projects"])
        print(visible(f"{row['name']} {row['version']}  ({scope}; from {row['source']})"))
        for line in row["brings"] + ([f"! {row['problem']}"] if row["problem"] else []):
            print(visible(f"  {line}"))
    return 0
