"""Evidence that a change works (issue 49): which commands verified the code after its last change, and how they
ended. `runners.py` the table of test runners and their output parsers, `commands.py` what one shell line runs
(a runner, the project's own test command, a script the model wrote), `record.py` the record a turn ends with,
`claims.py` success claims in the model's final message, `tracker.py` the bookkeeping over a session's events.
What "verified" means and what it does not prove: docs/verification.md."""
