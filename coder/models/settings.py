"""The `[providers.NAME]` and `[pricing."MODEL"]` tables of the configuration.

Declared here, not in coder/config/sections.py with the other sections, because coder.config reads the provider
registry (coder/models/providers.py: which names may have a table and which keys each takes), so the models
cannot import coder.config. Each key is one `setting`; a provider accepts the ones its `ProviderSpec.config_keys`
names (coder/config checks that at load, for every table, whichever model the session uses).
"""

from __future__ import annotations

from dataclasses import dataclass

from coder.base.settings import Repo, not_blank, setting


@dataclass
class ProviderSettings:
    """`[providers.NAME]`: how coder talks to one provider. Only your own config, the environment or flags may set
    these (a `base_url` from a repository would receive your API key)."""

    base_url: str | None = setting(None, doc="Send the requests here instead of the provider's API (a local or "
                                   "compatible server); the NAME_BASE_URL variable wins.", repo=Repo.NEVER,
                                   check=not_blank)
    max_retries: int = setting(4, doc="Retries of a request that failed for a reason worth retrying (overload, "
                               "rate limit, connection).", repo=Repo.NEVER, at_least=0)
    retry_base_delay: float = setting(1.0, doc="Seconds before the first retry; doubled each time.",
                                      repo=Repo.NEVER, at_least=0)
    retry_max_delay: float = setting(60.0, doc="The longest wait between two retries, in seconds.", repo=Repo.NEVER,
                                     at_least=0)
    context_window: int | None = setting(None, doc="The model's context window in tokens, for a model the model "
                                         "table does not know.", repo=Repo.NEVER, at_least=1)
    timeout: float = setting(600.0, doc="Seconds one request may take.", repo=Repo.NEVER, above=0)
    count_tokens_api: bool = setting(False, doc="Count the context with the provider's token-counting endpoint "
                                     "near a compaction decision.", repo=Repo.NEVER)
    price_as: str | None = setting(None, doc="A scripted model costs what this model would (for cost tests).",
                                   repo=Repo.NEVER, check=not_blank)
    chunk_delay: float = setting(0.0, doc="Seconds between the streamed chunks of a scripted model.",
                                 repo=Repo.NEVER, at_least=0)


@dataclass
class UserPrice:
    """`[pricing."MODEL"]`: a price for a model the built-in table lacks or prices differently, in USD per million
    tokens (a repository may not set it: a zero price would disarm `max_cost`)."""

    input: float = setting(doc="Input tokens.", repo=Repo.NEVER, at_least=0)
    output: float = setting(doc="Output tokens.", repo=Repo.NEVER, at_least=0)
    cache_write: float | None = setting(None, doc="Prompt-cache writes (default: 1.25 x input).", repo=Repo.NEVER,
                                        at_least=0)
    cache_read: float | None = setting(None, doc="Prompt-cache reads (default: 0.1 x input).", repo=Repo.NEVER,
                                       at_least=0)
