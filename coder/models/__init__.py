"""Model providers and their test doubles.

- `types.py`: the provider-neutral conversation data and the ModelProvider protocol (shared interface).
- `registry.py`: `create_provider(spec, providers, pricing)`, the only entry point the engine uses.
- `settings.py`: the `[providers.NAME]` and `[pricing."MODEL"]` tables, declared like every config section.
- `providers.py`: the provider registry, one `ProviderSpec` per provider (prefix, constructor, config keys, key
  variables, doctor check); config, pricing, the model table and the doctor read it.
- `anthropic_provider.py`, `openai_provider.py`: the official SDKs, with one retry policy (`retry.py`).
- `scripted.py`, `script.py`: scripted answers in-process; the test kit's `coder_testkit/fake_server.py`
  (outside the package) serves the same scripts over HTTP
  (Anthropic Messages and OpenAI chat completions), with recording and fault injection.
- `wire.py`: request bodies, token estimates and prompt-cache arithmetic shared by all of the above.
- `pricing.py`: USD per million tokens, user-extensible.

Nothing here imports an SDK at module level, so importing this package costs nothing at startup.
"""
