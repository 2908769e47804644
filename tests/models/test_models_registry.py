"""Model selection and its errors: specs, config, environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coder.base.errors import EXIT_USAGE, ConfigError, ModelConfigError
from coder.config.layers import load_config, settings, user_config_path
from coder.models.anthropic_provider import AnthropicProvider
from coder.models.openai_provider import OpenAIProvider
from coder.models.registry import DEFAULT_ANTHROPIC_MODEL, create_provider, resolve_spec
from coder.models.scripted import ScriptedProvider
from coder.models.settings import ProviderSettings


def test_no_key_and_no_model_names_key_flag_and_doctor() -> None:
    with pytest.raises(ModelConfigError) as info:
        create_provider(None, {})
    message = str(info.value)
    assert "ANTHROPIC_API_KEY" in message and "--model" in message and "coder doctor" in message
    assert info.value.exit_code == EXIT_USAGE


def test_key_without_model_uses_the_default_claude(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    p = create_provider(None, {})
    assert isinstance(p, AnthropicProvider) and p.spec == f"anthropic:{DEFAULT_ANTHROPIC_MODEL}"
    assert p.context_window == 1_000_000  # the model table's window for claude-sonnet-4-6
    assert create_provider("anthropic:claude-haiku-4-5", {}).context_window == 200_000
    assert create_provider("anthropic:claude-future-9", {}).context_window == 200_000  # unknown: the old default


def test_resolution_order_flag_config_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    user_config_path().parent.mkdir(parents=True, exist_ok=True)
    user_config_path().write_text('model = "openai:from-config"\n')
    assert resolve_spec(load_config(tmp_path).model) == "openai:from-config"
    monkeypatch.setenv("CODER_MODEL", "anthropic:from-env")  # the environment is a layer over the files
    assert resolve_spec(load_config(tmp_path).model) == "anthropic:from-env"
    flag = load_config(tmp_path, {"model": "claude-opus-4-1"}).model
    assert resolve_spec(flag) == "anthropic:claude-opus-4-1"


@pytest.mark.parametrize(("spec", "needle"), [
    ("gemini:pro", "Unknown model provider 'gemini'"),
    ("gpt-4o", "has no provider prefix"),
    ("anthropic:", "names no model"),
])
def test_bad_specs(spec: str, needle: str) -> None:
    with pytest.raises(ModelConfigError, match=needle):
        create_provider(spec, {})


def test_anthropic_without_key_names_the_variable() -> None:
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        create_provider("anthropic:claude-sonnet-4-5", {})


def test_anthropic_base_url_without_key_is_allowed_and_env_beats_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    config = settings({"providers": {"anthropic": {"base_url": "http://127.0.0.1:8", "max_retries": 1,
                                                   "retry_base_delay": 0.5, "context_window": 1000,
                                                   "count_tokens_api": True}}})
    p = create_provider("anthropic:claude-haiku-4-5", config.providers)
    assert isinstance(p, AnthropicProvider)
    assert str(p._client.base_url).startswith("http://127.0.0.1:9")
    assert p.policy.max_retries == 1 and p.policy.base_delay == 0.5
    assert p.context_window == 1000 and p.count_tokens_api


def test_openai_needs_base_url_or_key() -> None:
    with pytest.raises(ModelConfigError, match="OPENAI_BASE_URL.*OPENAI_API_KEY"):
        create_provider("openai:qwen2.5-coder", {})


def test_openai_local_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    p = create_provider("openai:qwen2.5-coder:7b", {"openai": ProviderSettings(context_window=8192)})
    assert isinstance(p, OpenAIProvider) and p.model == "qwen2.5-coder:7b" and p.context_window == 8192


def test_scripted_spec_and_unreadable_script(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": [{"text": "hi"}]}))
    p = create_provider(f"scripted:{path}", {"scripted": ProviderSettings(price_as="claude-sonnet-4-5")})
    assert isinstance(p, ScriptedProvider) and p.spec == f"scripted:{path}"
    with pytest.raises(ModelConfigError, match="missing.json"):
        create_provider(f"scripted:{tmp_path / 'missing.json'}", {})


@pytest.mark.parametrize(("config", "needle"), [
    ({"providers": {"anthropic": {"max_retries": -1}}}, r"\[providers.anthropic\] max_retries = -1: must be at least"),
    ({"providers": {"anthropic": {"retry_base_delay": "fast"}}}, r"\[providers.anthropic\] retry_base_delay"),
    ({"providers": {"anthropic": {"count_tokens_api": "yes"}}}, r"\[providers.anthropic\] count_tokens_api"),
    ({"providers": {"anthropic": {"base_ur": "x"}}}, r"base_ur: unknown key \(did you mean base_url\?"),
    ({"providers": "x"}, r"providers = \"x\": expected a table"),
    ({"model": 3}, r"model = 3: expected a string"),
])
def test_config_errors_name_the_key(config: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):  # at load, whichever model the session would use
        settings(config)


def test_registry_import_does_not_load_the_sdks() -> None:
    import subprocess
    import sys

    code = ("import sys, coder.models.registry, coder_testkit.fake_server, coder.models.scripted; "
            "print([m for m in ('anthropic', 'openai', 'yaml') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout.strip()
    assert out == "[]"
