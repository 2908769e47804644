"""What may start a language server: the user's config only, a trusted workspace only, a scrubbed environment;
and without a server everything reads as before. Plus the second real server (jedi-language-server)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lsp_support import context, lsp_section, make_repo, need, only, server_env

from coder.base.errors import ConfigError
from coder.config.layers import load_config, settings
from coder.config.sections import Config
from coder.lsp.manager import LspManager
from coder.lsp.servers import doctor_lines
from coder.lsp.service import check_settings, manager_for
from coder.tools.registry import builtin_tools

EDIT = {"command": "str_replace", "path": "a.py", "old_str": "x = 1", "new_str": "x = undefined_name"}


def test_a_repository_cannot_name_a_server_command_only_turn_servers_off(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".coder/config.toml": "[lsp]\nwait = 99\nenabled = false\n"
                                         "[lsp.servers.evil]\ncommand = ['sh', '-c', 'touch /tmp/pwned']\n"
                                         "languages = ['python']\n"})
    config = load_config(repo, trusted=True)
    assert config.lsp.servers == {} and config.lsp.wait == 5.0 and config.lsp.enabled is False
    assert any("[lsp.servers] ignored" in line for line in config.ignored)
    assert any("[lsp] wait ignored" in line for line in config.ignored)
    assert config.origin("lsp.enabled").layer == "repository"


def test_untrusted_or_disabled_means_no_server_and_todays_output(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    for lsp, trusted in (({}, False), ({"enabled": False}, True)):
        ctx = context(repo, tmp_path, lsp, trusted=trusted)
        assert manager_for(ctx.services, ctx.config, repo) is None
        tool = builtin_tools(["str_replace_based_edit_tool"])["str_replace_based_edit_tool"]
        result = tool.run(tool.parse(EDIT), ctx)
        assert "diagnostics" not in result.data and "Diagnostics" not in result.output
        tool.run(tool.parse({"command": "undo_edit", "path": "a.py"}), ctx)
    search = builtin_tools(["code_search"])["code_search"]
    ctx = context(repo, tmp_path, {}, trusted=False)
    assert "answered by" not in search.run(search.parse({"query_type": "references", "query": "x"}), ctx).output
    hover = search.run(search.parse({"query_type": "hover", "query": "x"}), ctx)
    assert "no language server runs for it" in hover.output  # says who answered instead
    search.close()


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="severity"):
        settings({"lsp": {"severity": "fatal"}})
    with pytest.raises(ConfigError, match="wait"):
        settings({"lsp": {"wait": -1}})
    with pytest.raises(ConfigError, match="command"):
        LspManager(Path("/"), settings({"lsp": {"servers": {"mine": {"languages": ["python"]}}}}).lsp)
    assert settings({"lsp": {"severity": "warning"}}).lsp.severity == "warning"
    with pytest.raises(ConfigError, match=r"\[lsp.servers.mine\] is not a default server, so it needs command"):
        check_settings(settings({"lsp": {"servers": {"mine": {"command": ["x"]}}}}))  # what the builder calls


def test_servers_get_no_provider_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t0ken")
    env = LspManager(tmp_path).env()
    assert "ANTHROPIC_API_KEY" not in env and "MY_SERVICE_TOKEN" not in env
    assert env["PATH"]


def test_doctor_lists_servers_and_how_to_install_the_rest(tmp_path: Path) -> None:
    lines = {name.strip(): (ok, detail) for name, ok, detail in
             doctor_lines(_trusted(True))}
    assert lines["language servers"][1].startswith("on")
    assert "basedpyright-langserver" in lines["basedpyright"][1]
    assert "rust-analyzer" in lines and "enabled = true" in lines["rust-analyzer"][1]  # off: runs cargo
    # a missing or disabled server is not a failure, nor a pass: information (None)
    assert all(ok is not False for ok, _ in lines.values())
    assert lines["rust-analyzer"][0] is None and lines["basedpyright"][0] is True
    untrusted = dict((n.strip(), d) for n, _, d in doctor_lines(_trusted(False)))
    assert "not trusted" in untrusted["language servers"]


def _trusted(trusted: bool) -> Config:
    config = Config()
    config.trusted = trusted
    return config


def test_coder_doctor_prints_the_servers(tmp_path: Path) -> None:
    import subprocess

    out = subprocess.run([sys.executable, "-m", "coder", "doctor"], cwd=tmp_path, capture_output=True, text=True,
                         env={**server_env(tmp_path), "PYTHONPATH": str(Path(__file__).parents[2])}, timeout=60)
    assert "language servers" in out.stdout and "jedi-language-server" in out.stdout


def test_jedi_language_server_answers_navigation(tmp_path: Path) -> None:
    need("jedi-language-server", "pip install jedi-language-server (or pip install -e '.[dev]')")
    repo = make_repo(tmp_path / "repo", {"lib.py": "def helper(n):\n    return n * 2\n",
                                         "main.py": "from lib import helper\n\nprint(helper(2))\n"})
    manager = LspManager(repo, lsp_section(only("jedi-language-server")), env=server_env(tmp_path))
    ctx = context(repo, tmp_path, {"navigation_wait": 20}, manager=manager)
    search = builtin_tools(["code_search"])["code_search"]
    found = search.run(search.parse({"query_type": "definition", "query": "helper", "path": "main.py", "line": 3}), ctx)
    assert "lib.py:1" in found.output and "(answered by jedi-language-server)" in found.output
    refs = search.run(search.parse({"query_type": "references", "query": "helper"}), ctx)
    assert "main.py" in refs.output and "jedi-language-server" in refs.output
    search.close()
    assert manager.closed
