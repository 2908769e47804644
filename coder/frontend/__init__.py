"""What the two interactive frontends share, with no toolkit in it: how a call and its result read in one line
(`calls`), the numbered choices of a permission or trust question and how keys pick among them (`choices`),
notifications (`notify`), the input history (`history`), how plan decisions read (`work`), and the workspace facts
an input line completes from and the status bar shows (`workspace`).

The Textual app (coder/tui) and the plain REPL (coder/repl) each stand alone on top of this package; neither imports
the other. What they share with the ACP agent (coder/acp) sits lower: what a permission question shows
(coder/commands/approval.py), the session options (coder/engine/options.py) and a stored session's events
(coder/engine/history.py).
"""
