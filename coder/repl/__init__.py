"""The plain REPL (`coder --plain`; automatic for pipes and TERM=dumb): the same session, commands and questions as
the app, printed into the terminal's normal scrollback. It stands apart from the Textual app (coder/tui): what the
two share lives in coder/frontend."""
