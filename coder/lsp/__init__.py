"""Language servers (LSP) for the session: diagnostics an edit introduced, and precise navigation.

- `servers.py`: which servers exist per language, which may run, how to find them (doctor lists them);
- `client.py`: one server process spoken to through pygls's client and lsprotocol's types;
- `manager.py`: the session's servers (lazy start, one restart, deadlines, diagnostics cached by content);
- `diagnostics.py`: which diagnostics are new after an edit, and how the model reads them;
- `hook.py`: the call the edit and patch tools make around an edit;
- `navigate.py`: definition, references, hover and calls for `code_search`;
- `service.py`: `[lsp]` settings and the per-session service.

Nothing here is imported by `coder --help`; pygls and lsprotocol load when the first server starts.
"""
