"""coder's test kit: a loopback server that speaks the Anthropic Messages and OpenAI Chat Completions wire formats
(`fake_server.py`), its fault injection and canned answers, and the documented request rules it enforces
(`fake_rules/`, one rule per constraint with its source).

It is a test double, so it lives beside the product and not in it: the wheel holds `coder/` only, and the import
contracts (pyproject.toml, `testkit`) fail if anything in `coder/` imports this package. The suite and the
benchmarks use it; `python -m coder_testkit.fake_server` serves a script over HTTP from a checkout."""
