"""coder: a terminal coding agent.

Kept import-free on purpose: `coder --version` must start in a few tens of milliseconds.
"""

__version__ = "0.1.0"
