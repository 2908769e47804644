"""The base every layer stands on: the error hierarchy, the typed events, XDG paths, packaged data (prompts, tool
contracts) and terminal-safe text. Nothing here imports anything else of coder."""
