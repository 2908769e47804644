"""Model selection: from `--model PROVIDER:NAME` / config / environment to a ready ModelProvider.

    anthropic:NAME   the Anthropic Messages API (ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL or
                     [providers.anthropic] base_url for a proxy or the fake server)
    openai:NAME      any OpenAI-compatible chat-completions server (OPENAI_BASE_URL or
                     [providers.openai] base_url, e.g. http://localhost:11434/v1; OPENAI_API_KEY when it needs one)
    scripted:PATH    a script file answered in-process (tests, offline demo, replays)
    claude-...       a bare Claude model name means anthropic:claude-...

Resolution order: the spec argument (the `--model` flag), then config `model`, then env CODER_MODEL; with none
of them but ANTHROPIC_API_KEY set, the default Claude model. Environment beats config for base URLs, as in
the config layering (defaults < files < env < flags). Provider modules are imported only here, on demand, so
`coder --help` never loads an SDK.
"""

from __future__ import annotations

import os
from typing import Any

from coder.errors import ModelConfigError
from coder.models.model_table import model_info
from coder.models.pricing import PriceTable
from coder.models.retry import RetryPolicy
from coder.models.types import ModelProvider

DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-6"
CLAUDE_CONTEXT_WINDOW = 200_000  # scripted models, and Claude models the table does not know
DEFAULT_OPENAI_CONTEXT_WINDOW = 32_768  # an unknown OpenAI-compatible (often local) model
#: sent when a base URL is configured but no key: local servers ignore it, and the SDKs refuse an empty key
PLACEHOLDER_KEY = "no-key-needed"

_PROVIDER_KEYS = {
    "anthropic": {"base_url", "max_retries", "retry_base_delay", "retry_max_delay", "count_tokens_api",
                  "context_window", "timeout"},
    "openai": {"base_url", "max_retries", "retry_base_delay", "retry_max_delay", "context_window", "timeout"},
    "scripted": {"context_window", "price_as", "chunk_delay"},
}

NO_MODEL_MESSAGE = (
    "No model configured: set ANTHROPIC_API_KEY to use Claude, or choose a model with `--model PROVIDER:NAME` "
    "(anthropic:claude-sonnet-4-6, openai:NAME with OPENAI_BASE_URL for a local server, scripted:PATH for a "
    "script), or `model = \"...\"` in the config. `coder doctor` shows what is set."
)


def resolve_spec(spec: str | None, config: dict[str, Any]) -> str:
    """The model spec to use, after flag / config / env / default; ModelConfigError when there is none."""
    raw = spec or config.get("model") or os.environ.get("CODER_MODEL")
    if raw is not None and not isinstance(raw, str):
        raise ModelConfigError(f"Config key `model` must be a string like \"anthropic:NAME\", got {raw!r}.")
    raw = (raw or "").strip()
    if not raw:
        if os.environ.get("ANTHROPIC_API_KEY"):
            return f"anthropic:{DEFAULT_ANTHROPIC_MODEL}"
        raise ModelConfigError(NO_MODEL_MESSAGE)
    prefix, sep, name = raw.partition(":")
    if not sep:
        if raw.startswith("claude"):
            return f"anthropic:{raw}"
        raise ModelConfigError(
            f"The model {raw!r} has no provider prefix. Use anthropic:NAME, openai:NAME (an OpenAI-compatible "
            f"server, e.g. `--model openai:{raw}` with OPENAI_BASE_URL) or scripted:PATH."
        )
    if prefix not in _PROVIDER_KEYS:
        raise ModelConfigError(
            f"Unknown model provider {prefix!r} in {raw!r}: use anthropic:NAME, openai:NAME or scripted:PATH."
        )
    if not name:
        raise ModelConfigError(f"The model spec {raw!r} names no model after {prefix!r}.")
    return raw


def create_provider(spec: str | None, config: dict[str, Any]) -> ModelProvider:
    """Build the provider for `spec` (or the configured model) with its settings from `config`."""
    resolved = resolve_spec(spec, config)
    prefix, _, name = resolved.partition(":")
    section = _section(config, prefix)
    pricing = PriceTable(config)
    if prefix == "scripted":
        from coder.models.scripted import ScriptedProvider

        return ScriptedProvider(
            name, context_window=_int(section, prefix, "context_window", CLAUDE_CONTEXT_WINDOW, 1),
            pricing=pricing, price_as=_str(section, prefix, "price_as"),
            chunk_delay=_float(section, prefix, "chunk_delay", 0.0),
        )
    policy = RetryPolicy(
        max_retries=_int(section, prefix, "max_retries", 4, 0),
        base_delay=_float(section, prefix, "retry_base_delay", 1.0),
        max_delay=_float(section, prefix, "retry_max_delay", 60.0),
    )
    timeout = _float(section, prefix, "timeout", 600.0)
    if prefix == "anthropic":
        base_url = os.environ.get("ANTHROPIC_BASE_URL") or _str(section, prefix, "base_url")
        key = os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            if not base_url:
                raise ModelConfigError(
                    f"The model {resolved} needs ANTHROPIC_API_KEY (not set). Set it, or pick another model "
                    "with `--model` (e.g. openai:NAME with OPENAI_BASE_URL, scripted:PATH); `coder doctor` shows "
                    "what is set."
                )
            key = PLACEHOLDER_KEY
        from coder.models.anthropic_provider import AnthropicProvider

        return AnthropicProvider(
            name, api_key=key, base_url=base_url, policy=policy, pricing=pricing, timeout=timeout,
            count_tokens_api=_bool(section, prefix, "count_tokens_api", False),
            context_window=_int(section, prefix, "context_window", _window(name, CLAUDE_CONTEXT_WINDOW), 1),
        )
    base_url = os.environ.get("OPENAI_BASE_URL") or _str(section, prefix, "base_url")
    key = os.environ.get("OPENAI_API_KEY")
    if not key and not base_url:
        raise ModelConfigError(
            f"The model {resolved} needs OPENAI_BASE_URL (an OpenAI-compatible server such as vLLM, Ollama or "
            "llama.cpp, e.g. http://localhost:11434/v1) or OPENAI_API_KEY for api.openai.com; neither is set. "
            "`coder doctor` shows what is set."
        )
    from coder.models.openai_provider import OpenAIProvider

    window = _int(section, prefix, "context_window", _window(name, DEFAULT_OPENAI_CONTEXT_WINDOW), 1)
    return OpenAIProvider(name, api_key=key or PLACEHOLDER_KEY, base_url=base_url, policy=policy,
                          context_window=window, pricing=pricing, timeout=timeout)


def _window(model: str, default: int) -> int:
    """The model's context window from the model table (coder/models/model_table.json), else `default`."""
    info = model_info(model)
    return info.context_window if info.known else default


# ------------------------------------------------------------------------------------- config reading


def _section(config: dict[str, Any], prefix: str) -> dict[str, Any]:
    providers = config.get("providers") or {}
    if not isinstance(providers, dict):
        raise ModelConfigError("Config key `providers` must be a table ([providers.anthropic], ...).")
    section = providers.get(prefix) or {}
    if not isinstance(section, dict):
        raise ModelConfigError(f"Config key `providers.{prefix}` must be a table.")
    unknown = set(section) - _PROVIDER_KEYS[prefix]
    if unknown:
        raise ModelConfigError(f"Config [providers.{prefix}] has unknown keys {sorted(unknown)} "
                               f"(allowed: {', '.join(sorted(_PROVIDER_KEYS[prefix]))}).")
    return section


def _int(section: dict[str, Any], prefix: str, key: str, default: int, minimum: int) -> int:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ModelConfigError(f"Config key `providers.{prefix}.{key}` must be an integer >= {minimum}, "
                               f"got {value!r}.")
    return value


def _float(section: dict[str, Any], prefix: str, key: str, default: float) -> float:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ModelConfigError(f"Config key `providers.{prefix}.{key}` must be a number >= 0, got {value!r}.")
    return float(value)


def _bool(section: dict[str, Any], prefix: str, key: str, default: bool) -> bool:
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise ModelConfigError(f"Config key `providers.{prefix}.{key}` must be true or false, got {value!r}.")
    return value


def _str(section: dict[str, Any], prefix: str, key: str) -> str | None:
    value = section.get(key)
    if value is not None and (not isinstance(value, str) or not value):
        raise ModelConfigError(f"Config key `providers.{prefix}.{key}` must be a non-empty string, got {value!r}.")
    return value
