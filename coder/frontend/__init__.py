"""What the frontends share, with no toolkit in it: how a call and its result read in one line (`calls`), the
permission question's view and its numbered choices (`approval`, `choices`), notifications (`notify`), the input
history (`history`), the workspace facts an input line completes from and the status bar shows (`workspace`), and
a session's options and stored events as the frontends open and replay them (`sessions`).

The Textual app (coder/tui), the plain REPL (coder/repl) and the ACP agent (coder/acp) each stand alone on top of
this package; none imports another frontend.
"""
