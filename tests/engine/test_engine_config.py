"""Layered configuration and AGENTS.md discovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder.base.errors import ConfigError
from coder.config.layers import load_config, user_config_path
from coder.context.instructions import discover


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_layers_override_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(user_config_path(), 'model = "user:m"\nmax_turns = 5\n[sandbox]\nnetwork = true\nextra_rw = ["/a"]\n')
    write(tmp_path / ".coder" / "config.toml", 'max_turns = 3\n[sandbox]\ntimeout = 9.0\n')
    config = load_config(tmp_path, trusted=True)
    assert config.model == "user:m" and config.max_turns == 3  # a repository may lower a limit
    sandbox = config.sandbox  # tables merge
    assert (sandbox.network, sandbox.extra_rw, sandbox.timeout, sandbox.max_timeout) == (True, ["/a"], 9.0, 600.0)
    assert str(config.origin("max_turns")) == f"repository {tmp_path / '.coder' / 'config.toml'}:1"
    assert str(config.origin("sandbox.network")) == f"user {user_config_path()}:4"
    assert str(config.origin("max_cost")) == "built-in"
    monkeypatch.setenv("CODER_MAX_TURNS", "9")
    assert load_config(tmp_path).max_turns == 9
    assert str(load_config(tmp_path).origin("max_turns")) == "environment"
    assert load_config(tmp_path, {"max_turns": 11, "model": None}).max_turns == 11
    assert load_config(tmp_path, {"max_turns": 11, "model": None}).model == "user:m"
    assert str(load_config(tmp_path, {"max_turns": 11}).origin("max_turns")) == "flag"


@pytest.mark.parametrize("text, expected", [
    ("max_turns = [", "not valid TOML"),
    ("colour = 'blue'", "colour: unknown key"),
    ("max_turns = 'ten'", 'max_turns = "ten": expected a whole number'),
    ("sandbox = 3", "sandbox = 3: expected a table ([sandbox])"),
    ("permission_mode = 'yolo'", 'permission_mode = "yolo": expected one of "plan", "ask", "auto-edit", "auto"'),
])
def test_bad_project_config_names_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path / ".coder" / "config.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(path) in str(info.value) and expected in str(info.value)
    assert info.value.exit_code == 2


def test_bad_env_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODER_MAX_COST", "cheap")
    with pytest.raises(ConfigError, match="CODER_MAX_COST"):
        load_config(tmp_path)
    monkeypatch.setenv("CODER_MAX_COST", "0")
    with pytest.raises(ConfigError, match=r"^environment CODER_MAX_COST: max_cost = 0.0: must be greater than 0$"):
        load_config(tmp_path)


def test_agents_md_root_to_cwd_closer_last(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "root rules")
    write(tmp_path / "pkg" / "CLAUDE.md", "pkg claude rules")
    write(tmp_path / "pkg" / "sub" / "AGENTS.md", "sub rules")
    write(tmp_path / "pkg" / "sub" / "CLAUDE.md", "ignored: AGENTS.md wins in this folder")
    found = discover(tmp_path, tmp_path / "pkg" / "sub")
    assert [p.name for p in found.files] == ["AGENTS.md", "CLAUDE.md", "AGENTS.md"]
    text = found.text
    assert text.index("root rules") < text.index("pkg claude rules") < text.index("sub rules")
    assert "ignored" not in text and not found.truncated


def test_agents_md_cap_with_note(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "x" * 5000)
    found = discover(tmp_path, tmp_path, max_bytes=1000)
    assert found.truncated and len(found.text) < 1300 and "cut" in found.text


def test_cwd_outside_root_reads_only_cwd(tmp_path: Path) -> None:
    write(tmp_path / "a" / "AGENTS.md", "a rules")
    write(tmp_path / "b" / "AGENTS.md", "b rules")
    found = discover(tmp_path / "a", tmp_path / "b")
    assert "b rules" in found.text and "a rules" not in found.text


@pytest.mark.parametrize("text, expected", [
    ("[permissions]\ndenny = ['bash(rm*)']\n", "[permissions] denny: unknown key (did you mean deny?"),
    ("[instructions]\nmax_byte = 5\n", "[instructions] max_byte: unknown key (did you mean max_bytes?"),
    ("[providers.antropic]\nmax_retries = 1\n", "[providers] antropic: unknown provider (did you mean anthropic?"),
    ("max_turns = 0\n", "max_turns = 0: must be greater than 0"),
    ("max_cost = -1\n", "max_cost = -1: must be greater than 0"),
])
def test_typos_inside_sections_and_impossible_limits(tmp_path: Path, text: str, expected: str) -> None:
    write(tmp_path / ".coder" / "config.toml", text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert expected in str(info.value) and "config.toml" in str(info.value)
