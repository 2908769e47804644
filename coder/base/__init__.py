"""The base every layer stands on: the error hierarchy, the typed events, XDG paths, packaged data (prompts, tool
contracts), terminal-safe text, the typed-setting declarations and atomic file writes. Nothing here imports anything
else of coder."""
