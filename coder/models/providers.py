"""The provider registry: every model provider is one `ProviderSpec` registered here, and nothing else in coder
names providers. Adding one is its module (a class implementing `ModelProvider` plus a `build(request)`
function) and one `register(ProviderSpec(...))` below: the `--model NAME:MODEL` prefix, which of the
`[providers.NAME]` keys it reads (each declared in coder/models/settings.py; coder/config checks every table against
these names at load), the environment variables that hold its key (shown by `coder doctor`, never their values),
pricing of prompt caching, and what the batch runner preloads.

The constructor is named as "module:function" and imported only when a session uses the provider: the SDKs are
the heaviest imports of all (`coder --help` must not pay for them), and the provider modules import the model
table and pricing, which read this registry, so a direct import would be a cycle.

Per-model facts (context windows, output limits, thinking, prices) are not here but in the model table
(coder/models/model_table.json), keyed by model family and naming the provider of each.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

#: sent when a base URL is configured but no key: local servers ignore it, and the SDKs refuse an empty key
PLACEHOLDER_KEY = "no-key-needed"
#: what a network provider's `[providers.X]` table may always set (retries, timeout, window)
NETWORK_KEYS = frozenset({"base_url", "max_retries", "retry_base_delay", "retry_max_delay", "context_window",
                          "timeout"})

DoctorLine = tuple[str, bool, str]  # (name, ok, detail), as `coder doctor` prints it


@dataclass(frozen=True)
class ProviderSpec:
    name: str  # the prefix of `--model NAME:MODEL` and the `[providers.NAME]` table
    constructor: str  # "module:function" taking a ProviderRequest and returning a ModelProvider
    usage: str  # how a model of it is written in messages: "anthropic:NAME"
    config_keys: frozenset[str] = NETWORK_KEYS
    key_vars: tuple[str, ...] = ()  # environment variables holding its API key (secrets: presence only)
    bare_prefixes: tuple[str, ...] = ()  # a model name starting so needs no prefix ("claude-...")
    default_model: str | None = None  # used when no model is configured but one of `key_vars` is set
    default_window: int = 32_768  # context window of a model the model table does not know
    window_from_table: bool = True  # False: the model "name" is no model id (a script's path)
    #: prompt-cache prices as factors of the input price, for table entries that give none (None: as input)
    cache_write_factor: float | None = None
    cache_read_factor: float | None = None
    preload: tuple[str, ...] = ()  # modules the batch runner's fork server imports ahead (the SDK)
    #: `coder doctor`'s lines for this provider; the default says whether each key variable is set
    doctor: Callable[[ProviderSpec], list[DoctorLine]] | None = None

    def doctor_lines(self) -> list[DoctorLine]:
        if self.doctor is not None:
            return self.doctor(self)
        return [(var, True, "set" if os.environ.get(var) else "not set") for var in self.key_vars]

    def matches(self, model: str) -> bool:
        """`model` (as typed: with or without a prefix) belongs to this provider."""
        return model.startswith((f"{self.name}:", *self.bare_prefixes))


PROVIDERS: dict[str, ProviderSpec] = {}


def register(spec: ProviderSpec) -> ProviderSpec:
    """Add a provider; a second registration of a name replaces the first (a test's double, a fork's variant)."""
    PROVIDERS[spec.name] = spec
    return spec


def provider_usages() -> str:
    """'anthropic:NAME, openai:NAME or scripted:PATH': every provider, for error messages."""
    usages = [spec.usage for spec in PROVIDERS.values()]
    return ", ".join(usages[:-1]) + f" or {usages[-1]}" if len(usages) > 1 else "".join(usages)


def split_provider(model: str) -> tuple[str | None, str]:
    """'openai:qwen2.5-coder:7b' -> ('openai', 'qwen2.5-coder:7b'); a model without a registered prefix -> (None,
    model) (a colon inside a model id such as 'qwen2.5-coder:7b' is not a provider)."""
    prefix, sep, rest = model.partition(":")
    return (prefix, rest) if sep and prefix in PROVIDERS else (None, model)


def preload_modules(model: str) -> tuple[str, ...]:
    """What the batch runner imports ahead for `model` (its provider's SDK and module)."""
    return next((spec.preload for spec in PROVIDERS.values() if spec.matches(model)), ())


def key_variables() -> dict[str, bool]:
    """Which providers' key variables are present (never their values)."""
    return {var: bool(os.environ.get(var)) for spec in PROVIDERS.values() for var in spec.key_vars}


# ------------------------------------------------------------------------------------- the built-in providers
register(ProviderSpec(
    "anthropic", "coder.models.anthropic_provider:build", "anthropic:NAME",
    config_keys=NETWORK_KEYS | {"count_tokens_api"}, key_vars=("ANTHROPIC_API_KEY",), bare_prefixes=("claude",),
    default_model="claude-sonnet-4-6", default_window=200_000, cache_write_factor=1.25, cache_read_factor=0.1,
    preload=("anthropic", "coder.models.anthropic_provider")))
register(ProviderSpec(
    "openai", "coder.models.openai_provider:build", "openai:NAME", key_vars=("OPENAI_API_KEY",),
    default_window=32_768, preload=("openai", "coder.models.openai_provider")))
register(ProviderSpec(
    "scripted", "coder.models.scripted:build", "scripted:PATH",
    config_keys=frozenset({"context_window", "price_as", "chunk_delay"}), default_window=200_000,
    window_from_table=False, preload=("coder.models.scripted",)))
