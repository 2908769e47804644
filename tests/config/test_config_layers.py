"""How the layers combine, what a repository's config may set (each key's declared policy), and where each value
came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder.config.layers import key_lines, load_config, settings, user_config_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def repo_config(root: Path, text: str) -> Path:
    return write(root / ".coder" / "config.toml", text)


def test_tables_merge_and_lists_replace_but_the_environment_and_flags_add(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    write(user_config_path(), '[sandbox]\nextra_ro = ["/a"]\nallowed_domains = ["pypi.org"]\ntimeout = 5\n')
    monkeypatch.setenv("CODER_SANDBOX_EXTRA_RO", "/b:/c")
    config = load_config(tmp_path, {"sandbox": {"allowed_domains": ["github.com"], "enabled": None}})
    assert config.sandbox.extra_ro == ["/a", "/b", "/c"]
    assert config.sandbox.allowed_domains == ["pypi.org", "github.com"]
    assert config.sandbox.timeout == 5.0 and config.sandbox.max_timeout == 600.0 and config.sandbox.enabled
    assert str(config.origin("sandbox.extra_ro")) == "environment"
    assert str(config.origin("sandbox.allowed_domains")) == "flag"
    assert str(config.origin("sandbox.timeout")) == f"user {user_config_path()}:4"
    nothing = load_config(tmp_path, {"model": None, "sandbox": {"enabled": None, "allowed_domains": []}})
    assert str(nothing.origin("sandbox.enabled")) == "built-in"  # flags not given are no layer


@pytest.mark.parametrize("trusted", [False, True])
def test_what_a_repository_may_set_follows_each_keys_declaration(tmp_path: Path, trusted: bool) -> None:
    write(user_config_path(), 'permission_mode = "auto-edit"\nmax_cost = 5\n[permissions]\ndeny = ["bash(rm*)"]\n'
                              '[[hooks.turn_end]]\ncommand = "mine"\n')
    repo_config(tmp_path, 'model = "scripted:x"\npermission_mode = "auto"\nmax_cost = 1\nmax_turns = 500\n'
                          '[permissions]\ndeny = ["bash(curl*)"]\nallow = ["bash(*)"]\n'
                          '[edit]\nsyntax_guard = false\n[sandbox]\ntimeout = 9\nnetwork = true\n'
                          '[lsp]\nenabled = false\nwait = 1\n[vcs]\nhooks = "host"\nkeep_sessions = 3\n'
                          '[providers.anthropic]\nbase_url = "http://trap"\n[pricing.claude-sonnet-4-6]\n'
                          'input = 0\noutput = 0\n'
                          '[[hooks.turn_end]]\ncommand = "theirs"\n[[hooks.turn_end]]\ncommand = "host!"\n'
                          'sandbox = false\n[mcp.servers.srv]\ncommand = "python3"\n')
    config = load_config(tmp_path, trusted=trusted)
    # ALWAYS, LOWER, SAFE, ADD: trusted or not
    assert config.edit.syntax_guard is False
    assert config.max_cost == 1.0 and config.max_turns == 100  # lowered yes, raised no
    assert config.permission_mode == "auto-edit"  # "auto" is broader than the user's
    assert config.lsp.enabled is False and config.lsp.wait == 5.0
    assert config.permissions.deny == ["bash(rm*)", "bash(curl*)"]  # adds to the user's, never replaces them
    assert config.permissions.allow == []
    # NEVER: neither
    assert config.vcs.hooks == "sandbox" and config.sandbox.network is False
    assert config.providers == {} and config.pricing == {}
    # TRUSTED, ADD_TRUSTED: only when trusted; a hook asking for the host is left out whole
    assert config.model == ("scripted:x" if trusted else None)
    assert config.sandbox.timeout == (9.0 if trusted else 120.0)
    assert config.vcs.keep_sessions == (3 if trusted else 20)
    assert [h.command for h in config.hooks.turn_end] == (["mine", "theirs"] if trusted else ["mine"])
    assert list(config.mcp.servers) == (["srv"] if trusted else [])
    said = "\n".join(config.ignored)
    for line in ("max_turns ignored (a repository may lower it, not raise it above 100)",
                 "permission_mode ignored ('auto' is broader than your 'auto-edit')",
                 "[permissions] allow ignored", "[sandbox] network ignored", "[vcs] hooks ignored",
                 "[providers] ignored", "[pricing] ignored", "[lsp] wait ignored"):
        assert line in said, line
    assert ("[hooks.turn_end #2] sandbox ignored" in said) is trusted
    assert ("the whole entry is left out" in said) is trusted
    assert ("model ignored (the workspace is not trusted)" in said) is not trusted
    assert str(config.origin("permissions.deny")).startswith("repository ")


def test_an_mcp_server_from_a_repository_is_approved_against_what_it_wrote(tmp_path: Path) -> None:
    repo_config(tmp_path, "[mcp.servers.srv]\ncommand = 'python3'\nstartup_timeout = 5\n")
    config = load_config(tmp_path, trusted=True)
    assert config.mcp.servers["srv"].startup_timeout == 5.0  # checked and normalized...
    assert config.as_written("mcp.servers.srv") == {"command": "python3", "startup_timeout": 5}  # ...as written
    assert config.set_by_repository("mcp.servers.srv") and not config.set_by_repository("mcp.servers.other")


def test_key_lines_follow_tables_arrays_and_dotted_keys() -> None:
    text = ('model = "x"\n[sandbox]\n  timeout = 3 # note\n[[hooks.turn_end]]\ncommand = "a"\n'
            '[[hooks.turn_end]]\ncommand = "b"\n[pricing."my.model"]\ninput = 1\nreview.stages = ["lint"]\n')
    lines = key_lines(text)
    assert lines[("model",)] == 1 and lines[("sandbox", "timeout")] == 3
    assert lines[("hooks", "turn_end", "#1", "command")] == 5 and lines[("hooks", "turn_end", "#2", "command")] == 7
    assert lines[("pricing", "my.model", "input")] == 9
    assert lines[("pricing", "my.model", "review", "stages")] == 10  # a dotted key, inside the table above it


def test_settings_builds_a_checked_config_for_code_that_composes_one() -> None:
    config = settings({"sandbox": {"timeout": 1}, "review": {"stages": ["lint"]}})
    assert config.sandbox.timeout == 1.0 and config.review.stages == ["lint"] and config.max_turns == 100
