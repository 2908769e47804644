"""Slash commands, shared by the interactive frontends (the Textual app and the REPL).

A layer of its own between the frontends and the engine: commands use the session's public objects, and the
engine, which is the loop and its parts, never imports them. Entry points are in `slash.py`; kept empty here so
that completing a command name imports no more than it needs."""
