"""`coder acp`: coder as an Agent Client Protocol agent over stdio (issue 23), for editors such as Zed.

A frontend like the Textual app and the REPL: it opens sessions through `coder.engine.builder.open_session` (the
same engine, sandbox, policy and session store), turns the engine's typed events into ACP session updates
(`updates.py`), and answers the engine's permission questions by asking the client (`permission.py`). The JSON-RPC
itself is the maintained `agent-client-protocol` SDK's, never written by hand (`agent.py`, `cli.py`).
"""
