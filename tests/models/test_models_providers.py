"""Adding a model provider is one registration (issue 18): the `--model` prefix, the `[providers.NAME]` table, the
key variables `coder doctor` reports and the constructor all come from its `ProviderSpec`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder.base.errors import ConfigError, ModelConfigError
from coder.config.layers import load_config, settings, user_config_path
from coder.engine.doctor import run_checks
from coder.models.providers import PROVIDERS, ProviderSpec, preload_modules, register, split_provider
from coder.models.registry import create_provider, resolve_spec
from coder.models.settings import ProviderSettings


@pytest.fixture
def echo_provider(monkeypatch: pytest.MonkeyPatch) -> ProviderSpec:
    """A provider registered the way a new one would be (the constructor is the scripted provider's); the
    registry is restored after the test."""
    monkeypatch.setitem(PROVIDERS, "echo", PROVIDERS["scripted"])  # so that monkeypatch removes it afterwards
    return register(ProviderSpec("echo", "coder.models.scripted:build", "echo:PATH",
                                 config_keys=frozenset({"context_window", "price_as", "chunk_delay"}),
                                 key_vars=("ECHO_API_KEY",), window_from_table=False, default_window=4096,
                                 preload=("coder.models.scripted",)))


def test_one_registration_makes_a_provider(echo_provider: ProviderSpec, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "hi"}]}))
    assert resolve_spec(f"echo:{script}") == f"echo:{script}"
    provider = create_provider(f"echo:{script}", {"echo": ProviderSettings(context_window=1234)})
    assert provider.context_window == 1234
    with pytest.raises(ConfigError, match=r"\[providers.echo\] base_url: not a setting of the echo provider"):
        settings({"providers": {"echo": {"base_url": "http://x"}}})
    with pytest.raises(ModelConfigError, match="echo:PATH"):  # the unknown-prefix message lists it
        resolve_spec("nope:x")
    assert split_provider("echo:a:b") == ("echo", "a:b") and split_provider("qwen:7b") == (None, "qwen:7b")
    assert preload_modules("echo:x") == ("coder.models.scripted",)
    user = user_config_path()  # a repository may not set [providers]; the user's config may
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text("[providers.echo]\ncontext_window = 5\n")
    assert load_config(tmp_path).providers["echo"] == ProviderSettings(context_window=5)
    user.write_text("[providers.ecko]\ncontext_window = 5\n")
    with pytest.raises(ConfigError, match=r"config.toml:1: \[providers\] ecko: unknown provider \(did you mean echo"):
        load_config(tmp_path)
    user.unlink()
    monkeypatch.setenv("ECHO_API_KEY", "secret")
    lines = {c.name: c.detail for c in run_checks(tmp_path)}
    assert lines["ECHO_API_KEY"] == "set" and "secret" not in json.dumps(lines)


def test_the_builtin_providers_are_registered_once() -> None:
    assert list(PROVIDERS) == ["anthropic", "openai", "scripted"]
    assert PROVIDERS["anthropic"].key_vars == ("ANTHROPIC_API_KEY",)
    assert resolve_spec("claude-opus-4-1") == "anthropic:claude-opus-4-1"
