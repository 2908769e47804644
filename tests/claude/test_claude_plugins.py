"""Plugins in Claude Code's layout: installed with the real `coder plugin` command from a folder, an archive served
on loopback and a git repository; a session then has the plugin's skill, MCP server (a real one, started from
`${CLAUDE_PLUGIN_ROOT}`), command, agent and hook; `--project` and `enabledPlugins` decide where it is on."""

from __future__ import annotations

import http.server
import json
import shutil
import sys
import tarfile
import threading
from pathlib import Path

from claude_support import hook, open_on, texts_sent, write_json, write_script
from repo_support import git

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from cli_support import coder  # noqa: E402

from coder.commands.slash import all_commands  # noqa: E402

DEMO_SERVER = Path(__file__).resolve().parents[1] / "ext" / "mcp_demo_server.py"


def make_plugin(root: Path) -> Path:
    write_json(root / ".claude-plugin" / "plugin.json", {
        "name": "team-tools", "version": "1.2.0", "description": "Our team's helpers",
        "author": {"name": "Team"}, "commands": ["./extra/deploy.md"]})
    (root / "skills" / "release-notes").mkdir(parents=True)
    (root / "skills" / "release-notes" / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Write release notes from the git log.\n---\nRead `git log`.\n")
    (root / "commands").mkdir()
    (root / "commands" / "greet.md").write_text("---\ndescription: Greet someone\n---\nSay hello to $ARGUMENTS.\n")
    (root / "extra").mkdir()
    (root / "extra" / "deploy.md").write_text("Deploy the app.\n")
    (root / "agents").mkdir()
    (root / "agents" / "helper.md").write_text("---\nname: helper\ndescription: Helps.\ntools: Read\n---\nHelp.\n")
    shutil.copy(DEMO_SERVER, root / "server.py")
    write_json(root / ".mcp.json", {"mcpServers": {"demo": {
        "command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/server.py"]}}})
    write_json(root / "hooks" / "hooks.json", {"hooks": {"UserPromptSubmit": [
        hook("cat ${CLAUDE_PLUGIN_ROOT}/context.txt")]}})
    (root / "context.txt").write_text("The plugin says: deploys happen on Tuesdays.")
    return root


def test_an_installed_plugin_brings_its_skill_mcp_server_command_agent_and_hook(git_repo: Path,
                                                                              tmp_path: Path) -> None:
    plugin = make_plugin(tmp_path / "team-tools")
    done = coder("plugin", "install", str(plugin))
    assert done.returncode == 0, done.stderr
    assert "installed team-tools 1.2.0 for every project" in done.stdout
    assert "skills: release-notes" in done.stdout and "MCP server team-tools-demo:" in done.stdout
    assert "commands: deploy, greet" in done.stdout
    assert "hook UserPromptSubmit: cat ${CLAUDE_PLUGIN_ROOT}" in done.stdout
    listed = json.loads(coder("plugin", "list", "--json").stdout)["plugins"]
    assert [(p["name"], p["version"], p["scope"]) for p in listed] == [("team-tools", "1.2.0", "user")]
    shutil.rmtree(plugin)  # the installed copy is what runs

    model = write_script(tmp_path / "s.json", [
        {"tool_calls": [{"name": "tool_search", "input": {"query": "select:mcp__team-tools-demo__add"}}]},
        {"tool_calls": [{"name": "mcp__team-tools-demo__add", "input": {"a": 2, "b": 3}}]}, {"text": "5"}])
    opened, seen = open_on(git_repo, model)
    try:
        tools = opened.session.parts.tools
        assert {"mcp__team-tools-demo__add", "mcp__team-tools-demo__write_note"} <= set(tools)
        assert "release-notes" in opened.session.parts.tool_ctx.services["skills"].skills
        assert opened.agents.parent.agents["helper"].permission_mode == "plan"
        opened.session.send("add two and three")
        results = [e for e in seen if type(e).__name__ == "ToolCallFinished" and e.tool != "tool_search"]
        assert results and not results[0].is_error and results[0].output.strip() == "5"
        assert any("deploys happen on Tuesdays" in t for t in texts_sent(opened))
    finally:
        opened.finish("done")
    commands = all_commands(git_repo)
    assert commands["team-tools:greet"].custom.expand("Ana") == "Say hello to Ana."
    assert "greet" in commands and "team-tools:deploy" in commands

    removed = coder("plugin", "remove", "team-tools")
    assert removed.returncode == 0 and "removed team-tools" in removed.stdout
    assert json.loads(coder("plugin", "list", "--json").stdout)["plugins"] == []
    assert "team-tools:greet" not in all_commands(git_repo)


def test_install_from_an_archive_on_loopback_and_from_git(tmp_path: Path) -> None:
    plugin = make_plugin(tmp_path / "src" / "team-tools")
    archive = tmp_path / "serve" / "team-tools.tar.gz"
    archive.parent.mkdir()
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(plugin, arcname="team-tools-1.2.0")
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(archive.parent))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/team-tools.tar.gz"
        done = coder("plugin", "install", url)
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr
    assert "installed team-tools 1.2.0" in done.stdout
    assert json.loads(coder("plugin", "list", "--json").stdout)["plugins"][0]["source"] == url

    git(plugin, "init", "-q", "-b", "main")
    (plugin / "skills" / "release-notes" / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: From git.\n---\nv2\n")
    git(plugin, "add", "-A")
    git(plugin, "commit", "-q", "-m", "plugin")
    done = coder("plugin", "install", f"file://{plugin}")
    assert done.returncode == 0, done.stderr
    installed = Path.home() / ".local" / "share" / "coder" / "plugins" / "team-tools"
    assert "From git." in (installed / "skills" / "release-notes" / "SKILL.md").read_text()
    assert not (installed / ".git").exists()


def test_bad_plugins_are_refused_with_a_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    write_json(bad / ".claude-plugin" / "plugin.json", {"name": "Bad Name"})
    done = coder("plugin", "install", str(bad))
    assert done.returncode != 0 and "kebab-case" in done.stderr and "Traceback" not in done.stderr
    escaping = make_plugin(tmp_path / "escaping")
    (escaping / "leak").symlink_to("/etc")
    done = coder("plugin", "install", str(escaping))
    assert done.returncode != 0 and "a symlink out of the plugin" in done.stderr
    hostile = tmp_path / "hostile.tar.gz"
    with tarfile.open(hostile, "w:gz") as tf:
        info = tarfile.TarInfo("../../outside.txt")
        info.size = 0
        tf.addfile(info)
    done = coder("plugin", "install", str(hostile))
    assert done.returncode != 0 and not (tmp_path.parent / "outside.txt").exists()
    assert coder("plugin", "install", str(tmp_path / "nowhere")).returncode != 0


def test_project_scope_and_enabled_plugins(git_repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    plugin = make_plugin(tmp_path / "team-tools")
    assert coder("plugin", "install", str(plugin), "--project", "--cwd", str(git_repo)).returncode == 0
    assert "team-tools:greet" in all_commands(git_repo) and "team-tools:greet" not in all_commands(other)
    # a trusted repository's `enabledPlugins` turns an installed plugin off (or on) for itself
    write_json(git_repo / ".claude" / "settings.json", {"enabledPlugins": {"team-tools@our-market": False}})
    opened, _ = open_on(git_repo, write_script(tmp_path / "s.json", [{"text": "ok"}]))
    assert not any(name.startswith("mcp__team-tools") for name in opened.session.parts.tools)
    opened.finish("done")
    write_json(other / ".claude" / "settings.json", {"enabledPlugins": {"team-tools@our-market": True}})
    opened, _ = open_on(other, write_script(tmp_path / "s.json", [{"text": "ok"}]), trust=False)
    assert not any(name.startswith("mcp__team-tools") for name in opened.session.parts.tools)  # untrusted
    opened.finish("done")
