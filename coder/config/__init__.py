"""Configuration: every key declared once (`sections.py`), the layers (built-in, user, trusted repository,
environment, flags) checked and merged into one typed `Config` with the provenance of each value (`layers.py`).
Nothing outside this package reads a configuration file or a raw table. Kept free of imports: `coder --help` imports
`coder.config.modes`."""
