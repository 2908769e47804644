"""Model selection: from `--model PROVIDER:NAME` / config / environment to a ready ModelProvider.

    anthropic:NAME   the Anthropic Messages API (ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL or
                     [providers.anthropic] base_url for a proxy or the fake server)
    openai:NAME      any OpenAI-compatible chat-completions server (OPENAI_BASE_URL or
                     [providers.openai] base_url, e.g. http://localhost:11434/v1; OPENAI_API_KEY when it needs one)
    scripted:PATH    a script file answered in-process (tests, offline demo, replays)
    claude-...       a bare Claude model name means anthropic:claude-...

Resolution: the spec argument (the `--model` flag, else the config's `model`, which CODER_MODEL sets); without
one but ANTHROPIC_API_KEY set, the default Claude model. Environment beats config for base URLs, as in
the config layering (defaults < files < env < flags). Provider modules are imported only here, on demand, so
`coder --help` never loads an SDK. The providers themselves are registered in providers.py.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass

from coder.base.errors import ModelConfigError
from coder.models.model_table import model_info
from coder.models.pricing import PriceTable
from coder.models.providers import PLACEHOLDER_KEY, PROVIDERS, ProviderSpec, provider_usages
from coder.models.retry import RetryPolicy
from coder.models.settings import ProviderSettings, UserPrice
from coder.models.types import ModelProvider

__all__ = ["DEFAULT_ANTHROPIC_MODEL", "NO_MODEL_MESSAGE", "PLACEHOLDER_KEY", "ProviderRequest", "create_provider",
           "resolve_spec"]

DEFAULT_ANTHROPIC_MODEL = PROVIDERS["anthropic"].default_model

NO_MODEL_MESSAGE = (
    "No model configured: set ANTHROPIC_API_KEY to use Claude, or choose a model with `--model PROVIDER:NAME` "
    "(anthropic:claude-sonnet-4-6, openai:NAME with OPENAI_BASE_URL for a local server, scripted:PATH for a "
    "script), or `model = \"...\"` in the config. `coder doctor` shows what is set."
)


@dataclass
class ProviderRequest:
    """What a provider's `build` gets: the model name (after the prefix), the whole spec for messages, its config
    table (checked at load), the price table, and the context window the model table gives (or the provider's
    default)."""

    spec: ProviderSpec
    name: str
    resolved: str
    section: ProviderSettings
    pricing: PriceTable
    table_window: int

    def context_window(self) -> int:
        """`context_window` of the config table, else the model table's, else the provider's default."""
        return self.section.context_window or self.table_window

    def base_url(self, env_var: str) -> str | None:
        """The environment beats the config for a base URL, as in the config layering (files < env < flags)."""
        return os.environ.get(env_var) or self.section.base_url

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(max_retries=self.section.max_retries, base_delay=self.section.retry_base_delay,
                           max_delay=self.section.retry_max_delay)

    def api_key(self, env_var: str, base_url: str | None, missing: str) -> str:
        """The key from `env_var`; without one, a placeholder when the requests go to a base URL of the user's
        own (a local server or the fake one needs none), else ModelConfigError(`missing`)."""
        key = os.environ.get(env_var)
        if key:
            return key
        if base_url:
            return PLACEHOLDER_KEY
        raise ModelConfigError(missing)


def _build(request: ProviderRequest) -> ModelProvider:
    module, _, function = request.spec.constructor.partition(":")
    return getattr(importlib.import_module(module), function)(request)


def resolve_spec(spec: str | None) -> str:
    """The model spec to use (the flag's, else the config's), or the default of a provider whose key is set;
    ModelConfigError when there is none."""
    raw = (spec or "").strip()
    if not raw:
        for provider in PROVIDERS.values():  # a provider whose key is set brings its default model
            if provider.default_model and any(os.environ.get(var) for var in provider.key_vars):
                return f"{provider.name}:{provider.default_model}"
        raise ModelConfigError(NO_MODEL_MESSAGE)
    prefix, sep, name = raw.partition(":")
    if not sep:
        for provider in PROVIDERS.values():
            if provider.bare_prefixes and raw.startswith(provider.bare_prefixes):
                return f"{provider.name}:{raw}"
        raise ModelConfigError(
            f"The model {raw!r} has no provider prefix. Use anthropic:NAME, openai:NAME (an OpenAI-compatible "
            f"server, e.g. `--model openai:{raw}` with OPENAI_BASE_URL) or scripted:PATH."
            + _others_than(("anthropic", "openai", "scripted"))
        )
    if prefix not in PROVIDERS:
        raise ModelConfigError(f"Unknown model provider {prefix!r} in {raw!r}: use {provider_usages()}.")
    if not name:
        raise ModelConfigError(f"The model spec {raw!r} names no model after {prefix!r}.")
    return raw


def _others_than(named: tuple[str, ...]) -> str:
    """The registered providers a message did not name (none for the built-ins)."""
    others = [spec.usage for spec in PROVIDERS.values() if spec.name not in named]
    return f" Also: {', '.join(others)}." if others else ""


def create_provider(spec: str | None, providers: Mapping[str, ProviderSettings] | None = None,
                    pricing: Mapping[str, UserPrice] | None = None) -> ModelProvider:
    """Build the provider for `spec` (the flag's, else the config's `model`) with its `[providers.NAME]` table and
    the user's `[pricing]`."""
    resolved = resolve_spec(spec)
    prefix, _, name = resolved.partition(":")
    provider = PROVIDERS[prefix]
    window = provider.default_window
    if provider.window_from_table:  # the model table (coder/models/model_table.json) knows the model's window
        info = model_info(name)
        window = info.context_window if info.known else window
    section = (providers or {}).get(prefix) or ProviderSettings()
    return _build(ProviderRequest(provider, name, resolved, section, PriceTable(pricing), window))

